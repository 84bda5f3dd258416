//===- Planner.h - search over parallel layouts -----------------*- C++ -*-===//
//
// Enumerates the layouts the compiler can build for a device count
// (every dp x tp x pp factorisation with tp inside a node; ZeRO stages
// 0-3 on data parallelism, alone or inside Megatron's tensor split;
// Megatron tensor parallelism where the model's
// blocks match the preset; GPipe stages; micro-batch counts), partitions
// the training step for each with partitionForLayout, predicts it with
// the cost model and ranks the plans that fit device memory. A plan is
// nothing but `cleave compile` flags.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_PLANNER_H
#define CLEAVE_PLANNER_PLANNER_H

#include "planner/Cluster.h"
#include "planner/CostModel.h"
#include "planner/IntraOpIlp.h"
#include "planner/RepeatedLayers.h"

#include "passes/Pipelines.h"
#include "passes/ShardingHints.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cleave::planner {

/// One layout: a mesh and the flags that split the step over it.
struct PlanLayout {
  /// Axis name and size, major to minor ("" mesh: one rank).
  std::vector<std::pair<std::string, int64_t>> mesh;
  mlir::cleave::Strategy strategy = mlir::cleave::Strategy::None;
  std::string pipelineAxis;
  mlir::cleave::PipelineSchedule schedule = mlir::cleave::PipelineSchedule::GPipe;
  int64_t virtualStages = 1;
  int64_t microbatches = 1;
  /// Activation recomputation: "none", "selective" or "full".
  std::string recompute = "none";
  /// The largest gradient all-reduce bucket in MiB (--bucket-mb); 0: the
  /// search's (SearchOptions::bucketMb).
  double bucketMb = 0;
  /// The tensor axis' shardings from the intra-op ILP (IntraOpIlp.h), when
  /// no preset splits it: its hints join the flags as --shard.
  std::optional<IntraOpPlan> intraOp;
  /// The ONNX nodes each later stage (or chunk) starts with, the user's
  /// --pipeline-cuts; empty: cut by estimated work. (The search does not
  /// cut by hand; a given layout may.)
  std::vector<std::string> pipelineCuts;
  /// What the stage cut weighs a byte crossing it as (--pipeline-link-
  /// balance): the search sets it from the cluster's link between stages
  /// (Cluster::operationsPerByteSent); none: compile's default.
  std::optional<double> pipelineLinkBalance;
  /// A two-micro-batch template's: the micro-batch count of the layout it
  /// stands for, whose stage cut it takes (0: its own; not a flag).
  int64_t cutMicrobatches = 0;

  std::string meshText() const;
  int64_t ranks() const;
  int64_t axisSize(llvm::StringRef name) const;
  /// Whether the groups along `axis` span several nodes of
  /// `devicesPerNode` (ranks are the mesh coordinates row-major).
  bool crossesNodes(llvm::StringRef axis, int64_t devicesPerNode) const;
  /// `cleave compile` flags that build this layout (without the model's).
  std::vector<std::string> flags() const;
  /// The strategy column: the preset's name, or "ilp".
  std::string strategyLabel() const;
  /// What each axis does, for people ("dp=4: data parallel, ZeRO-2").
  std::string describeAxis(llvm::StringRef axis) const;
  /// The layout in a few words: "pp=2,dp=4 dp mb=4", "(one rank)".
  std::string summary() const;
  /// Stable text of the whole layout (cache key, tie-breaker).
  std::string key() const;
};

/// Bytes for people: "1.50 GiB", "12.0 KiB", "100 B".
std::string formatBytes(int64_t bytes);

struct Candidate {
  PlanLayout layout;
  std::optional<Prediction> prediction;
  /// Why the layout is not a plan ("" for a plan).
  std::string rejected;
  /// Rejected only because another layout builds the same program (listed
  /// after the other rejected layouts).
  bool sameProgram = false;
  /// For axes, whether their collectives cross nodes.
  std::map<std::string, bool> interNode;
  /// What each recomputation mode tried needed: bounds the same layout
  /// with more micro-batches, which may need less recomputation than this
  /// one did.
  struct RecomputeTrial {
    /// Scratch with the workspaces (kernels' and collectives').
    int64_t scratchBytes = 0;
    /// The stages' mean compute (ms): what a pipeline's step is at least
    /// (mV + p - 1) / (mV) of, however unequal its stages.
    double meanStageComputeMs = 0;
    std::vector<StageMemory> stageMemory;
    /// Per stage, the activations a micro-batch stashes for its backward
    /// pass (StageShare::stashedBytes).
    std::vector<int64_t> stashedBytes;
    /// What the mode's prediction needs per rank (peak and workspace), and
    /// its step (ms).
    int64_t neededBytes = 0;
    double stepMs = 0;
  };
  std::map<std::string, RecomputeTrial> trials;
};

struct SearchOptions {
  Cluster cluster;
  int64_t ranks = 1;
  int64_t globalBatch = 1;
  mlir::cleave::Target target = mlir::cleave::Target::Cuda;
  /// The largest micro-batch count tried; 0: 16, and 8 per stage for a
  /// pipeline of more than 2 stages (Megatron-LM's runs keep 3-24
  /// micro-batches per stage in flight to shrink the bubble).
  int64_t maxMicrobatches = 0;
  /// How many of the fastest plans must be exact: a layout with more
  /// micro-batches is not partitioned when a lower bound on its step
  /// (its one-micro-batch sibling's busiest stage's compute, stretched by
  /// its bubble) is no faster than this many plans already found, or when
  /// the sibling's parameters and state alone do not fit.
  int64_t keep = 5;
  /// The user's sharding hints (the model's metadata, files, flags),
  /// applied as `cleave compile` applies them.
  std::vector<mlir::cleave::ShardingHint> hints;
  /// The largest gradient all-reduce bucket, in MiB (--bucket-mb).
  double bucketMb = 25.0;
  /// Whether the fastest plans that all-reduce gradients over a data axis
  /// are tried with smaller buckets too (not when the user gave one).
  bool searchBucketSizes = true;
  /// The precision predicted (the compiler builds fp32 programs).
  Precision precision = Precision::Fp32;
  /// Whether predictions hold each node's time (Prediction::nodeTimes).
  bool nodeTimes = false;
  /// Evaluate this layout only (the user's --mesh/--strategy), not search.
  std::optional<PlanLayout> given;
  /// The distributed training step at another global batch (the model
  /// imported again with its data inputs' batch bound to it). With it, a
  /// layout of more than two micro-batches is first predicted from the
  /// same layout with two micro-batches of the same size (rollPrediction,
  /// planner/RolledStep.h): rejected without unrolling when that estimate
  /// cannot fit, not unrolled when it is slower than the plans kept, and
  /// predicted by the estimate alone when its unrolled step would have
  /// more than maxUnrolledOps ops. Empty: every layout is unrolled.
  std::function<llvm::Expected<mlir::ModuleOp>(int64_t globalBatch,
                                               std::string &stepName)>
      stepAtBatch;
  int64_t maxUnrolledOps = 60000;
  /// The model's run of identical layers (RepeatedLayers.h) and the
  /// distributed step of the model cut down to `layers` of them at a
  /// global batch. With them, a search first predicts every layout from
  /// the same layout on a few layers (LayerRolledStep.h), then partitions
  /// in full only those that may be among the `keep` fastest or may fit
  /// where the estimate says they do not (searchPlans).
  std::optional<RepeatedLayers> layers;
  std::function<llvm::Expected<mlir::ModuleOp>(
      int64_t layers, int64_t globalBatch, std::string &stepName)>
      stepWithLayers;
  /// Whether evaluating a layout predicts it from fewer layers (the first
  /// pass; set by searchPlans).
  bool rollLayers = false;
  /// Whether the emitter writes the plans shown (the `keep` fastest):
  /// each must compile.
  bool writePlans = true;
  /// Threads evaluating layouts (0: one per hardware thread). The plans,
  /// their order and the reasons are the same for any count.
  unsigned threads = 0;
};

struct SearchResult {
  /// Plans that fit, fastest first; then the rest, each with its reason.
  std::vector<Candidate> plans, rejected;
  int64_t candidates = 0;
  /// Layouts with more micro-batches never partitioned (see keep).
  int64_t pruned = 0;
  /// Layouts with more micro-batches decided by their rolled estimate
  /// without being unrolled (rejected, bounded out or predicted by it).
  int64_t rolled = 0;
  /// Layouts decided by their prediction from fewer layers, and those of
  /// them then partitioned in full (SearchOptions::layers).
  int64_t layerRolled = 0, confirmed = 0;
  double seconds = 0;
  /// The ms one device computes the step's matrix products at the least
  /// (planner/StepBound.h): every layout's step is at least this over its
  /// ranks, stretched by its bubble. 0 when not computed (a given layout).
  double computeBoundMs = 0;
  /// Where the search did not write its plans (SearchOptions::writePlans):
  /// the partitioned modules it kept of its fastest plans, by layout key
  /// (whoever writes them need not partition them again).
  std::map<std::string, std::shared_ptr<mlir::OwningOpRef<mlir::ModuleOp>>>
      keptModules;
};

/// The training step to partition, built once per kind: `distributed`
/// as TrainingOptions::distributed. Returns the module and the step's
/// symbol name.
using StepSource = std::function<llvm::Expected<mlir::ModuleOp>(
    bool distributed, std::string &stepName)>;

/// A StepSource that builds `model`'s training step with `training` (its
/// `distributed` set per call) on a copy of the module, once per kind.
StepSource trainingSteps(mlir::ModuleOp model,
                         mlir::cleave::TrainingOptions training);

/// Searches (or evaluates the given layout) on `options.ranks` devices.
SearchResult searchPlans(mlir::MLIRContext &context, const StepSource &steps,
                         const SearchOptions &options);

/// The layouts searched for `ranks` devices and a global batch: the
/// compiler-buildable ones, and those it cannot build yet (rejected with
/// the reason).
std::vector<Candidate> enumerateLayouts(const SearchOptions &options);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_PLANNER_H
