//===- ApplyOptimizer.cpp - gradients to PyTorch optimizer updates --------===//

#include "passes/Passes.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_APPLYOPTIMIZERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

struct ApplyOptimizerPass
    : mlir::cleave::impl::ApplyOptimizerPassBase<ApplyOptimizerPass> {
  using ApplyOptimizerPassBase::ApplyOptimizerPassBase;

  void runOnOperation() override;

  /// Appends a zero-initialized state argument named `name`.
  BlockArgument addState(func::FuncOp func, Type type, StringRef name) {
    unsigned index = func.getNumArguments();
    MLIRContext *ctx = func.getContext();
    NamedAttribute attrs[] = {
        NamedAttribute(StringAttr::get(ctx, CleaveDialect::kStateAttrName),
                       StringAttr::get(ctx, name)),
        NamedAttribute(StringAttr::get(ctx, CleaveDialect::kInitAttrName),
                       StringAttr::get(ctx, "zeros"))};
    if (failed(func.insertArgument(index, type,
                                   DictionaryAttr::get(ctx, attrs),
                                   func.getLoc())))
      return {};
    return func.getArgument(index);
  }
};

void ApplyOptimizerPass::runOnOperation() {
  func::FuncOp func = getOperation();
  SmallVector<unsigned> gradResults;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, CleaveDialect::kGradAttrName))
      gradResults.push_back(i);
  if (gradResults.empty())
    return;
  if (optimizer != "sgd" && optimizer != "adamw") {
    func.emitError() << "unknown optimizer '" << optimizer
                     << "'; cleave supports sgd and adamw";
    return signalPassFailure();
  }
  MLIRContext *ctx = func.getContext();
  auto stepType = RankedTensorType::get({}, IntegerType::get(ctx, 64));
  unsigned stepIndex = func.getNumArguments();
  if (failed(func.insertArgument(
          stepIndex, stepType,
          DictionaryAttr::get(
              ctx, {NamedAttribute(
                       StringAttr::get(ctx, CleaveDialect::kStepAttrName),
                       UnitAttr::get(ctx))}),
          func.getLoc())))
    return signalPassFailure();
  Value step = func.getArgument(stepIndex);

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder b(ret);
  SmallVector<Value> results(ret.getOperands());
  SmallVector<std::pair<unsigned, StringAttr>> updates;
  auto f32 = [&](double v) { return b.getF32FloatAttr(v); };
  for (unsigned index : gradResults) {
    StringAttr name =
        func.getResultAttrOfType<StringAttr>(index, CleaveDialect::kGradAttrName);
    BlockArgument param;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), CleaveDialect::kParamAttrName) ==
          name)
        param = arg;
    if (!param) {
      func.emitError() << "gradient of '" << name.getValue()
                       << "' has no parameter argument";
      return signalPassFailure();
    }
    Value grad = results[index];
    Location loc = NameLoc::get(
        StringAttr::get(ctx, name.getValue() + "/" + optimizer.getValue()),
        func.getLoc());
    SmallVector<std::pair<Value, std::string>> produced;
    if (optimizer == "sgd") {
      Value buffer;
      if (momentum != 0.0)
        buffer = addState(func, param.getType(),
                          (name.getValue() + ".momentum_buffer").str());
      auto op = SgdOp::create(
          b, loc,
          SmallVector<Type>(buffer ? 2 : 1, param.getType()), param, grad,
          buffer, step, f32(lr), f32(momentum), f32(dampening),
          b.getBoolAttr(nesterov), f32(weightDecay));
      produced.emplace_back(op.getUpdated()[0], name.getValue().str());
      if (buffer)
        produced.emplace_back(op.getUpdated()[1],
                              (name.getValue() + ".momentum_buffer").str());
    } else {
      Value m = addState(func, param.getType(),
                         (name.getValue() + ".exp_avg").str());
      Value v = addState(func, param.getType(),
                         (name.getValue() + ".exp_avg_sq").str());
      auto op = AdamwOp::create(b, loc, param.getType(), param.getType(),
                                param.getType(), param, grad, m, v, step,
                                f32(lr), f32(beta1), f32(beta2), f32(eps),
                                f32(weightDecay));
      produced.emplace_back(op.getNewParam(), name.getValue().str());
      produced.emplace_back(op.getNewExpAvg(),
                            (name.getValue() + ".exp_avg").str());
      produced.emplace_back(op.getNewExpAvgSq(),
                            (name.getValue() + ".exp_avg_sq").str());
    }
    results[index] = produced.front().first;
    updates.emplace_back(index, StringAttr::get(ctx, produced.front().second));
    for (auto &[value, stateName] : llvm::drop_begin(produced)) {
      updates.emplace_back(results.size(), StringAttr::get(ctx, stateName));
      results.push_back(value);
    }
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> types;
  for (Value v : results)
    types.push_back(v.getType());
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(), types));
  for (unsigned index : gradResults)
    func.removeResultAttr(index, StringAttr::get(ctx, CleaveDialect::kGradAttrName));
  for (auto &[index, name] : updates)
    func.setResultAttr(index, CleaveDialect::kUpdateAttrName, name);
}

} // namespace
