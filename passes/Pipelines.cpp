//===- Pipelines.cpp - the compile pipeline as a library ------------------===//

#include "passes/Pipelines.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"

#include <mutex>

namespace mlir::cleave {

char DiagnosedError::ID = 0;

void DiagnosedError::log(llvm::raw_ostream &os) const {
  os << "(reported as diagnostics)";
}

std::error_code DiagnosedError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Records the argument of the pass that failed first, the innermost (for
/// the tool's note naming the flags behind it). Function passes may fail
/// on several threads at once.
class FailedPassRecorder : public PassInstrumentation {
public:
  explicit FailedPassRecorder(std::string &failed) : failed(failed) {}
  void runAfterPassFailed(Pass *pass, Operation *) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed.empty())
      failed = pass->getArgument().str();
  }

private:
  std::string &failed;
  std::mutex mutex;
};

/// Runs `build`'s passes on `module` (verifying the IR after each when
/// `verify`); a DiagnosedError naming the pass that failed.
llvm::Error runPasses(ModuleOp module,
                      llvm::function_ref<void(OpPassManager &)> build,
                      bool verify = true) {
  PassManager pm(module.getContext());
  pm.enableVerifier(verify);
  build(pm);
  std::string failed;
  pm.addInstrumentation(std::make_unique<FailedPassRecorder>(failed));
  if (succeeded(pm.run(module)))
    return llvm::Error::success();
  return llvm::make_error<DiagnosedError>(failed);
}

/// The passes of a layout, with their options: what a parsed LayoutOptions
/// and cleave-opt's text options both give.
struct LayoutPasses {
  /// Builds cleave-apply-sharding-hints; null when there is nothing to
  /// partition (no mesh and one micro-batch).
  std::function<std::unique_ptr<Pass>()> applyHints;
  bool reportReshards = false;
  std::string recompute = "none";
  double bucketMb = 25.0;
  /// False for ZeRO-1 (gradients all-reduced, then sliced).
  bool reduceScatterGradients = true;
  int64_t microbatches = 1;
  std::string pipelineAxis;
  std::string schedule = "gpipe";
  int64_t virtualStages = 1;
  std::vector<std::string> pipelineCuts;
  std::optional<double> linkBalance;
  int64_t cutMicrobatches = 0;
};

/// Adds the layout's passes of the phases after `after` up to `last`
/// (Distribute, Partition or Stages).
void addLayoutPasses(OpPassManager &pm, const LayoutPasses &passes,
                     CompilePhase after, CompilePhase last) {
  if (after < CompilePhase::Distribute) {
    // Dropouts keep their random streams (their numbers in this program
    // order) whatever copies and orders partitioning makes.
    pm.addNestedPass<func::FuncOp>(createNumberDropoutsPass());
    if (passes.recompute != "none") {
      RecomputePassOptions options;
      options.mode = passes.recompute;
      pm.addNestedPass<func::FuncOp>(createRecomputePass(options));
    }
    if (!passes.applyHints)
      return;
    pm.addPass(passes.applyHints());
    PropagateShardingPassOptions options;
    options.report = passes.reportReshards;
    pm.addPass(createPropagateShardingPass(options));
  }
  if (!passes.applyHints || last == CompilePhase::Distribute)
    return;
  if (after < CompilePhase::Partition) {
    PartitionPassOptions options;
    options.bucketMb = passes.bucketMb;
    options.reduceScatterGradients = passes.reduceScatterGradients;
    pm.addPass(createPartitionPass(options));
    // Partitioning builds per-rank index arithmetic (vocabulary-split
    // gathers) once per op; identical pieces merge. Collectives are never
    // merged (they have side effects).
    pm.addNestedPass<func::FuncOp>(createCSEPass());
  }
  if (last == CompilePhase::Partition)
    return;
  if (passes.microbatches > 1) {
    UnrollMicroBatchesPassOptions options;
    options.axis = kMicroBatchAxis;
    // Without stages, gradient accumulation's order; with them, the
    // pipeline-stages pass orders the micro-batches' passes.
    options.accumulate = passes.pipelineAxis.empty();
    pm.addPass(createUnrollMicroBatchesPass(options));
  }
  if (!passes.pipelineAxis.empty()) {
    PipelineStagesPassOptions options;
    options.axis = passes.pipelineAxis;
    options.schedule = passes.schedule;
    options.virtualStages = passes.virtualStages;
    options.cuts.assign(passes.pipelineCuts.begin(), passes.pipelineCuts.end());
    if (passes.linkBalance)
      options.linkBalance = *passes.linkBalance;
    options.cutMicrobatches = passes.cutMicrobatches;
    pm.addPass(createPipelineStagesPass(options));
  }
}

/// The passes of a parsed layout.
LayoutPasses layoutPasses(const LayoutOptions &layout) {
  LayoutPasses passes;
  if (layout.mesh || layout.microbatches > 1) {
    ShardingLayout sharding;
    sharding.mesh = layout.mesh;
    sharding.strategy = layout.strategy;
    sharding.hints = layout.hints;
    sharding.microbatches = layout.microbatches;
    passes.applyHints = [sharding] {
      return createApplyShardingHintsPass(sharding);
    };
  }
  passes.reportReshards = layout.reportReshards;
  passes.recompute = layout.recompute;
  passes.bucketMb = layout.bucketMb;
  passes.reduceScatterGradients = reduceScattersGradients(layout.strategy);
  passes.microbatches = layout.microbatches;
  passes.pipelineAxis = layout.pipelineAxis;
  passes.schedule = pipelineScheduleName(layout.schedule).str();
  passes.virtualStages = layout.virtualStages;
  passes.pipelineCuts = layout.pipelineCuts;
  passes.linkBalance = layout.pipelineLinkBalance;
  passes.cutMicrobatches = layout.pipelineCutMicrobatches;
  return passes;
}

/// cleave-opt's text options of a layout (`cleave-layout`, and
/// `cleave-compile` after the training options).
template <typename Derived>
struct LayoutPipelineFields : PassPipelineOptions<Derived> {
  template <typename T> using Opt = mlir::detail::PassOptions::Option<T>;
  template <typename T> using List = mlir::detail::PassOptions::ListOption<T>;
  Opt<CompilePhase> compileTo{
      *this, "compile-to", llvm::cl::desc("the last phase to run"),
      llvm::cl::init(CompilePhase::Stages),
      llvm::cl::values(
          clEnumValN(CompilePhase::Train, "train",
                     "the training step only (no layout passes)"),
          clEnumValN(CompilePhase::Distribute, "distribute",
                     "a sharding on every value"),
          clEnumValN(CompilePhase::Partition, "partition",
                     "the per-rank program with its collectives"),
          clEnumValN(CompilePhase::Stages, "stages",
                     "micro-batches unrolled, pipeline stages assigned"))};
  Opt<std::string> mesh{*this, "mesh",
                        llvm::cl::desc("the device mesh, NAME=SIZE,... "
                                       "(empty: none, unless micro-batches)")};
  Opt<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("none, dp, zero1, zero2, zero3 or megatron"),
      llvm::cl::init("none")};
  List<std::string> hints{*this, "hints",
                          llvm::cl::desc("sharding hints GLOB=[d0,...]@P")};
  Opt<int64_t> microbatches{*this, "microbatches",
                            llvm::cl::desc("micro-batches per step"),
                            llvm::cl::init(1)};
  Opt<std::string> pipeline{
      *this, "pipeline",
      llvm::cl::desc("the mesh axis whose coordinates are stages")};
  Opt<std::string> schedule{*this, "schedule",
                            llvm::cl::desc("gpipe, 1f1b or interleaved"),
                            llvm::cl::init("gpipe")};
  Opt<int64_t> virtualStages{*this, "virtual-stages",
                             llvm::cl::desc("chunks of layers per stage"),
                             llvm::cl::init(1)};
  List<std::string> pipelineCuts{
      *this, "pipeline-cuts",
      llvm::cl::desc("ONNX node names each later stage starts with")};
  Opt<double> pipelineLinkBalance{
      *this, "pipeline-link-balance",
      llvm::cl::desc("operations per byte crossing a stage cut"),
      llvm::cl::init(PipelineStagesPassOptions().linkBalance)};
  Opt<std::string> recompute{*this, "recompute",
                             llvm::cl::desc("none, full or selective"),
                             llvm::cl::init("none")};
  Opt<double> bucketMb{*this, "bucket-mb",
                       llvm::cl::desc("the largest gradient bucket, MiB"),
                       llvm::cl::init(25.0)};

  /// The passes these options ask for.
  LayoutPasses passes() const {
    LayoutPasses passes;
    if (!mesh.empty() || microbatches > 1) {
      ApplyShardingHintsPassOptions options;
      options.mesh = mesh;
      options.strategy = strategy;
      options.hints.assign(hints.begin(), hints.end());
      options.microbatches = microbatches;
      passes.applyHints = [options] {
        return createApplyShardingHintsPass(options);
      };
    }
    passes.recompute = recompute;
    passes.bucketMb = bucketMb;
    passes.reduceScatterGradients = reduceScattersGradients(
        parseStrategy(strategy).value_or(Strategy::None));
    passes.microbatches = microbatches;
    passes.pipelineAxis = pipeline;
    passes.schedule = schedule;
    passes.virtualStages = virtualStages;
    passes.pipelineCuts.assign(pipelineCuts.begin(), pipelineCuts.end());
    passes.linkBalance = pipelineLinkBalance;
    return passes;
  }
  /// Adds the layout's passes up to `compile-to`.
  void addPasses(OpPassManager &pm) const {
    if (compileTo != CompilePhase::Train)
      addLayoutPasses(pm, passes(), CompilePhase::Train, compileTo);
  }
};

struct LayoutPipelineOptions
    : LayoutPipelineFields<LayoutPipelineOptions> {};

struct CompilePipelineOptions
    : LayoutPipelineFields<CompilePipelineOptions> {
  Opt<bool> inference{*this, "inference",
                      llvm::cl::desc("a forward-only program")};
  Opt<std::string> optimizer{*this, "optimizer",
                             llvm::cl::desc("sgd or adamw"),
                             llvm::cl::init("sgd")};
  Opt<double> lr{*this, "lr", llvm::cl::desc("learning rate"),
                 llvm::cl::init(0.01)};
  List<std::string> freeze{*this, "freeze",
                           llvm::cl::desc("globs of parameters kept fixed")};
};

} // namespace

StringRef compilePhaseName(CompilePhase phase) {
  switch (phase) {
  case CompilePhase::Import:
    return "import";
  case CompilePhase::Train:
    return "train";
  case CompilePhase::Distribute:
    return "distribute";
  case CompilePhase::Partition:
    return "partition";
  case CompilePhase::Stages:
    return "stages";
  case CompilePhase::Emit:
    return "emit";
  case CompilePhase::Binary:
    return "binary";
  }
  llvm_unreachable("unknown phase");
}

void buildTrainingPipeline(OpPassManager &pm, const TrainingOptions &options) {
  pm.addPass(createExpandGradientPass());
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  // Batch-major rows, so that a batch split passes through linear layers.
  if (options.distributed)
    funcPm.addPass(createLinearRowOrderPass());
  funcPm.addPass(createFoldTransposesPass());
  if (!options.inference) {
    // A mean over a split batch needs the global count.
    if (options.distributed)
      funcPm.addPass(createDecomposeMeansPass());
    AutodiffPassOptions autodiff;
    autodiff.freeze.assign(options.freeze.begin(), options.freeze.end());
    funcPm.addPass(createAutodiffPass(autodiff));
    funcPm.addPass(createApplyOptimizerPass(options.optimizer));
    funcPm.addPass(createFoldTransposesPass());
  }
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());
  if (!options.inference && !options.distributed)
    funcPm.addPass(createScheduleUpdatesPass());
}

llvm::Expected<func::FuncOp>
buildTrainingStep(ModuleOp module, const TrainingOptions &options) {
  if (llvm::Error error = runPasses(module, [&](OpPassManager &pm) {
        buildTrainingPipeline(pm, options);
      }))
    return std::move(error);
  for (auto func : module.getOps<func::FuncOp>()) {
    if (options.inference)
      return func;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (func.getResultAttr(i, CleaveDialect::kLossAttrName))
        return func;
  }
  return fail("the model has no loss to train");
}

llvm::Error validateLayout(const LayoutOptions &layout, bool inference) {
  if (!(layout.bucketMb > 0 && layout.bucketMb <= 1 << 20))
    return fail("--bucket-mb must be a size in MiB above 0 and at most "
                "1048576 (1 TiB)");
  if (layout.microbatches < 1)
    return fail(llvm::formatv("--microbatches must be at least 1, got {0}",
                              layout.microbatches));
  if (layout.microbatches > 1) {
    if (inference)
      return fail("--microbatches splits a training step; it does not apply "
                  "with --inference");
    if (layout.mesh && layout.mesh.getAxisIndex(kMicroBatchAxis) >= 0)
      return fail(llvm::Twine("the mesh axis name '") + kMicroBatchAxis +
                  "' is reserved for --microbatches; rename the axis");
  }
  if (!layout.pipelineAxis.empty()) {
    if (!layout.mesh || layout.mesh.getAxisIndex(layout.pipelineAxis) < 0) {
      std::string mesh;
      llvm::raw_string_ostream os(mesh);
      os << layout.mesh;
      return fail("--pipeline names the axis '" + layout.pipelineAxis +
                  "', which the mesh " + mesh +
                  " does not have; add it to --mesh (for example --mesh " +
                  layout.pipelineAxis + "=2)");
    }
    if (inference)
      return fail("--pipeline splits a training step; it does not apply with "
                  "--inference");
  }
  if (layout.recompute != "none" && layout.recompute != "full" &&
      layout.recompute != "selective")
    return fail("--recompute must be none, full or selective, got '" +
                layout.recompute + "'");
  if (layout.recompute != "none" && inference)
    return fail("--recompute trades memory of the backward pass; it does not "
                "apply with --inference");
  StringRef schedule = pipelineScheduleName(layout.schedule);
  if (layout.schedule != PipelineSchedule::GPipe &&
      layout.pipelineAxis.empty())
    return fail("--pipeline-schedule " + schedule +
                " orders pipeline stages; add --pipeline AXIS (and the axis "
                "to --mesh)");
  if (layout.virtualStages < 1)
    return fail(llvm::formatv("--virtual-stages must be at least 1, got {0}",
                              layout.virtualStages));
  if (layout.schedule == PipelineSchedule::Interleaved) {
    if (layout.virtualStages < 2)
      return fail("--pipeline-schedule interleaved runs several chunks of "
                  "layers per stage; give --virtual-stages 2 or more");
    int64_t stages = layout.mesh.getAxisSize(layout.pipelineAxis);
    if (layout.microbatches % stages != 0)
      return fail(llvm::formatv(
          "--pipeline-schedule interleaved runs micro-batches in groups of "
          "the {0} stages, but --microbatches is {1}; give a multiple of {0}",
          stages, layout.microbatches));
  } else if (layout.virtualStages > 1) {
    return fail("--virtual-stages " + Twine(layout.virtualStages) +
                " applies to --pipeline-schedule interleaved only (" +
                schedule + " runs one chunk of layers per stage)");
  }
  if (layout.pipelineLinkBalance) {
    if (layout.pipelineAxis.empty())
      return fail("--pipeline-link-balance weighs what crosses the cuts "
                  "between pipeline stages; add --pipeline AXIS (and the "
                  "axis to --mesh)");
    if (!(*layout.pipelineLinkBalance >= 0 &&
          *layout.pipelineLinkBalance <= 1e12))
      return fail(llvm::formatv(
          "--pipeline-link-balance must be a number of operations per byte "
          "from 0 to 1e12, got {0}",
          *layout.pipelineLinkBalance));
  }
  if (!layout.pipelineCuts.empty()) {
    if (layout.pipelineAxis.empty())
      return fail("--pipeline-cuts places the cuts between pipeline stages; "
                  "add --pipeline AXIS (and the axis to --mesh)");
    for (const std::string &cut : layout.pipelineCuts)
      if (llvm::StringRef(cut).trim().empty())
        return fail("--pipeline-cuts has an empty name; give ONNX node names "
                    "separated by commas");
    int64_t stages = layout.mesh.getAxisSize(layout.pipelineAxis);
    int64_t chunks = stages * layout.virtualStages;
    if (static_cast<int64_t>(layout.pipelineCuts.size()) != chunks - 1)
      return fail(llvm::formatv(
          "--pipeline-cuts gives {0} cut{1}, but {2} stages{3} need {4}: the "
          "ONNX node each later {5} starts with, in program order",
          layout.pipelineCuts.size(),
          layout.pipelineCuts.size() == 1 ? "" : "s", stages,
          layout.virtualStages > 1
              ? llvm::formatv(" x {0} virtual stages", layout.virtualStages)
                    .str()
              : std::string(),
          chunks - 1, layout.virtualStages > 1 ? "chunk" : "stage"));
  }
  return llvm::Error::success();
}

void buildLayoutPipeline(OpPassManager &pm, const LayoutOptions &layout,
                         CompilePhase last) {
  addLayoutPasses(pm, layoutPasses(layout), CompilePhase::Train, last);
}

llvm::Error
partitionForLayout(ModuleOp module, func::FuncOp step,
                   const LayoutOptions &layout, CompilePhase last,
                   llvm::function_ref<void(func::FuncOp)> onPropagated) {
  LayoutPasses passes = layoutPasses(layout);
  // Recomputation restructures the step: verified even where the other
  // passes run unverified (the planner's search), so that a bug in it
  // rejects the layout instead of crashing the passes after it.
  if (llvm::Error error = runPasses(
          module,
          [&](OpPassManager &pm) {
            addLayoutPasses(pm, passes, CompilePhase::Train,
                            CompilePhase::Distribute);
          },
          layout.verifyEachPass || passes.recompute != "none"))
    return error;
  if (!passes.applyHints)
    return llvm::Error::success();
  if (onPropagated)
    onPropagated(step);
  if (last == CompilePhase::Distribute)
    return llvm::Error::success();
  return runPasses(
      module,
      [&](OpPassManager &pm) {
        addLayoutPasses(pm, passes, CompilePhase::Distribute, last);
      },
      layout.verifyEachPass);
}

void registerCleavePipelines() {
  PassPipelineRegistration<>(
      "cleave-training",
      "The training step of an imported model: gradients, PyTorch's SGD "
      "(lr 0.01), clean-up; `cleave compile --compile-to=train` with its "
      "default flags",
      [](OpPassManager &pm) { buildTrainingPipeline(pm, TrainingOptions()); });
  PassPipelineRegistration<LayoutPipelineOptions>(
      "cleave-layout",
      "Partitions a training step for a layout: recomputation, the hints "
      "and preset, propagation, SPMD partitioning, micro-batches and "
      "pipeline stages, up to `compile-to` (`cleave compile` after "
      "--compile-to=train)",
      [](OpPassManager &pm, const LayoutPipelineOptions &options) {
        options.addPasses(pm);
      });
  PassPipelineRegistration<CompilePipelineOptions>(
      "cleave-compile",
      "The whole compile pipeline from an imported model to the program "
      "the emitter reads, up to `compile-to` (train, distribute, partition "
      "or stages): `cleave compile --compile-to=...` with the same flags",
      [](OpPassManager &pm, const CompilePipelineOptions &options) {
        TrainingOptions training;
        training.inference = options.inference;
        training.distributed = !options.mesh.empty() ||
                               options.microbatches > 1;
        training.freeze.assign(options.freeze.begin(), options.freeze.end());
        training.optimizer.optimizer = options.optimizer;
        training.optimizer.lr = options.lr;
        // PyTorch's default: AdamW decays weights by 0.01, SGD not at all.
        training.optimizer.weightDecay = options.optimizer == "adamw" ? 0.01 : 0;
        buildTrainingPipeline(pm, training);
        options.addPasses(pm);
      });
}

} // namespace mlir::cleave
