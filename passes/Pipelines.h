//===- Pipelines.h - the compile pipeline as a library ----------*- C++ -*-===//
//
// The phases `cleave compile` runs between import and emission, as
// functions a tool or the planner calls: build the training step, then
// partition it for a layout (mesh, hints, preset, micro-batches, pipeline
// stages). Flags are the tools' business: these take parsed options and
// report bad input as llvm::Error (messages without a prefix; the caller
// adds its own) or, for errors at an op, as MLIR diagnostics (a
// DiagnosedError, already reported).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_PIPELINES_H
#define CLEAVE_PASSES_PIPELINES_H

#include "passes/Passes.h"
#include "passes/PipelineSchedule.h"
#include "passes/ShardingHints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::cleave {

/// The phases of compilation, in order. `cleave compile --compile-to=P`
/// stops after P and writes the IR (the C++ for Emit) to -o.
enum class CompilePhase {
  /// The imported model, one func per graph.
  Import,
  /// The training step: gradients, optimizer updates, clean-up.
  Train,
  /// A sharding on every value (hints applied and propagated).
  Distribute,
  /// The per-rank SPMD program with explicit collectives.
  Partition,
  /// Micro-batches unrolled and pipeline stages assigned: the program the
  /// emitter reads.
  Stages,
  /// The generated C++ or CUDA C++.
  Emit,
  /// The program, built by the C++ compiler (or nvcc).
  Binary,
};

/// The phase's name as `--compile-to` spells it ("import", ...).
StringRef compilePhaseName(CompilePhase phase);

/// Errors already reported as MLIR diagnostics (at the op they concern):
/// a caller prints nothing more for them, but may say which of its inputs
/// configured the pass that failed.
class DiagnosedError : public llvm::ErrorInfo<DiagnosedError> {
public:
  static char ID;
  explicit DiagnosedError(std::string pass = "") : pass(std::move(pass)) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;
  /// The argument of the pass that failed ("cleave-pipeline-stages"), or
  /// empty when the error came from elsewhere.
  std::string pass;
};

/// What the training step computes.
struct TrainingOptions {
  /// A forward-only program: no gradients, no optimizer.
  bool inference = false;
  /// The step will be split over a mesh: means over the batch become sums
  /// divided by the global count (cleave-decompose-means).
  bool distributed = false;
  /// Globs of parameters kept fixed.
  std::vector<std::string> freeze;
  /// cleave-apply-optimizer's options (PyTorch's SGD or AdamW).
  ApplyOptimizerPassOptions optimizer;
};

/// Adds the passes that turn the imported model into its training step
/// (cleave-expand-gradient, cleave-decompose-means when distributed,
/// cleave-autodiff, cleave-apply-optimizer, canonicalize, CSE).
void buildTrainingPipeline(OpPassManager &pm, const TrainingOptions &options);

/// Runs that pipeline on `module` and returns the step: the function with
/// the loss (with `inference`, the model's function). Fails on a pass error
/// (a DiagnosedError) or when there is no loss to train.
llvm::Expected<func::FuncOp> buildTrainingStep(ModuleOp module,
                                               const TrainingOptions &options);

/// A parallel layout: everything partitioning a step needs.
struct LayoutOptions {
  /// The devices (null: one rank, nothing to partition).
  MeshAttr mesh;
  /// The user's hints (from flags, files, the model's metadata), in order
  /// of increasing strength at equal priority; a preset's come first.
  std::vector<ShardingHint> hints;
  Strategy strategy = Strategy::None;
  /// Each rank's batch runs as this many micro-batches, gradients summed.
  int64_t microbatches = 1;
  /// The mesh axis whose coordinates are pipeline stages ("": none).
  std::string pipelineAxis;
  /// The order of the micro-batches' passes on each stage, and the chunks
  /// of layers per stage (the interleaved schedule).
  PipelineSchedule schedule = PipelineSchedule::GPipe;
  int64_t virtualStages = 1;
  /// The ONNX node names each later stage (or chunk) starts with, p x V - 1
  /// of them, in program order; empty: the cut by estimated work.
  std::vector<std::string> pipelineCuts;
  /// What the cut by estimated work weighs a byte crossing it as, in
  /// floating-point operations (cleave-pipeline-stages' link-balance;
  /// none: the pass's default).
  std::optional<double> pipelineLinkBalance;
  /// Cut the stages as a program of this many micro-batches of the same
  /// size would be (cleave-pipeline-stages' cut-microbatches; 0: its own
  /// count): the planner's two-micro-batch template of a longer step.
  int64_t pipelineCutMicrobatches = 0;
  /// Activations recomputed in the backward pass: "none", "full" or
  /// "selective" (cleave-recompute).
  std::string recompute = "none";
  /// The largest gradient all-reduce bucket, in MiB.
  double bucketMb = 25.0;
  /// Propagation reports every reshard it inserts (--print-sharding).
  bool reportReshards = false;
  /// Verify the IR after each pass. The planner's throwaway copies skip it
  /// (a fifth of a 175B search's time); compile verifies what it builds.
  bool verifyEachPass = true;
};

/// Checks a layout against the step it is for (`inference`): micro-batch
/// and bucket sizes, the pipeline axis, the micro-batch axis name. The
/// message says what to change.
llvm::Error validateLayout(const LayoutOptions &layout, bool inference);

/// Adds the passes that partition a training step for `layout`, up to
/// `last` (Distribute, Partition or Stages): cleave-number-dropouts,
/// cleave-recompute (unless "none"), then, where there is a mesh or more
/// than one micro-batch, cleave-apply-sharding-hints (the preset's hints,
/// then the user's), cleave-propagate-sharding, cleave-partition and CSE,
/// cleave-unroll-microbatches and cleave-pipeline-stages.
void buildLayoutPipeline(OpPassManager &pm, const LayoutOptions &layout,
                         CompilePhase last = CompilePhase::Stages);

/// Runs that pipeline on the training step `step` of `module`.
/// `onPropagated` runs once every value has its sharding (for
/// --print-sharding). A layout with one rank, one micro-batch and no
/// recomputation leaves the step as it is. Fails with a DiagnosedError
/// naming the failed pass.
llvm::Error partitionForLayout(
    ModuleOp module, func::FuncOp step, const LayoutOptions &layout,
    CompilePhase last = CompilePhase::Stages,
    llvm::function_ref<void(func::FuncOp)> onPropagated = {});

/// Registers the pipelines with cleave-opt: `cleave-training` (the
/// training step with the default optimizer), `cleave-layout{mesh=...
/// strategy=... hints=... microbatches=... pipeline=... schedule=...
/// virtual-stages=... pipeline-cuts=... recompute=... bucket-mb=... compile-to=...}` (a
/// trained step partitioned) and `cleave-compile{...}` (both, with
/// `optimizer`, `lr`, `freeze` and `inference` as well): the phases of
/// `cleave compile --compile-to=...`.
void registerCleavePipelines();

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_PIPELINES_H
