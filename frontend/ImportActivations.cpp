//===- ImportActivations.cpp - activations written as compositions --------===//
//
// Clip (ReLU6), HardSigmoid, HardSwish, LeakyRelu, Elu, Abs, Reciprocal and
// the variadic Max and Min. Each is a composition of compares, selects and
// arithmetic, so its gradient, sharding and kernels (one fused loop) are
// those of the ops it is made of. At the points where the derivative is
// not defined the selects pick PyTorch's choice (LeakyRelu and Elu at 0
// take the negative side's slope, Abs has slope 0 there); Clip passes the
// gradient at its bounds, where PyTorch's hardtanh (ReLU6) does not.
//
//===----------------------------------------------------------------------===//

#include "frontend/NodeImporter.h"

namespace mlir::cleave {

namespace {

/// Clip(x, min, max) = min(max(x, lo), hi); a NaN stays NaN (the compare is
/// false). The bounds are optional inputs (attributes before opset 11).
LogicalResult importClip(NodeImporter &node) {
  TensorBuilder t = node.tensors();
  Value y = node.input(0);
  auto bound = [&](unsigned input, StringRef attr) -> Value {
    if (node.opset() < 11) {
      if (!node.hasAttr(attr))
        return Value();
      return t.scalarLike(y, node.floatAttr(attr, 0.0f));
    }
    return node.hasInput(input) ? node.input(input) : Value();
  };
  for (unsigned i : {1u, 2u})
    if (node.opset() >= 11 && node.hasInput(i) &&
        TensorBuilder::typeOf(node.input(i)).getRank() != 0)
      return node.emitError() << "min and max must be scalars (rank 0)",
             failure();
  if (Value lo = bound(1, "min"))
    y = t.where(t.less(y, lo), lo, y);
  if (Value hi = bound(2, "max"))
    y = t.where(t.less(hi, y), hi, y);
  node.setOutput(0, y);
  return success();
}

/// max(0, min(1, alpha * x + beta)).
Value hardSigmoid(TensorBuilder &t, Value x, double alpha, double beta) {
  Value y = t.add(t.mul(x, alpha), beta);
  Value zero = t.scalarLike(x, 0.0), one = t.scalarLike(x, 1.0);
  y = t.where(t.less(y, zero), zero, y);
  return t.where(t.less(one, y), one, y);
}

LogicalResult requireFloat(NodeImporter &node) {
  if (!isa<FloatType>(TensorBuilder::elementTypeOf(node.input(0))))
    return node.emitError() << "expects a float input", failure();
  return success();
}

LogicalResult importHardSigmoid(NodeImporter &node) {
  if (failed(requireFloat(node)))
    return failure();
  TensorBuilder t = node.tensors();
  node.setOutput(0, hardSigmoid(t, node.input(0), node.floatAttr("alpha", 0.2f),
                                node.floatAttr("beta", 0.5f)));
  return success();
}

/// x * HardSigmoid(x) with alpha 1/6 and beta 1/2.
LogicalResult importHardSwish(NodeImporter &node) {
  if (failed(requireFloat(node)))
    return failure();
  TensorBuilder t = node.tensors();
  Value x = node.input(0);
  node.setOutput(0, t.mul(x, hardSigmoid(t, x, 1.0 / 6.0, 0.5)));
  return success();
}

LogicalResult importLeakyRelu(NodeImporter &node) {
  if (failed(requireFloat(node)))
    return failure();
  TensorBuilder t = node.tensors();
  Value x = node.input(0);
  Value positive = t.less(t.scalarLike(x, 0.0), x);
  node.setOutput(0, t.where(positive, x,
                            t.mul(x, node.floatAttr("alpha", 0.01f))));
  return success();
}

/// alpha * (exp(x) - 1) for x <= 0; the exp reads min(x, 0), so the branch
/// not taken cannot overflow into the gradient (inf * 0).
LogicalResult importElu(NodeImporter &node) {
  if (failed(requireFloat(node)))
    return failure();
  TensorBuilder t = node.tensors();
  Value x = node.input(0), zero = t.scalarLike(x, 0.0);
  Value positive = t.less(zero, x);
  Value expm1 = t.add(t.unary<ExpOp>(t.where(positive, zero, x)), -1.0);
  node.setOutput(0, t.where(positive, x,
                            t.mul(expm1, node.floatAttr("alpha", 1.0f))));
  return success();
}

LogicalResult importAbs(NodeImporter &node) {
  TensorBuilder t = node.tensors();
  Value x = node.input(0);
  node.setOutput(0, t.abs(x));
  return success();
}

LogicalResult importReciprocal(NodeImporter &node) {
  if (failed(requireFloat(node)))
    return failure();
  TensorBuilder t = node.tensors();
  Value x = node.input(0);
  node.setOutput(0, t.div(t.scalarLike(x, 1.0), x));
  return success();
}

/// Max and Min of any number of broadcasting inputs.
template <bool IsMax> LogicalResult importExtremum(NodeImporter &node) {
  if (node.numInputs() == 0)
    return node.emitError() << "needs at least one input", failure();
  TensorBuilder t = node.tensors();
  Value y = node.input(0);
  for (unsigned i = 1; i < node.numInputs(); ++i)
    y = IsMax ? t.maximum(y, node.input(i)) : t.minimum(y, node.input(i));
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  node.setOutput(0, t.broadcastTo(y, type->getShape()));
  return success();
}

} // namespace

void registerActivationImporters(OpImportTable &table) {
  table["Clip"] = importClip;
  table["HardSigmoid"] = importHardSigmoid;
  table["HardSwish"] = importHardSwish;
  table["LeakyRelu"] = importLeakyRelu;
  table["Elu"] = importElu;
  table["Abs"] = importAbs;
  table["Reciprocal"] = importReciprocal;
  table["Max"] = importExtremum</*IsMax=*/true>;
  table["Min"] = importExtremum</*IsMax=*/false>;
}

} // namespace mlir::cleave
