//===- ApplyOptimizer.cpp - gradients to PyTorch optimizer updates --------===//

#include "passes/Passes.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <numeric>

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

  /// Scales the gradients in `results` (at `indices`) to a global L2 norm
  /// of at most clipGradNorm, as torch.nn.utils.clip_grad_norm_.
  void clipGradients(OpBuilder &b, Location funcLoc,
                     SmallVectorImpl<Value> &results,
                     ArrayRef<unsigned> indices) {
    Location loc = NameLoc::get(b.getStringAttr("clip_grad_norm"), funcLoc);
    auto scalarType = RankedTensorType::get({}, b.getF32Type());
    auto scalar = [&](double v) -> Value {
      return ConstantOp::create(
          b, loc, DenseElementsAttr::get(scalarType, b.getF32FloatAttr(v)));
    };
    Value total;
    for (unsigned index : indices) {
      Value grad = results[index];
      auto type = cast<RankedTensorType>(grad.getType());
      SmallVector<int64_t> axes(type.getRank());
      std::iota(axes.begin(), axes.end(), 0);
      Value square = MulOp::create(b, loc, type, grad, grad);
      Value sum = ReduceSumOp::create(b, loc, scalarType, square,
                                      b.getDenseI64ArrayAttr(axes),
                                      b.getBoolAttr(false));
      total = total ? AddOp::create(b, loc, scalarType, total, sum) : sum;
    }
    Value norm = SqrtOp::create(b, loc, scalarType, total);
    Value coef = DivOp::create(b, loc, scalarType, scalar(clipGradNorm),
                               AddOp::create(b, loc, scalarType, norm,
                                             scalar(1e-6)));
    Value one = scalar(1.0);
    Value below = LessOp::create(
        b, loc, RankedTensorType::get({}, b.getI1Type()), coef, one);
    Value clipped = WhereOp::create(b, loc, scalarType, below, coef, one);
    for (unsigned index : indices)
      results[index] = MulOp::create(b, loc, results[index].getType(),
                                     results[index], clipped);
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
  if (clipGradNorm > 0)
    clipGradients(b, func.getLoc(), results, gradResults);
  Value lrFactor;
  if (schedule != "constant" || warmupSteps > 0) {
    auto op = LrScheduleOp::create(
        b, NameLoc::get(StringAttr::get(ctx, "lr_schedule"), func.getLoc()),
        RankedTensorType::get({}, b.getF32Type()), step,
        b.getStringAttr(schedule), b.getI64IntegerAttr(warmupSteps),
        b.getI64IntegerAttr(totalSteps), b.getF32FloatAttr(minLrFactor));
    if (failed(verify(op)))
      return signalPassFailure();
    lrFactor = op;
  }
  // The parameter of every gradient, and the optimizer state each needs,
  // appended as zero-initialized arguments in one edit (one at a time
  // would rebuild the argument attributes each time: quadratic).
  llvm::DenseMap<Attribute, BlockArgument> paramByName;
  for (BlockArgument arg : func.getArguments())
    if (Attribute name =
            func.getArgAttr(arg.getArgNumber(), CleaveDialect::kParamAttrName))
      paramByName[name] = arg;
  SmallVector<StringRef, 2> stateSuffixes;
  if (optimizer == "adamw")
    stateSuffixes = {".exp_avg", ".exp_avg_sq"};
  else if (momentum != 0.0)
    stateSuffixes = {".momentum_buffer"};
  SmallVector<BlockArgument> params;
  SmallVector<unsigned> stateIndices;
  SmallVector<Type> stateTypes;
  SmallVector<DictionaryAttr> stateAttrs;
  SmallVector<Location> stateLocs;
  for (unsigned index : gradResults) {
    auto name =
        func.getResultAttrOfType<StringAttr>(index, CleaveDialect::kGradAttrName);
    BlockArgument param = paramByName.lookup(name);
    if (!param) {
      func.emitError() << "gradient of '" << name.getValue()
                       << "' has no parameter argument";
      return signalPassFailure();
    }
    params.push_back(param);
    for (StringRef suffix : stateSuffixes) {
      NamedAttribute attrs[] = {
          NamedAttribute(StringAttr::get(ctx, CleaveDialect::kStateAttrName),
                         StringAttr::get(ctx, name.getValue() + suffix)),
          NamedAttribute(StringAttr::get(ctx, CleaveDialect::kInitAttrName),
                         StringAttr::get(ctx, "zeros"))};
      stateIndices.push_back(func.getNumArguments());
      stateTypes.push_back(param.getType());
      stateAttrs.push_back(DictionaryAttr::get(ctx, attrs));
      stateLocs.push_back(func.getLoc());
    }
  }
  unsigned firstState = func.getNumArguments();
  if (failed(func.insertArguments(stateIndices, stateTypes, stateAttrs,
                                  stateLocs)))
    return signalPassFailure();

  SmallVector<std::pair<unsigned, StringAttr>> updates;
  auto f32 = [&](double v) { return b.getF32FloatAttr(v); };
  for (auto [i, index] : llvm::enumerate(gradResults)) {
    StringAttr name =
        func.getResultAttrOfType<StringAttr>(index, CleaveDialect::kGradAttrName);
    BlockArgument param = params[i];
    auto state = [&](unsigned k) {
      return func.getArgument(firstState + i * stateSuffixes.size() + k);
    };
    Value grad = results[index];
    Location loc = NameLoc::get(
        StringAttr::get(ctx, name.getValue() + "/" + optimizer.getValue()),
        func.getLoc());
    SmallVector<std::pair<Value, std::string>> produced;
    if (optimizer == "sgd") {
      Value buffer = stateSuffixes.empty() ? Value() : state(0);
      auto op = SgdOp::create(
          b, loc,
          SmallVector<Type>(buffer ? 2 : 1, param.getType()), param, grad,
          buffer, step, lrFactor, f32(lr), f32(momentum), f32(dampening),
          b.getBoolAttr(nesterov), f32(weightDecay));
      produced.emplace_back(op.getUpdated()[0], name.getValue().str());
      if (buffer)
        produced.emplace_back(op.getUpdated()[1],
                              (name.getValue() + ".momentum_buffer").str());
    } else {
      Value m = state(0), v = state(1);
      auto op = AdamwOp::create(b, loc, param.getType(), param.getType(),
                                param.getType(), param, grad, m, v, step,
                                lrFactor, f32(lr), f32(beta1), f32(beta2), f32(eps),
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
  // The result attributes in one edit: gradients become updates.
  SmallVector<NamedAttrList> resultAttrs(results.size());
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    resultAttrs[i] = NamedAttrList(func.getResultAttrDict(i));
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(), types));
  for (unsigned index : gradResults)
    resultAttrs[index].erase(CleaveDialect::kGradAttrName);
  for (auto &[index, name] : updates)
    resultAttrs[index].set(CleaveDialect::kUpdateAttrName, name);
  SmallVector<DictionaryAttr> dictionaries;
  for (NamedAttrList &attrs : resultAttrs)
    dictionaries.push_back(attrs.getDictionary(ctx));
  func.setAllResultAttrs(dictionaries);
}

} // namespace
