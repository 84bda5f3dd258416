//===- ApplyShardingHints.cpp - a layout's argument shardings -------------===//
//
// The step between a layout (mesh, preset, hints, micro-batches) and
// sharding propagation: sets the module's mesh and the step's argument
// shardings. Built from parsed hints by partitionForLayout, or from its
// text options by cleave-opt.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/ShardingHints.h"
#include "passes/TrainingStep.h"

#include "dialects/cleave/CleaveOps.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_APPLYSHARDINGHINTSPASS
#define GEN_PASS_DEF_NUMBERDROPOUTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

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

/// The function a layout applies to: the one with a loss, else the
/// module's only function (a forward-only program).
func::FuncOp stepOf(ModuleOp module) {
  auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
  for (func::FuncOp func : funcs)
    if (lossOf(func))
      return func;
  return funcs.size() == 1 ? funcs.front() : func::FuncOp();
}

struct ApplyShardingHintsPass
    : mlir::cleave::impl::ApplyShardingHintsPassBase<ApplyShardingHintsPass> {
  using ApplyShardingHintsPassBase::ApplyShardingHintsPassBase;
  explicit ApplyShardingHintsPass(ShardingLayout parsed)
      : parsed(std::move(parsed)) {}

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<ShardingLayout> layout = parsed;
    if (!layout && !(layout = parseOptions(module)))
      return signalPassFailure();
    func::FuncOp step = stepOf(module);
    if (!step) {
      module.emitError("no function to shard: the module has no training "
                       "step (a function with a 'cleave.loss' result) and "
                       "more than one function");
      return signalPassFailure();
    }
    MeshAttr mesh = layout->mesh ? layout->mesh : getModuleMesh(module);
    if (layout->microbatches > 1) {
      if (mesh && mesh.getAxisIndex(kMicroBatchAxis) >= 0) {
        module.emitError() << "the mesh " << mesh << " has an axis named '"
                           << kMicroBatchAxis
                           << "', the name micro-batches take; rename it";
        return signalPassFailure();
      }
      mesh = withAxis(&getContext(), mesh, kMicroBatchAxis,
                      layout->microbatches);
    }
    if (!mesh) {
      module.emitError("no mesh to shard over: give the pass a mesh or the "
                       "module a 'cleave.mesh' attribute");
      return signalPassFailure();
    }
    module->setAttr(CleaveDialect::kMeshAttrName, mesh);
    if (llvm::Error error = apply(step, mesh, *layout)) {
      step.emitError(llvm::toString(std::move(error)));
      return signalPassFailure();
    }
  }

  /// The preset's hints, the given ones, the micro-batch split, ZeRO-3's
  /// gathers.
  static llvm::Error apply(func::FuncOp step, MeshAttr mesh,
                           const ShardingLayout &layout) {
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
    if (zeroStage(layout.strategy) == 3)
      gatherParametersForCompute(step);
    return llvm::Error::success();
  }

  /// The text options (cleave-opt) as a layout; null after an error.
  std::optional<ShardingLayout> parseOptions(ModuleOp module) {
    ShardingLayout layout;
    auto report = [&](llvm::Error error) {
      module.emitError(llvm::toString(std::move(error)));
      return std::nullopt;
    };
    if (!mesh.empty()) {
      llvm::Expected<MeshAttr> parsedMesh =
          parseMesh(&getContext(), mesh, "mesh");
      if (!parsedMesh)
        return report(parsedMesh.takeError());
      layout.mesh = *parsedMesh;
    }
    std::optional<Strategy> preset = parseStrategy(strategy);
    if (!preset) {
      module.emitError() << "unknown strategy '" << strategy
                         << "'; the presets are none, dp, zero1, zero2, "
                            "zero3, megatron, megatron+zero1, "
                            "megatron+zero2 and megatron+zero3";
      return std::nullopt;
    }
    layout.strategy = *preset;
    for (const std::string &text : hints) {
      llvm::Expected<ShardingHint> hint =
          parseShardingHint(text, "option 'hints'");
      if (!hint)
        return report(hint.takeError());
      layout.hints.push_back(std::move(*hint));
    }
    if (microbatches < 1) {
      module.emitError() << "microbatches must be at least 1, got "
                         << microbatches;
      return std::nullopt;
    }
    layout.microbatches = microbatches;
    return layout;
  }

  /// Set when built from a parsed layout (the text options are then unused).
  std::optional<ShardingLayout> parsed;
};

struct NumberDropoutsPass
    : mlir::cleave::impl::NumberDropoutsPassBase<NumberDropoutsPass> {
  void runOnOperation() override {
    int64_t number = 0;
    auto type = IntegerType::get(&getContext(), 64);
    getOperation().walk([&](DropoutOp op) {
      op->setAttr(CleaveDialect::kDropoutNumberAttrName,
                  IntegerAttr::get(type, number++));
    });
  }
};

} // namespace

std::unique_ptr<Pass>
mlir::cleave::createApplyShardingHintsPass(ShardingLayout layout) {
  return std::make_unique<ApplyShardingHintsPass>(std::move(layout));
}
