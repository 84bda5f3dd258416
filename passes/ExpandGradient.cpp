//===- ExpandGradient.cpp - ONNX Gradient ops to backward passes ----------===//

#include "passes/Passes.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_EXPANDGRADIENTPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The ONNX name an argument carries (input, parameter or state).
StringAttr argumentName(func::FuncOp func, unsigned index) {
  for (StringRef kind : {CleaveDialect::kInputAttrName,
                         CleaveDialect::kParamAttrName,
                         CleaveDialect::kStateAttrName})
    if (auto name = func.getArgAttrOfType<StringAttr>(index, kind))
      return name;
  return {};
}

struct ExpandGradientPass
    : mlir::cleave::impl::ExpandGradientPassBase<ExpandGradientPass> {
  void runOnOperation() override {
    SymbolTable symbols(getOperation());
    SmallVector<GradientOp> gradients;
    getOperation().walk([&](GradientOp op) { gradients.push_back(op); });
    for (GradientOp op : gradients)
      if (failed(expand(op, symbols)))
        return signalPassFailure();
  }

  LogicalResult expand(GradientOp op, SymbolTable &symbols);
};

LogicalResult ExpandGradientPass::expand(GradientOp op, SymbolTable &symbols) {
  auto model = symbols.lookup<func::FuncOp>(op.getModel());
  auto enclosing = op->getParentOfType<func::FuncOp>();
  if (!model || model == enclosing)
    return op.emitOpError("needs a model function other than its own");

  // Model arguments: from xs/zs, else the enclosing function's argument of
  // the same ONNX name.
  llvm::StringMap<Value> byName;
  for (BlockArgument arg : enclosing.getArguments())
    if (StringAttr name = argumentName(enclosing, arg.getArgNumber()))
      byName[name.getValue()] = arg;
  SmallVector<Attribute> names(op.getXs().getValue());
  llvm::append_range(names, op.getZs().getValue());
  for (auto [name, input] : llvm::zip(names, op.getInputs()))
    byName[cast<StringAttr>(name).getValue()] = input;
  IRMapping mapping;
  for (BlockArgument arg : model.getArguments()) {
    StringAttr name = argumentName(model, arg.getArgNumber());
    Value value = name ? byName.lookup(name.getValue()) : Value();
    if (!value)
      return op.emitOpError() << "cannot feed model argument '"
                              << (name ? name.getValue() : "?")
                              << "': it is neither in xs/zs nor an argument "
                                 "of "
                              << enclosing.getSymName();
    mapping.map(arg, value);
  }

  OpBuilder builder(op);
  SmallVector<Operation *> forward;
  Block &body = model.getBody().front();
  for (Operation &modelOp : body.without_terminator())
    forward.push_back(builder.clone(modelOp, mapping));
  Value loss;
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (auto name = model.getResultAttrOfType<StringAttr>(
            i, CleaveDialect::kOutputAttrName))
      if (name.getValue() == op.getY())
        loss = mapping.lookup(value);
  if (!loss)
    return op.emitOpError() << "y '" << op.getY() << "' is not an output of "
                            << model.getSymName();

  SmallVector<Value> wrt(op.getInputs().take_front(op.getXs().size()));
  FailureOr<SmallVector<Value>> grads =
      buildGradients(builder, forward, loss, wrt);
  if (failed(grads))
    return failure();
  StringAttr y = op.getYAttr();
  op.replaceAllUsesWith(*grads);
  op.erase();

  // Report the differentiated output as the program's loss.
  auto enclosingRet =
      cast<func::ReturnOp>(enclosing.getBody().front().getTerminator());
  SmallVector<Value> results(enclosingRet.getOperands());
  results.push_back(loss);
  OpBuilder retBuilder(enclosingRet);
  func::ReturnOp::create(retBuilder, enclosingRet.getLoc(), results);
  enclosingRet.erase();
  SmallVector<Type> types(enclosing.getResultTypes());
  types.push_back(loss.getType());
  enclosing.setType(FunctionType::get(enclosing.getContext(),
                                      enclosing.getArgumentTypes(), types));
  unsigned index = types.size() - 1;
  enclosing.setResultAttr(index, CleaveDialect::kLossAttrName,
                          UnitAttr::get(enclosing.getContext()));
  enclosing.setResultAttr(index, CleaveDialect::kOutputAttrName, y);
  return success();
}

} // namespace
