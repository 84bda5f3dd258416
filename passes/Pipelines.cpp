//===- Pipelines.cpp - the compile pipeline as a library ------------------===//

#include "passes/Pipelines.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"

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

llvm::Error diagnosed() { return llvm::make_error<DiagnosedError>(); }

/// Runs `build`'s passes on `module`; a DiagnosedError when one fails.
llvm::Error runPasses(ModuleOp module,
                      llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(module.getContext());
  build(pm);
  return failed(pm.run(module)) ? diagnosed() : llvm::Error::success();
}

/// `mesh` (null: none) with `axis` of `size` appended.
MeshAttr withAxis(MLIRContext *context, MeshAttr mesh, StringRef axis,
                  int64_t size) {
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  if (mesh) {
    names.append(mesh.getAxisNames().begin(), mesh.getAxisNames().end());
    sizes.append(mesh.getAxisSizes().begin(), mesh.getAxisSizes().end());
  }
  names.push_back(StringAttr::get(context, axis));
  sizes.push_back(size);
  return MeshAttr::get(context, names, sizes);
}

/// Applies the preset's and the user's hints and propagates them.
llvm::Error distribute(ModuleOp module, func::FuncOp step, MeshAttr mesh,
                       const LayoutOptions &layout) {
  // A preset's hints are weaker (higher priority numbers) than any the
  // user writes, so that a user's hint refines the preset.
  constexpr int64_t kPresetPriority = 1000;
  auto preset = strategyHints(layout.strategy, step, mesh);
  if (!preset)
    return preset.takeError();
  std::vector<ShardingHint> hints = std::move(*preset);
  for (ShardingHint &hint : hints)
    hint.priority += kPresetPriority;
  hints.insert(hints.end(), layout.hints.begin(), layout.hints.end());
  if (llvm::Error error = applyShardingHints(step, mesh, hints))
    return error;
  if (layout.microbatches > 1)
    if (llvm::Error error = splitBatchesOver(step, mesh, kMicroBatchAxis))
      return error;
  if (layout.strategy == Strategy::Zero3)
    gatherParametersForCompute(step);
  return runPasses(module, [&](OpPassManager &pm) {
    PropagateShardingPassOptions options;
    options.report = layout.reportReshards;
    pm.addPass(createPropagateShardingPass(options));
  });
}

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
  return llvm::Error::success();
}

llvm::Error
partitionForLayout(ModuleOp module, func::FuncOp step,
                   const LayoutOptions &layout, CompilePhase last,
                   llvm::function_ref<void(func::FuncOp)> onPropagated) {
  // Dropouts keep their random streams (their numbers in this program
  // order) whatever copies and orders partitioning makes.
  int64_t dropouts = 0;
  step.walk([&](DropoutOp op) {
    op->setAttr(CleaveDialect::kDropoutNumberAttrName,
                IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                 dropouts++));
  });
  if (layout.recompute != "none")
    if (llvm::Error error = runPasses(module, [&](OpPassManager &pm) {
          RecomputePassOptions options;
          options.mode = layout.recompute;
          pm.addNestedPass<func::FuncOp>(createRecomputePass(options));
        }))
      return error;
  // Micro-batches are a mesh axis while the step is partitioned; the
  // partitioned step then runs them in turn (cleave-unroll-microbatches).
  MeshAttr mesh = layout.mesh;
  if (layout.microbatches > 1) {
    mesh = withAxis(module.getContext(), layout.mesh, kMicroBatchAxis,
                    layout.microbatches);
    module->setAttr(CleaveDialect::kMeshAttrName, mesh);
  }
  if (!mesh)
    return llvm::Error::success();
  if (llvm::Error error = distribute(module, step, mesh, layout))
    return error;
  if (onPropagated)
    onPropagated(step);
  if (last == CompilePhase::Distribute)
    return llvm::Error::success();
  if (llvm::Error error = runPasses(module, [&](OpPassManager &pm) {
        PartitionPassOptions options;
        options.bucketMb = layout.bucketMb;
        options.reduceScatterGradients = layout.strategy != Strategy::Zero1;
        pm.addPass(createPartitionPass(options));
        // Partitioning builds per-rank index arithmetic (vocabulary-split
        // gathers) once per op; identical pieces merge. Collectives are
        // never merged (they have side effects).
        pm.addNestedPass<func::FuncOp>(createCSEPass());
      }))
    return error;
  if (last == CompilePhase::Partition)
    return llvm::Error::success();
  if (layout.microbatches > 1)
    if (llvm::Error error = runPasses(module, [&](OpPassManager &pm) {
          UnrollMicroBatchesPassOptions options;
          options.axis = kMicroBatchAxis;
          pm.addPass(createUnrollMicroBatchesPass(options));
        }))
      return error;
  if (!layout.pipelineAxis.empty())
    if (llvm::Error error = runPasses(module, [&](OpPassManager &pm) {
          PipelineStagesPassOptions options;
          options.axis = layout.pipelineAxis;
          options.schedule = pipelineScheduleName(layout.schedule).str();
          options.virtualStages = layout.virtualStages;
          pm.addPass(createPipelineStagesPass(options));
        }))
      return error;
  return llvm::Error::success();
}

void registerCleavePipelines() {
  PassPipelineRegistration<>(
      "cleave-training",
      "The training step of an imported model: gradients, PyTorch's SGD "
      "(lr 0.01), clean-up; `cleave compile --compile-to=train` with its "
      "default flags",
      [](OpPassManager &pm) { buildTrainingPipeline(pm, TrainingOptions()); });
}

} // namespace mlir::cleave
