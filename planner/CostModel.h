//===- CostModel.h - predicted step time, memory and traffic ----*- C++ -*-===//
//
// Predicts one training step of a partitioned program (the module after
// partitionForLayout, its last phase: micro-batches unrolled, pipeline
// stages assigned) on a cluster:
//  - compute: each op's roofline time, max(flops / (peak * efficiency),
//    bytes / (memory bandwidth * efficiency)), the peak of the op's
//    precision for matrix products and fp32's for the rest;
//  - communication: each collective's bytes per rank, the numbers
//    `cleave compile --print-comm` reports (bytesSentBy), timed as
//    steps * latency + bytes / (bandwidth * efficiency) on the link its
//    group crosses (the intra-node link when the group's ranks share a
//    node; ranks map to the mesh row-major, nodes take consecutive ranks);
//    all-reduces start where the program starts them and are waited for
//    at their first use, overlapping the ops in between (the gradient
//    buckets and the rest of the backward pass), other collectives block;
//  - pipeline stages (GPipe): the slowest stage's time stretched by
//    (m + p - 1) / m, the bubble being (p - 1) / (m + p - 1) of the step;
//  - memory: per rank, the parameters and state it holds plus the static
//    memory plan's scratch arena of the emitted program: the two numbers
//    the program's --print-memory reports.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_COSTMODEL_H
#define CLEAVE_PLANNER_COSTMODEL_H

#include "planner/Cluster.h"

#include "codegen/ProgramEmitter.h"
#include "passes/CommunicationPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace cleave::planner {

/// One pipeline stage's memory on each of its ranks (all ranks of a stage
/// hold blocks of the same sizes), in bytes: the parts of --print-memory's
/// numbers. Parameters and optimizer state are what the rank holds;
/// gradients are the buffers holding parameter gradients live at the
/// scratch arena's peak, activations the rest of the arena; workspace is
/// what kernels and collectives hold beside the plan
/// (Prediction::workspaceBytes), collectiveBuffers the collectives' part of
/// it, and collectiveStaging the part of that in the ops' own staging
/// buffers (which grows with the ops, where the rest is a largest need);
/// inputs what the step's inputs hold beside the plan (InputMemory.h), and
/// graphInputs the part of it the graph's inputs hold (the rest is the
/// step counter's), which grows with the batch; blasPacking OpenBLAS's
/// packing buffers on the cpu target (cpuBlasPackingBytes); libraries what
/// the libraries keep for themselves on the cpu target: MPI's lists and
/// fragments (Cluster::commLibraryBytes, where more than one rank runs) and
/// oneDNN's primitives (Cluster::oneDnnPrimitiveBytes each,
/// cpuOneDnnPrimitives).
struct StageMemory {
  int64_t parameters = 0, optimizerState = 0, gradients = 0, activations = 0,
          workspace = 0, collectiveBuffers = 0, collectiveStaging = 0,
          inputs = 0, graphInputs = 0, blasPacking = 0, libraries = 0;

  /// Everything a rank of the stage holds, as the fit counts it.
  int64_t total() const {
    return parameters + optimizerState + gradients + activations + workspace +
           inputs + blasPacking + libraries;
  }
};

/// A span of one stage's predicted timeline: a micro-batch's forward or
/// backward pass (kind "forward", "backward", "forward+backward"), the
/// optimizer's updates ("update"), other compute ("other"), or a
/// collective (its op name: "all_reduce", "send_recv", ...).
struct ScheduleSlice {
  int64_t stage = 0;
  /// The micro-batch, -1 when the ops are not a micro-batch's.
  int64_t microbatch = -1;
  std::string kind;
  double startMs = 0, endMs = 0;
};

/// One ONNX node's predicted time per step on one stage's first rank: its
/// ops and collectives, found by the name they carry (the node's; its
/// backward ops' with "/grad"), which is what `--trace` names its events.
struct NodeTime {
  int64_t stage = 0;
  std::string name;
  int64_t ops = 0;
  double ms = 0;
};

/// The collectives of one stage's ranks per step, by kind and axes.
struct CollectiveGroup {
  int64_t stage = 0;
  std::string kind, axes;
  int64_t count = 0, bytes = 0;
  double ms = 0;
};

/// A parameter or state tensor as one rank holds it.
struct HeldTensor {
  std::string name;
  /// "parameter" or "state".
  std::string role;
  /// Its sharding ("[dp,_]"; "" when whole) and pipeline stage (-1: every
  /// stage).
  std::string sharding;
  int64_t stage = -1;
  /// The block one rank holds.
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};

/// One pipeline stage's share of a step split into micro-batches (one
/// entry without stages), what rollPrediction (planner/RolledStep.h)
/// stretches to more micro-batches: the stage's busy time (compute and
/// communication not hidden), compute and floating-point operations in all
/// and those of its micro-batches' ops (the copies
/// cleave-unroll-microbatches makes; the rest runs once a step: the
/// optimizer, the gradient reductions after accumulation, ZeRO-3's
/// gathers); the bytes one micro-batch's forward pass keeps for its
/// backward pass on the stage (values of micro-batch 0's forward ops read
/// by its backward ops), and those the micro-batches hand to the ops run
/// once (their accumulated gradients); whether most of what micro-batch
/// 1 keeps for its backward pass is made before micro-batch 0's backward
/// pass ends there (the unrolled order keeps several micro-batches'
/// activations at once).
struct StageShare {
  double busyMs = 0, computeMs = 0, flops = 0;
  double microbatchBusyMs = 0, microbatchComputeMs = 0, microbatchFlops = 0;
  /// The hand-overs (send_recv between stages) in busyMs: as the stage's
  /// clock runs them (a receiver's hand-off only, its wait for the message
  /// not counted), and those it sends (whole); each for micro-batches'
  /// too (pipelineStepMs).
  double handOverMs = 0, sentHandOverMs = 0;
  double microbatchHandOverMs = 0, microbatchSentHandOverMs = 0;
  int64_t stashedBytes = 0, handedOnBytes = 0;
  bool microbatchesOverlap = false;
};

struct Prediction {
  /// Whether this is rollPrediction's estimate (from the step partitioned
  /// with two micro-batches of the same size) rather than the partitioned
  /// step's own numbers.
  bool estimated = false;
  /// Where the estimate comes from the same layout on the model cut down to
  /// fewer of its identical layers (LayerRolledStep.h): the layers of its
  /// templates (none for another prediction), their stages, and the
  /// model's layers.
  std::vector<int64_t> layerTemplateLayers;
  int64_t layerTemplateStages = 0, modelLayers = 0;
  /// The step (pipelineStepMs) as the critical stage's compute, its
  /// communication not hidden behind compute, and the rest of the step it
  /// waits (the pipeline bubble); step = their sum.
  double computeMs = 0, exposedCommMs = 0, bubbleMs = 0, stepMs = 0;
  double bubbleFraction = 0;
  /// The most compute time of any stage (a lower bound on the step of the
  /// same layout with more micro-batches: splitting an op never makes
  /// its roofline time smaller).
  double maxStageComputeMs = 0;
  /// Floating-point operations per step of the busiest rank.
  double flopsPerRank = 0;
  /// The rank holding the most (peak: parameters and state plus scratch
  /// of its own stage), and the most of each part any stage holds.
  int64_t peakBytesPerRank = 0, persistentBytes = 0, scratchBytes = 0;
  /// The memory kernels and collectives hold besides the plan, on the
  /// stage that holds the most: the cuda target's kernel scratch region in
  /// the device block (kernelScratchBytes), the cpu target's kernel
  /// workspaces (cpuKernelWorkspaceBytes) and collective buffers
  /// (collectiveBufferBytes, also apart in collectiveBufferBytes). Not in
  /// --print-memory's numbers; counted when checking the fit.
  int64_t workspaceBytes = 0, collectiveBufferBytes = 0;
  /// The step's inputs on the stage that holds the most for them
  /// (StageMemory::inputs): not in --print-memory's numbers either.
  int64_t inputBytes = 0;
  /// OpenBLAS's packing buffers on the stage that holds the most for them
  /// (StageMemory::blasPacking; 0 where the cluster does not know the
  /// blocking): not in --print-memory's numbers.
  int64_t blasPackingBytes = 0;
  /// What the libraries keep for themselves on the stage that needs most
  /// for it (StageMemory::libraries): not in --print-memory's numbers.
  int64_t libraryBytes = 0;
  /// What the fit counts: the most any rank holds with its workspaces,
  /// inputs, BLAS packing and libraries' own memory (each rank its own
  /// stage's).
  int64_t neededBytesPerRank = 0;
  /// The most bytes any rank sends per step, over all collectives.
  int64_t commBytesPerRank = 0;
  std::vector<mlir::cleave::BytesByKind> bytesSent;
  /// Per stage, its share of the step (see StageShare); per rank, the
  /// bytes the collectives of micro-batches' ops send (in bytesSent too).
  std::vector<StageShare> stageShares;
  /// Ops of the partitioned step, and those of its micro-batches.
  int64_t ops = 0, microbatchOps = 0;
  std::vector<mlir::cleave::BytesByKind> microbatchBytesSent;
  /// For `cleave report`: memory per stage (one entry without stages),
  /// the step's timeline simulated in program order (each stage's ops in
  /// turn, a send_recv starting once both its stages reach it), the
  /// collectives, and the tensors each rank holds.
  std::vector<StageMemory> stageMemory;
  std::vector<ScheduleSlice> schedule;
  /// Each node's time, by stage and decreasing time: only where
  /// predictStep was asked for them (`cleave plan --node-times`).
  std::vector<NodeTime> nodeTimes;
  std::vector<CollectiveGroup> collectives;
  std::vector<HeldTensor> tensors;

  /// The stage whose parameters, state and scratch make peakBytesPerRank.
  int64_t peakStage = 0;

  /// Sets persistentBytes, scratchBytes, peakBytesPerRank and peakStage
  /// from stageMemory: each rank allocates its own stage's scratch, so the
  /// peak is the largest stage's sum, not the sum of the largest parts;
  /// workspaceBytes and collectiveBufferBytes, the largest stage's,
  /// inputBytes, blasPackingBytes and libraryBytes the largest, and
  /// neededBytesPerRank.
  void setMemoryFromStages();
};

/// The precision a step is predicted in. The compiler builds fp32
/// programs; Bf16 predicts the same program run in Megatron-LM's mixed
/// precision (16-bit activations, gradients and parameter copies, fp32
/// master weights and optimizer state): see predictStep.
enum class Precision { Fp32, Bf16 };

/// "fp32" or "bf16"; parsePrecision is its inverse.
llvm::StringRef precisionName(Precision precision);
std::optional<Precision> parsePrecision(llvm::StringRef name);

/// Predicts `step`, partitioned for its module's mesh (none: one rank),
/// split into `microbatches` (run through `virtualStages` chunks of layers
/// per pipeline stage), compiled for `target`. The memory is the emitter's
/// plan, planned without writing the program (checkEmits does that).
/// In bf16 (`precision`), matrix products run at the bf16 peak, every
/// tensor the program reads, writes, holds in scratch or sends takes 2
/// bytes an element instead of 4, and each parameter element is held
/// twice: a 16-bit copy (2 bytes, `parameters`) and an fp32 master (4
/// bytes, counted with the optimizer state and split as it is). With
/// AdamW that is 2 + 4 + 8 (two fp32 moments) bytes held and 2 of
/// gradient per parameter: the 16 bytes of mixed-precision Adam in the
/// ZeRO paper (Rajbhandari et al. 2020, section 3.1). With `nodeTimes`
/// the prediction also holds each node's time (Prediction::nodeTimes).
llvm::Expected<Prediction>
predictStep(mlir::func::FuncOp step, const Cluster &cluster,
            int64_t microbatches, int64_t virtualStages,
            mlir::cleave::Target target, Precision precision = Precision::Fp32,
            bool nodeTimes = false);

/// Whether the emitter builds `step` for `target`: writes the program's
/// source and drops it. Fails with a DiagnosedError (the emitter's
/// diagnostics are reported) when it cannot.
llvm::Error checkEmits(mlir::func::FuncOp step, mlir::cleave::Target target);

/// A pipelined step from its stages' shares (busy time of each stage's
/// ops and collectives for all `microbatches`, through `virtualStages`
/// chunks, and the hand-overs in it): the stage k that makes it longest
/// is busy throughout, and around it the pipeline fills and drains
/// through 1/(mV) of every other stage's work and of the hand-overs not in
/// k's busy time:
///
///   step = max_k busy_k + (sum_{s != k} (busy_s - handOver_s)
///                          + sum_s sentHandOver_s - handOver_k) / (m V)
///
/// With equal stages and no hand-overs, busy x (mV + p - 1) / (mV), the
/// classic bubble (pipelineBubble); without micro-batches (m = V = 1) the
/// stages run one after another: every stage's work plus every hand-over
/// once, whatever k (the busiest is reported). Unequal stages no longer
/// pay the slowest one's time for every other stage's turn (the 25M-weight
/// MLP's pp=2 with one micro-batch, stages busy 119 and 27 ms, was
/// predicted 238 ms). `critical`: k.
double pipelineStepMs(llvm::ArrayRef<StageShare> stages, int64_t microbatches,
                      int64_t virtualStages, size_t *critical = nullptr);

/// The share of a pipelined step its stages wait, with equal stages: (p - 1) / (m V + p - 1)
/// for p stages, m micro-batches and V chunks per stage (GPipe and 1F1B:
/// V = 1; the interleaved schedule's V times smaller fill and drain).
double pipelineBubble(int64_t stages, int64_t microbatches,
                      int64_t virtualStages);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_COSTMODEL_H
