//===- CleaveOps.cpp - cleave dialect operations --------------------------===//
//
// Verifiers. They recheck the shapes the importer took from ONNX shape
// inference, so each message says which operand or attribute is wrong and
// what was expected.
//
//===----------------------------------------------------------------------===//

#include "dialects/cleave/CleaveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave;

std::string mlir::cleave::formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

int64_t mlir::cleave::getModelBatchDim(Operation *op, StringRef input) {
  auto module =
      isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  auto dims = module ? module->getAttrOfType<DictionaryAttr>(
                           CleaveDialect::kBatchDimsAttrName)
                     : DictionaryAttr();
  auto dim = dims ? dims.getAs<IntegerAttr>(input) : IntegerAttr();
  return dim ? dim.getInt() : 0;
}

namespace {

ShapedType shapedType(Value value) { return cast<ShapedType>(value.getType()); }

ArrayRef<int64_t> shapeOf(Value value) { return shapedType(value).getShape(); }


/// Checks that `shape` matches `expected`, naming `what` on mismatch.
LogicalResult expectShape(Operation *op, StringRef what, ArrayRef<int64_t> shape,
                          ArrayRef<int64_t> expected) {
  if (shape == expected)
    return success();
  return op->emitOpError() << what << " has shape " << formatShape(shape)
                           << " but " << formatShape(expected)
                           << " was expected";
}

/// Checks that `value` has the element type of `reference`.
LogicalResult expectSameElementType(Operation *op, StringRef what, Value value,
                                    Value reference) {
  Type got = shapedType(value).getElementType();
  Type want = shapedType(reference).getElementType();
  if (got == want)
    return success();
  return op->emitOpError() << what << " has element type " << got << " but "
                           << want << " was expected";
}

LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank,
                         StringRef name = "axis") {
  if (axis >= 0 && axis < rank)
    return success();
  return op->emitOpError() << name << " " << axis << " is out of range for rank "
                           << rank << " (expected 0 <= " << name << " < "
                           << rank << ")";
}

/// Checks that every entry of `values` is >= `minimum`.
LogicalResult verifyAtLeast(Operation *op, StringRef name,
                            ArrayRef<int64_t> values, int64_t minimum) {
  for (int64_t v : values)
    if (v < minimum)
      return op->emitOpError() << name << " " << formatShape(values)
                               << " must have entries >= " << minimum;
  return success();
}

LogicalResult verifyLength(Operation *op, StringRef name,
                           ArrayRef<int64_t> values, size_t expected) {
  if (values.size() == expected)
    return success();
  return op->emitOpError() << name << " has " << values.size()
                           << " entries but " << expected << " were expected";
}

/// Verifies the per-sample shapes of a classification loss: `input` is
/// [N, C, d1..dk], `target` [N, d1..dk], `weight` [C] and the loss 0-d or,
/// without reduction, [N, d1..dk].
LogicalResult verifyClassLoss(Operation *op, Value input, Value target,
                              Value weight, LossReduction reduction,
                              Value loss) {
  ArrayRef<int64_t> inputShape = shapeOf(input);
  if (inputShape.size() < 2)
    return op->emitOpError() << "expects class scores of rank >= 2 ([N, C, "
                                "...]) but got rank "
                             << inputShape.size();
  SmallVector<int64_t> perSample{inputShape[0]};
  llvm::append_range(perSample, inputShape.drop_front(2));
  if (failed(expectShape(op, "the label operand", shapeOf(target), perSample)))
    return failure();
  if (weight && (failed(expectShape(op, "the weight operand", shapeOf(weight),
                                    {inputShape[1]})) ||
                 failed(expectSameElementType(op, "the weight operand", weight,
                                              input))))
    return failure();
  if (failed(expectSameElementType(op, "the loss", loss, input)))
    return failure();
  ArrayRef<int64_t> expected =
      reduction == LossReduction::None ? ArrayRef<int64_t>(perSample)
                                       : ArrayRef<int64_t>();
  return expectShape(op, "the loss", shapeOf(loss), expected);
}

/// Verifies an optimizer op: its float attributes are finite, every operand
/// group has one tensor per parameter, of its type, and the results are
/// `resultGroups` groups of the parameters' types.
LogicalResult verifyOptimizer(Operation *op, ValueRange params,
                              ArrayRef<std::pair<StringRef, ValueRange>> groups,
                              size_t resultGroups) {
  // Hyper-parameters (alpha, beta, epsilon, ...) become float constants.
  for (NamedAttribute attr : op->getAttrs())
    if (auto value = dyn_cast<FloatAttr>(attr.getValue());
        value && !value.getValue().isFinite())
      return op->emitOpError()
             << attr.getName().getValue() << " is " << value.getValueAsDouble()
             << "; hyper-parameters must be finite";
  for (auto [name, group] : groups) {
    if (group.size() != params.size())
      return op->emitOpError()
             << "has " << params.size() << " params but " << group.size()
             << " " << name << " (expected one per parameter)";
    for (auto [index, pair] : llvm::enumerate(llvm::zip(params, group)))
      if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
        return op->emitOpError()
               << name << " #" << index << " has type "
               << std::get<1>(pair).getType() << " but its parameter has "
               << std::get<0>(pair).getType();
  }
  if (op->getNumResults() != resultGroups * params.size())
    return op->emitOpError() << "has " << op->getNumResults()
                             << " results but " << resultGroups
                             << " per parameter (" << params.size()
                             << " params) were expected";
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    Type expected = params[index % params.size()].getType();
    if (result.getType() != expected)
      return op->emitOpError() << "result #" << index << " has type "
                               << result.getType() << " but its parameter has "
                               << expected;
  }
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Broadcasting trait
//===----------------------------------------------------------------------===//

LogicalResult mlir::cleave::verifyBroadcastingOp(Operation *op) {
  SmallVector<int64_t> broadcast;
  for (Value operand : op->getOperands()) {
    SmallVector<int64_t> next;
    if (!mlir::OpTrait::util::getBroadcastedShape(broadcast, shapeOf(operand),
                                                  next))
      return op->emitOpError() << "operand shapes do not broadcast: "
                               << formatShape(broadcast) << " and "
                               << formatShape(shapeOf(operand));
    broadcast = std::move(next);
  }
  return expectShape(op, "the result", shapeOf(op->getResult(0)), broadcast);
}

//===----------------------------------------------------------------------===//
// Elementwise and constants
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult PowOp::verify() {
  if (shapedType(getBase()).getElementType() !=
      shapedType(getResult()).getElementType())
    return emitOpError("result element type must be the base's element type");
  return success();
}

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError() << "ratio " << ratio << " must be in [0, 1)";
  if (getOutput().getType() != getInput().getType())
    return emitOpError("output must have the input's type");
  if (cast<ShapedType>(getMask().getType()).getShape() !=
      getInput().getType().getShape())
    return emitOpError("mask must have the input's shape");
  if (getRowDim().has_value() != getRowStride().has_value())
    return emitOpError("row_dim and row_stride come together");
  if (std::optional<int64_t> dim = getRowDim()) {
    ShapedType type = getInput().getType();
    if (*dim <= 0 || *dim >= type.getRank())
      return emitOpError() << "row_dim " << *dim << " must be in [1, "
                           << type.getRank() << ")";
    int64_t row = getRowElements();
    if (*getRowStride() < row)
      return emitOpError() << "row_stride " << *getRowStride()
                           << " is less than a row's " << row << " elements";
  }
  return success();
}

LogicalResult RandomUniformOp::verify() {
  float low = getLow().convertToFloat(), high = getHigh().convertToFloat();
  if (!(low < high) || !std::isfinite(high - low))
    return emitOpError() << "needs finite low < high, not [" << low << ", "
                         << high << ")";
  return success();
}

LogicalResult RandomNormalOp::verify() {
  float mean = getMean().convertToFloat(), scale = getScale().convertToFloat();
  if (!std::isfinite(mean) || !(scale >= 0.0f) || !std::isfinite(scale))
    return emitOpError() << "needs a finite mean and a finite scale >= 0, not "
                         << mean << " and " << scale;
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  if (lhs.empty() || rhs.empty())
    return emitOpError("operands must have rank >= 1");
  // numpy.matmul: promote 1-d operands to matrices, drop the added dim later.
  SmallVector<int64_t> a(lhs), b(rhs);
  if (lhs.size() == 1)
    a.insert(a.begin(), 1);
  if (rhs.size() == 1)
    b.push_back(1);
  int64_t k = a.back(), kRhs = b[b.size() - 2];
  if (k != kRhs)
    return emitOpError() << "contracted dimensions differ: lhs "
                         << formatShape(lhs) << " has " << k << ", rhs "
                         << formatShape(rhs) << " has " << kRhs;
  SmallVector<int64_t> batch;
  if (!mlir::OpTrait::util::getBroadcastedShape(
          ArrayRef<int64_t>(a).drop_back(2), ArrayRef<int64_t>(b).drop_back(2),
          batch))
    return emitOpError() << "batch dimensions of " << formatShape(lhs)
                         << " and " << formatShape(rhs) << " do not broadcast";
  SmallVector<int64_t> expected(batch);
  if (lhs.size() > 1)
    expected.push_back(a[a.size() - 2]);
  if (rhs.size() > 1)
    expected.push_back(b.back());
  return expectShape(*this, "the result", shapeOf(getResult()), expected);
}

LogicalResult GemmOp::verify() {
  ArrayRef<int64_t> a = shapeOf(getA()), b = shapeOf(getB());
  if (a.size() != 2 || b.size() != 2)
    return emitOpError() << "expects 2-d operands but got "
                         << formatShape(a) << " and " << formatShape(b);
  int64_t m = getTransA() ? a[1] : a[0], ka = getTransA() ? a[0] : a[1];
  int64_t kb = getTransB() ? b[1] : b[0], n = getTransB() ? b[0] : b[1];
  if (ka != kb)
    return emitOpError() << "contracted dimensions differ: " << ka << " vs "
                         << kb;
  if (failed(expectShape(*this, "the result", shapeOf(getResult()), {m, n})))
    return failure();
  if (Value c = getC()) {
    if (failed(expectSameElementType(*this, "c", c, getA())))
      return failure();
    SmallVector<int64_t> broadcast;
    if (!mlir::OpTrait::util::getBroadcastedShape(shapeOf(c), {m, n},
                                                  broadcast) ||
        broadcast != SmallVector<int64_t>{m, n})
      return emitOpError() << "c of shape " << formatShape(shapeOf(c))
                           << " does not broadcast to [" << m << ", " << n
                           << "]";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), shapedType(getInput()).getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), shapedType(getInput()).getRank());
}

/// epsilon >= 0 and finite: the normalizations divide by sqrt(var + eps).
template <typename NormOp> static LogicalResult verifyEpsilon(NormOp op) {
  float epsilon = op.getEpsilon().convertToFloat();
  if (!(epsilon >= 0) || std::isinf(epsilon))
    return op.emitOpError()
           << "epsilon " << epsilon << " must be finite and >= 0";
  return success();
}

LogicalResult LayerNormOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  int64_t axis = getAxis();
  if (failed(verifyAxis(*this, axis, shape.size())))
    return failure();
  ArrayRef<int64_t> normalized = shape.drop_front(axis);
  if (failed(verifyEpsilon(*this)) ||
      failed(expectShape(*this, "scale", shapeOf(getScale()), normalized)))
    return failure();
  if (getBias() &&
      (failed(expectShape(*this, "bias", shapeOf(getBias()), normalized)) ||
       failed(expectSameElementType(*this, "bias", getBias(), getInput()))))
    return failure();
  if (getY().getType() != getInput().getType())
    return emitOpError("y must have the input's type");
  SmallVector<int64_t> reduced(shape);
  std::fill(reduced.begin() + axis, reduced.end(), 1);
  if (failed(expectShape(*this, "mean", shapeOf(getMean()), reduced)))
    return failure();
  return expectShape(*this, "inv_std_dev", shapeOf(getInvStdDev()), reduced);
}

LogicalResult BatchNormOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  if (shape.size() < 2)
    return emitOpError() << "expects an input of rank >= 2 ([N, C, ...]) but "
                            "got rank "
                         << shape.size();
  if (failed(verifyEpsilon(*this)))
    return failure();
  float momentum = getMomentum().convertToFloat();
  if (!(momentum >= 0 && momentum <= 1))
    return emitOpError() << "momentum " << momentum << " must be in [0, 1]";
  int64_t channels = shape[1];
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"scale", getScale()},
        {"bias", getBias()},
        {"running_mean", getRunningMean()},
        {"running_var", getRunningVar()},
        {"new_running_mean", getNewRunningMean()},
        {"new_running_var", getNewRunningVar()}})
    if (failed(expectShape(*this, name, shapeOf(value), {channels})))
      return failure();
  if (!getBatchStatistics().empty()) {
    if (!getTraining() || getBatchStatistics().size() != 2)
      return emitOpError("batch_statistics must be empty or, in training "
                         "mode, a mean and a variance");
    for (Value stat : getBatchStatistics())
      if (failed(expectShape(*this, "batch statistic", shapeOf(stat),
                             {channels})))
        return failure();
  }
  if (getY().getType() != getInput().getType())
    return emitOpError("y must have the input's type");
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Shared by the three reduce ops: axes ascending, in range; result shape.
template <typename ReduceOp>
static LogicalResult verifyReduce(ReduceOp op) {
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  ArrayRef<int64_t> axes = op.getAxes();
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (failed(verifyAxis(op, axis, shape.size(), "reduction axis")))
      return failure();
    if (i > 0 && axes[i - 1] >= axis)
      return op.emitOpError() << "axes " << formatShape(axes)
                              << " must be strictly ascending";
  }
  SmallVector<int64_t> expected;
  for (auto [dim, size] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(dim)))
      expected.push_back(size);
    else if (op.getKeepdims())
      expected.push_back(1);
  }
  return expectShape(op, "the result", shapeOf(op.getResult()), expected);
}

LogicalResult ReduceSumOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMaxOp::verify() { return verifyReduce(*this); }

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  int64_t in = shapedType(getInput()).getNumElements();
  int64_t out = shapedType(getResult()).getNumElements();
  if (in != out)
    return emitOpError() << "cannot reshape " << in << " elements "
                         << formatShape(shapeOf(getInput())) << " into " << out
                         << " elements " << formatShape(shapeOf(getResult()));
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  ArrayRef<int64_t> perm = getPermutation();
  if (failed(verifyLength(*this, "permutation", perm, shape.size())))
    return failure();
  llvm::SmallSet<int64_t, 8> seen;
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(shape.size()) ||
        !seen.insert(p).second)
      return emitOpError() << "permutation " << formatShape(perm)
                           << " is not a permutation of 0.."
                           << shape.size() - 1;
    expected.push_back(shape[p]);
  }
  return expectShape(*this, "the result", shapeOf(getResult()), expected);
}

LogicalResult BroadcastToOp::verify() {
  SmallVector<int64_t> broadcast;
  ArrayRef<int64_t> target = shapeOf(getResult());
  if (!mlir::OpTrait::util::getBroadcastedShape(shapeOf(getInput()), target,
                                                broadcast) ||
      ArrayRef<int64_t>(broadcast) != target)
    return emitOpError() << "cannot broadcast "
                         << formatShape(shapeOf(getInput())) << " to "
                         << formatShape(target);
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("expects at least one input");
  ArrayRef<int64_t> first = shapeOf(getInputs().front());
  if (failed(verifyAxis(*this, getAxis(), first.size())))
    return failure();
  SmallVector<int64_t> expected(first);
  expected[getAxis()] = 0;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    ArrayRef<int64_t> shape = shapeOf(input);
    if (shape.size() != first.size())
      return emitOpError() << "input #" << index << " has rank " << shape.size()
                           << " but input #0 has rank " << first.size();
    for (auto [dim, size] : llvm::enumerate(shape))
      if (static_cast<int64_t>(dim) != getAxis() && size != first[dim])
        return emitOpError() << "input #" << index << " has shape "
                             << formatShape(shape)
                             << ", which differs from input #0 "
                             << formatShape(first) << " outside axis "
                             << getAxis();
    expected[getAxis()] += shape[getAxis()];
  }
  return expectShape(*this, "the result", shapeOf(getResult()), expected);
}

LogicalResult SplitOp::verify() {
  if (getResults().empty())
    return emitOpError("expects at least one result");
  ArrayRef<int64_t> shape = shapeOf(getInput());
  if (failed(verifyAxis(*this, getAxis(), shape.size())))
    return failure();
  int64_t total = 0;
  for (auto [index, result] : llvm::enumerate(getResults())) {
    if (shapeOf(result).size() != shape.size())
      return emitOpError() << "result #" << index << " has rank "
                           << shapeOf(result).size() << " but the input has rank "
                           << shape.size();
    SmallVector<int64_t> expected(shape);
    expected[getAxis()] = shapeOf(result)[getAxis()];
    if (failed(expectShape(*this, "result #" + std::to_string(index),
                           shapeOf(result), expected)))
      return failure();
    total += expected[getAxis()];
  }
  if (total != shape[getAxis()])
    return emitOpError() << "pieces along axis " << getAxis() << " sum to "
                         << total << " but the input has " << shape[getAxis()];
  return success();
}

LogicalResult SliceOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  ArrayRef<int64_t> offsets = getOffsets(), strides = getStrides();
  if (out.size() != in.size())
    return emitOpError() << "result rank " << out.size()
                         << " differs from input rank " << in.size();
  if (failed(verifyLength(*this, "offsets", offsets, in.size())) ||
      failed(verifyLength(*this, "strides", strides, in.size())))
    return failure();
  for (size_t dim = 0; dim < in.size(); ++dim) {
    if (strides[dim] == 0)
      return emitOpError() << "stride of dimension " << dim << " is zero";
    if (out[dim] == 0)
      continue;
    int64_t first = offsets[dim], span, last;
    if (llvm::MulOverflow(out[dim] - 1, strides[dim], span) ||
        llvm::AddOverflow(first, span, last) || first < 0 ||
        first >= in[dim] || last < 0 || last >= in[dim])
      return emitOpError() << "dimension " << dim << " reads indices "
                           << "from " << first << " in " << out[dim]
                           << " steps of " << strides[dim]
                           << ", outside the input's extent " << in[dim];
  }
  return success();
}

LogicalResult GatherOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData());
  if (failed(verifyAxis(*this, getAxis(), data.size())))
    return failure();
  SmallVector<int64_t> expected(data.take_front(getAxis()));
  llvm::append_range(expected, shapeOf(getIndices()));
  llvm::append_range(expected, data.drop_front(getAxis() + 1));
  return expectShape(*this, "the result", shapeOf(getResult()), expected);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// ONNX's output size of one spatial dimension of a sliding window.
static int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                                int64_t dilation, int64_t padBegin,
                                int64_t padEnd, bool ceilMode) {
  int64_t span = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // A window may not start inside the end padding.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

/// Verifies strides/pads/dilations of a k-d sliding window and computes the
/// spatial output sizes.
static LogicalResult verifyWindow(Operation *op, ArrayRef<int64_t> spatial,
                                  ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> pads,
                                  ArrayRef<int64_t> dilations, bool ceilMode,
                                  SmallVectorImpl<int64_t> &outSizes) {
  size_t k = spatial.size();
  if (failed(verifyLength(op, "kernel_shape", kernel, k)) ||
      failed(verifyLength(op, "strides", strides, k)) ||
      failed(verifyLength(op, "pads", pads, 2 * k)) ||
      failed(verifyLength(op, "dilations", dilations, k)) ||
      failed(verifyAtLeast(op, "strides", strides, 1)) ||
      failed(verifyAtLeast(op, "dilations", dilations, 1)) ||
      failed(verifyAtLeast(op, "kernel_shape", kernel, 1)) ||
      failed(verifyAtLeast(op, "pads", pads, 0)))
    return failure();
  for (size_t i = 0; i < k; ++i) {
    int64_t out = windowOutputSize(spatial[i], kernel[i], strides[i],
                                   dilations[i], pads[i], pads[i + k], ceilMode);
    if (out <= 0)
      return op->emitOpError() << "window of extent "
                               << dilations[i] * (kernel[i] - 1) + 1
                               << " does not fit spatial dimension " << i
                               << " of size " << spatial[i] << " with padding";
    outSizes.push_back(out);
  }
  return success();
}

LogicalResult ConvOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), w = shapeOf(getWeight());
  if (in.size() < 3 || w.size() != in.size())
    return emitOpError() << "expects input [N, C, D...] and weight "
                            "[M, C/group, K...] of one rank >= 3, got "
                         << formatShape(in) << " and " << formatShape(w);
  int64_t group = getGroup();
  if (group < 1 || in[1] % group != 0 || w[0] % group != 0)
    return emitOpError() << "group " << group << " must divide the "
                         << in[1] << " input channels and the " << w[0]
                         << " output channels";
  if (w[1] != in[1] / group)
    return emitOpError() << "weight has " << w[1]
                         << " channels per group but the input has "
                         << in[1] / group;
  if (getBias() &&
      (failed(expectShape(*this, "bias", shapeOf(getBias()), {w[0]})) ||
       failed(expectSameElementType(*this, "bias", getBias(), getInput()))))
    return failure();
  SmallVector<int64_t> expected{in[0], w[0]};
  if (failed(verifyWindow(*this, in.drop_front(2), w.drop_front(2),
                          getStrides(), getPads(), getDilations(),
                          /*ceilMode=*/false, expected)))
    return failure();
  return expectShape(*this, "the result", shapeOf(getResult()), expected);
}

/// Shared by max_pool and avg_pool.
static LogicalResult verifyPool(Operation *op, Value input, Value result,
                                ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads,
                                ArrayRef<int64_t> dilations, bool ceilMode) {
  ArrayRef<int64_t> in = shapeOf(input);
  if (in.size() < 3)
    return op->emitOpError() << "expects an input [N, C, D...] of rank >= 3, "
                                "got "
                             << formatShape(in);
  SmallVector<int64_t> expected{in[0], in[1]};
  if (failed(verifyWindow(op, in.drop_front(2), kernel, strides, pads,
                          dilations, ceilMode, expected)))
    return failure();
  size_t k = kernel.size();
  for (size_t i = 0; i < k; ++i)
    if (pads[i] >= kernel[i] || pads[i + k] >= kernel[i])
      return op->emitOpError() << "pads " << formatShape(pads)
                               << " must be smaller than kernel_shape "
                               << formatShape(kernel);
  return expectShape(op, "the result", shapeOf(result), expected);
}

LogicalResult MaxPoolOp::verify() {
  return verifyPool(*this, getInput(), getResult(), getKernelShape(),
                    getStrides(), getPads(), getDilations(), getCeilMode());
}

LogicalResult AvgPoolOp::verify() {
  SmallVector<int64_t> unitDilations(
      std::max<int64_t>(shapedType(getInput()).getRank() - 2, 0), 1);
  return verifyPool(*this, getInput(), getResult(), getKernelShape(),
                    getStrides(), getPads(), unitDilations, getCeilMode());
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::verify() {
  if (getLogProb().getType() != getScores().getType())
    return emitOpError("log_prob must have the type of scores");
  return verifyClassLoss(*this, getScores(), getLabels(), getWeights(),
                         getReduction(), getLoss());
}

LogicalResult NllLossOp::verify() {
  return verifyClassLoss(*this, getInput(), getTarget(), getWeight(),
                         getReduction(), getLoss());
}

//===----------------------------------------------------------------------===//
// ONNX training
//===----------------------------------------------------------------------===//

LogicalResult GradientOp::verify() {
  size_t numXs = getXs().size(), numZs = getZs().size();
  if (getInputs().size() != numXs + numZs)
    return emitOpError() << "has " << getInputs().size() << " inputs but xs ("
                         << numXs << ") and zs (" << numZs << ") name "
                         << numXs + numZs;
  if (getGradients().size() != numXs)
    return emitOpError() << "has " << getGradients().size()
                         << " results but xs names " << numXs;
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getGradients(), getInputs())))
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError() << "gradient #" << index
                           << " must have the type of its input";
  return success();
}

LogicalResult GradientOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto model =
      symbols.lookupNearestSymbolFrom<func::FuncOp>(*this, getModelAttr());
  if (!model)
    return emitOpError() << "model " << getModelAttr()
                         << " does not name a func.func";
  auto argumentType = [&](StringRef name) -> Type {
    for (unsigned i = 0, e = model.getNumArguments(); i < e; ++i)
      for (StringRef kind :
           {CleaveDialect::kParamAttrName, CleaveDialect::kInputAttrName})
        if (auto attr = model.getArgAttrOfType<StringAttr>(i, kind))
          if (attr.getValue() == name)
            return model.getArgument(i).getType();
    return {};
  };
  SmallVector<Attribute> names(getXs().getValue());
  llvm::append_range(names, getZs().getValue());
  for (auto [name, input] : llvm::zip(names, getInputs())) {
    StringRef text = cast<StringAttr>(name).getValue();
    Type type = argumentType(text);
    if (!type)
      return emitOpError() << "'" << text << "' is not a parameter or input of "
                           << getModelAttr();
    if (type != input.getType())
      return emitOpError() << "input for '" << text << "' has type "
                           << input.getType() << " but the model argument has "
                           << type;
  }
  for (unsigned i = 0, e = model.getNumResults(); i < e; ++i)
    if (auto attr = model.getResultAttrOfType<StringAttr>(
            i, CleaveDialect::kOutputAttrName))
      if (attr.getValue() == getY())
        return success();
  return emitOpError() << "y '" << getY() << "' is not an output of "
                       << getModelAttr();
}

LogicalResult MomentumOp::verify() {
  return verifyOptimizer(*this, getParams(),
                         {{"grads", getGrads()},
                          {"velocities", getVelocities()}},
                         /*resultGroups=*/2);
}

LogicalResult AdamOp::verify() {
  return verifyOptimizer(*this, getParams(),
                         {{"grads", getGrads()},
                          {"first_moments", getFirstMoments()},
                          {"second_moments", getSecondMoments()}},
                         /*resultGroups=*/3);
}

LogicalResult AdagradOp::verify() {
  return verifyOptimizer(*this, getParams(),
                         {{"grads", getGrads()},
                          {"accumulators", getAccumulators()}},
                         /*resultGroups=*/2);
}

//===----------------------------------------------------------------------===//
// Gradients and PyTorch optimizers
//===----------------------------------------------------------------------===//

/// Checks that every value in `values` has the type of the first.
static LogicalResult expectSameTypes(Operation *op, StringRef what,
                                     ArrayRef<Value> values) {
  for (Value value : values.drop_front())
    if (value.getType() != values.front().getType())
      return op->emitOpError() << what << " must have one type, but "
                               << values.front().getType() << " and "
                               << value.getType() << " differ";
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(*this, getAxis(), shapedType(getOutput()).getRank());
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(expectSameTypes(*this, "output_grad, input and input_grad",
                             {getOutputGrad(), getInput(), getInputGrad()})) ||
      failed(expectSameTypes(*this, "scale, scale_grad and bias_grad",
                             {getScale(), getScaleGrad(), getBiasGrad()})))
    return failure();
  return verifyAxis(*this, getAxis(), shapedType(getInput()).getRank());
}

LogicalResult BatchNormGradOp::verify() {
  return failure(
      failed(expectSameTypes(*this, "output_grad, input and input_grad",
                             {getOutputGrad(), getInput(), getInputGrad()})) ||
      failed(expectSameTypes(*this, "scale, scale_grad and bias_grad",
                             {getScale(), getScaleGrad(), getBiasGrad()})));
}

LogicalResult MaxPoolGradOp::verify() {
  return expectSameTypes(*this, "input and input_grad",
                         {getInput(), getInputGrad()});
}

LogicalResult GatherGradOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getDataGrad());
  if (failed(verifyAxis(*this, getAxis(), data.size())))
    return failure();
  SmallVector<int64_t> expected(data.take_front(getAxis()));
  llvm::append_range(expected, shapeOf(getIndices()));
  llvm::append_range(expected, data.drop_front(getAxis() + 1));
  return expectShape(*this, "output_grad", shapeOf(getOutputGrad()), expected);
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  if (getScoresGrad().getType() != getLogProb().getType())
    return emitOpError("scores_grad must have the type of log_prob");
  return success();
}

LogicalResult SgdOp::verify() {
  SmallVector<Value> values{getParam(), getGrad()};
  if (getMomentumBuffer())
    values.push_back(getMomentumBuffer());
  llvm::append_range(values, getUpdated());
  if (failed(expectSameTypes(*this, "param, grad, buffer and results", values)))
    return failure();
  bool hasBuffer = getMomentumBuffer() != nullptr;
  if (hasBuffer != (getMomentum().convertToFloat() != 0.0f))
    return emitOpError("has a momentum buffer exactly when momentum != 0");
  if (getUpdated().size() != (hasBuffer ? 2u : 1u))
    return emitOpError() << "yields " << getUpdated().size()
                         << " results but " << (hasBuffer ? 2 : 1)
                         << " were expected (the parameter"
                         << (hasBuffer ? " and the buffer)" : ")");
  return success();
}

LogicalResult AdamwOp::verify() {
  return expectSameTypes(*this, "param, grad, moments and results",
                         {getParam(), getGrad(), getExpAvg(), getExpAvgSq(),
                          getNewParam(), getNewExpAvg(), getNewExpAvgSq()});
}

LogicalResult LrScheduleOp::verify() {
  StringRef schedule = getSchedule();
  if (schedule != "constant" && schedule != "linear" && schedule != "cosine")
    return emitOpError() << "schedule '" << schedule
                         << "' is not one of constant, linear, cosine";
  int64_t warmup = getWarmupStepsAttr().getInt(),
          total = getTotalStepsAttr().getInt();
  float minimum = getMinFactor().convertToFloat();
  if (warmup < 0)
    return emitOpError() << "warmup_steps " << warmup << " must be >= 0";
  if (!(minimum >= 0 && minimum <= 1))
    return emitOpError() << "min_factor " << minimum << " must be in [0, 1]";
  if (schedule != "constant" && total <= warmup)
    return emitOpError() << "total_steps " << total
                         << " must exceed warmup_steps " << warmup
                         << " for a decaying schedule";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/cleave/CleaveOps.cpp.inc"
