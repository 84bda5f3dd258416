//===- ImportTensor.cpp - shape, data movement and reductions -------------===//
//
// Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice,
// Gather, Expand, the Reduce operators, and the shape computations that
// become constants (ConstantOfShape, Range, Shape, Size). Shape-like inputs (Reshape's
// shape, Slice's starts, ReduceSum's axes) must be constants after shape
// arithmetic folding; they become attributes.
//
//===----------------------------------------------------------------------===//

#include "frontend/NodeImporter.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>

namespace mlir::cleave {

namespace {

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

/// Reshape, Flatten, Squeeze, Unsqueeze and Expand read their shape input
/// only to compute the output shape, which shape inference already did.
template <typename OpTy>
LogicalResult importReshapeLike(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  node.setOutput(0, node.create<OpTy>(*type, node.input(0)).getResult());
  return success();
}

/// Squeeze and Unsqueeze: ONNX 1.12's inference drops Squeeze axes out of
/// range without a word, so the axes are checked here before the reshape to
/// the inferred shape.
template <bool Unsqueeze> LogicalResult importSqueezeLike(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  if (node.hasInput(1)) {
    FailureOr<std::vector<int64_t>> axes = node.constantInts(1);
    if (failed(axes))
      return failure();
    ArrayRef<int64_t> in =
        cast<RankedTensorType>(node.input(0).getType()).getShape();
    int64_t rank = in.size() + (Unsqueeze ? axes->size() : 0);
    llvm::SmallDenseSet<int64_t> seen;
    for (int64_t axis : *axes) {
      FailureOr<int64_t> normalized = node.normalizeAxis(axis, rank);
      if (failed(normalized))
        return failure();
      if (!seen.insert(*normalized).second)
        return node.emitError() << "axis " << axis << " is given twice",
               failure();
    }
  }
  node.setOutput(0, node.create<ReshapeOp>(*type, node.input(0)).getResult());
  return success();
}

LogicalResult importTranspose(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  int64_t rank = rankOf(node.input(0));
  SmallVector<int64_t> perm;
  if (auto given = node.intsAttr("perm"))
    perm.assign(given->begin(), given->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  node.setOutput(0, node.create<TransposeOp>(
                            *type, node.input(0),
                            node.builder().getDenseI64ArrayAttr(perm))
                        .getResult());
  return success();
}

LogicalResult importConcat(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.intAttr("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < node.numInputs(); ++i)
    inputs.push_back(node.input(i));
  node.setOutput(0, node.create<ConcatOp>(*type, inputs,
                                          node.builder().getI64IntegerAttr(
                                              *axis))
                        .getResult());
  return success();
}

LogicalResult importSplit(NodeImporter &node) {
  SmallVector<Type> types;
  for (unsigned i = 0; i < node.numOutputs(); ++i) {
    FailureOr<RankedTensorType> type = node.outputType(i);
    if (failed(type))
      return failure();
    types.push_back(*type);
  }
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.intAttr("axis", 0), rankOf(node.input(0)));
  if (failed(axis))
    return failure();
  auto op = node.create<SplitOp>(types, node.input(0),
                                 node.builder().getI64IntegerAttr(*axis));
  node.setOutputs(op->getResults());
  return success();
}

/// ONNX Slice with constant starts/ends/axes/steps, normalized to per-dim
/// offsets and strides; the extent comes from the inferred output shape.
LogicalResult importSlice(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  FailureOr<std::vector<int64_t>> starts = node.constantInts(1);
  if (failed(type) || failed(starts) || failed(node.constantInts(2)))
    return failure();
  ArrayRef<int64_t> inShape =
      cast<RankedTensorType>(node.input(0).getType()).getShape();
  int64_t rank = inShape.size();
  std::vector<int64_t> axes, steps(starts->size(), 1);
  if (node.hasInput(3)) {
    FailureOr<std::vector<int64_t>> given = node.constantInts(3);
    if (failed(given))
      return failure();
    axes = *given;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (node.hasInput(4)) {
    FailureOr<std::vector<int64_t>> given = node.constantInts(4);
    if (failed(given))
      return failure();
    steps = *given;
  }
  if (axes.size() != starts->size() || steps.size() != starts->size())
    return node.emitError() << "starts, axes and steps must have one length";
  SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
  for (auto [i, axisValue] : llvm::enumerate(axes)) {
    FailureOr<int64_t> axis = node.normalizeAxis(axisValue, rank);
    if (failed(axis))
      return failure();
    int64_t dim = inShape[*axis], step = steps[i], start = (*starts)[i];
    if (step == 0)
      return node.emitError() << "step of axis " << *axis << " is zero";
    if (start < 0)
      start += dim;
    start = step > 0 ? std::clamp<int64_t>(start, 0, dim)
                     : std::clamp<int64_t>(start, 0, dim - 1);
    offsets[*axis] = start;
    strides[*axis] = step;
  }
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<SliceOp>(*type, node.input(0),
                                         b.getDenseI64ArrayAttr(offsets),
                                         b.getDenseI64ArrayAttr(strides))
                        .getResult());
  return success();
}

LogicalResult importGather(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.intAttr("axis", 0), rankOf(node.input(0)));
  if (failed(axis))
    return failure();
  // Constant indices are checked now; the kernels check computed ones.
  int64_t size =
      cast<RankedTensorType>(node.input(0).getType()).getDimSize(*axis);
  DenseIntElementsAttr indices;
  if (matchPattern(node.input(1), m_Constant(&indices)))
    for (const APInt &index : indices)
      if (index.getSExtValue() < -size || index.getSExtValue() >= size)
        return node.emitError()
                   << "index " << index.getSExtValue()
                   << " is out of range for axis " << *axis << " of size "
                   << size << " (expected [" << -size << ", " << size << "))",
               failure();
  node.setOutput(0, node.create<GatherOp>(*type, node.input(0), node.input(1),
                                          node.builder().getI64IntegerAttr(
                                              *axis))
                        .getResult());
  return success();
}

/// The normalized, sorted axes of a Reduce node: ReduceSum takes them as an
/// input from opset 13, the others as an attribute until opset 18. An
/// empty list means all axes, or none (nullopt: the identity) with
/// noop_with_empty_axes.
FailureOr<std::optional<SmallVector<int64_t>>>
reductionAxes(NodeImporter &node) {
  int64_t rank = rankOf(node.input(0));
  std::vector<int64_t> axes;
  if (node.hasInput(1)) {
    FailureOr<std::vector<int64_t>> given = node.constantInts(1);
    if (failed(given))
      return failure();
    axes = *given;
  } else if (auto given = node.intsAttr("axes")) {
    axes = *given;
  }
  if (axes.empty()) {
    if (node.intAttr("noop_with_empty_axes", 0))
      return std::optional<SmallVector<int64_t>>();
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  SmallVector<int64_t> normalized;
  for (int64_t axis : axes) {
    FailureOr<int64_t> n = node.normalizeAxis(axis, rank, "reduction axis");
    if (failed(n))
      return failure();
    normalized.push_back(*n);
  }
  llvm::sort(normalized);
  normalized.erase(llvm::unique(normalized), normalized.end());
  return std::optional<SmallVector<int64_t>>(normalized);
}

/// The reductions with an op of their own.
template <typename OpTy>
LogicalResult importReduce(NodeImporter &node) {
  FailureOr<std::optional<SmallVector<int64_t>>> axes = reductionAxes(node);
  if (failed(axes))
    return failure();
  if (!*axes) {
    node.setOutput(0, node.input(0));
    return success();
  }
  node.setOutput(0, node.tensors().reduce<OpTy>(node.input(0), **axes,
                                                node.intAttr("keepdims", 1)));
  return success();
}

/// The reductions written with others: ReduceL1, ReduceL2, ReduceSumSquare,
/// ReduceMin and ReduceLogSumExp.
enum class ComposedReduction { L1, L2, SumSquare, Min, LogSumExp };

template <ComposedReduction Kind>
LogicalResult importComposedReduce(NodeImporter &node) {
  FailureOr<std::optional<SmallVector<int64_t>>> axes = reductionAxes(node);
  if (failed(axes))
    return failure();
  TensorBuilder t = node.tensors();
  Value x = node.input(0);
  if (!isa<FloatType>(t.elementTypeOf(x)))
    return node.emitError() << "expects a float input", failure();
  bool keep = node.intAttr("keepdims", 1);
  Value y;
  if (!*axes) {
    // noop_with_empty_axes: the elementwise part only.
    switch (Kind) {
    case ComposedReduction::L1:
      y = t.abs(x);
      break;
    case ComposedReduction::SumSquare:
      y = t.mul(x, x);
      break;
    case ComposedReduction::L2:
      y = t.abs(x);
      break;
    default:
      y = x;
    }
    node.setOutput(0, y);
    return success();
  }
  ArrayRef<int64_t> dims = **axes;
  switch (Kind) {
  case ComposedReduction::L1:
    y = t.reduceSum(t.abs(x), dims, keep);
    break;
  case ComposedReduction::SumSquare:
    y = t.reduceSum(t.mul(x, x), dims, keep);
    break;
  case ComposedReduction::L2:
    y = t.sqrtZeroSafe(t.reduceSum(t.mul(x, x), dims, keep));
    break;
  case ComposedReduction::Min:
    y = t.neg(t.reduce<ReduceMaxOp>(t.neg(x), dims, keep));
    break;
  case ComposedReduction::LogSumExp: {
    // m + log(sum(exp(x - m))) with m the maximum (its gradient cancels),
    // 0 where a slice is all -inf so that the result is -inf, not NaN.
    Value m = t.reduce<ReduceMaxOp>(x, dims, true);
    Value negInf = t.scalarLike(x, -std::numeric_limits<double>::infinity());
    m = t.where(t.equal(m, negInf), t.scalarLike(x, 0), m);
    Value sum = t.reduceSum(t.unary<ExpOp>(t.sub(x, m)), dims, true);
    y = t.add(t.unary<LogOp>(sum), m);
    if (!keep)
      y = t.reshape(y, TensorBuilder::reducedType(x, dims, false).getShape());
    break;
  }
  }
  node.setOutput(0, y);
  return success();
}

/// ConstantOfShape: the shape is folded at load time, so the result is a
/// splat of `value` (default float 0) with the inferred type.
LogicalResult importConstantOfShape(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  Attribute element;
  if (const auto *attr = node.findAttr("value")) {
    FailureOr<DenseElementsAttr> value = node.tensorAttr(attr->t());
    if (failed(value))
      return failure();
    if (value->getNumElements() != 1)
      return node.emitError() << "value must hold one element", failure();
    element = *value->value_begin<Attribute>();
  } else {
    element = node.builder().getF32FloatAttr(0.0f);
  }
  if (cast<TypedAttr>(element).getType() != type->getElementType())
    return node.emitError() << "value's type does not match the output's",
           failure();
  node.setOutput(0, node.tensors().splat(*type, element));
  return success();
}

/// Range with constant start, limit and delta (integer ranges are folded at
/// load time; this also covers float ones).
LogicalResult importRange(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  FailureOr<double> start = node.constantScalar(0);
  FailureOr<double> delta = node.constantScalar(2);
  if (failed(type) || failed(start) || failed(node.constantScalar(1)) ||
      failed(delta))
    return failure();
  OpBuilder &b = node.builder();
  Type element = type->getElementType();
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < type->getNumElements(); ++i) {
    double v = *start + i * *delta;
    values.push_back(isa<FloatType>(element)
                         ? Attribute(b.getFloatAttr(element, v))
                         : Attribute(b.getIntegerAttr(
                               element, static_cast<int64_t>(v))));
  }
  node.setOutput(
      0, node.create<ConstantOp>(DenseElementsAttr::get(*type, values))
             .getResult());
  return success();
}

/// Shape and Size of a value whose shape is static (every value is, once
/// imported): constants. Load-time folding handles most; this covers what
/// shape inference left without a static type.
template <bool IsSize> LogicalResult importShapeOf(NodeImporter &node) {
  RankedTensorType in = TensorBuilder::typeOf(node.input(0));
  SmallVector<int64_t> values;
  if (IsSize) {
    values.push_back(in.getNumElements());
  } else {
    int64_t rank = in.getRank();
    int64_t start = node.intAttr("start", 0), end = node.intAttr("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, start, rank);
    values.assign(in.getShape().begin() + start, in.getShape().begin() + end);
  }
  SmallVector<int64_t> shape;
  if (!IsSize)
    shape.push_back(values.size());
  auto type = RankedTensorType::get(shape, node.builder().getI64Type());
  node.setOutput(0, node.create<ConstantOp>(
                            DenseElementsAttr::get(type, ArrayRef(values)))
                        .getResult());
  return success();
}

} // namespace

void registerTensorImporters(OpImportTable &table) {
  table["Reshape"] = importReshapeLike<ReshapeOp>;
  table["Flatten"] = importReshapeLike<ReshapeOp>;
  table["Squeeze"] = importSqueezeLike</*Unsqueeze=*/false>;
  table["Unsqueeze"] = importSqueezeLike</*Unsqueeze=*/true>;
  table["Transpose"] = importTranspose;
  table["Concat"] = importConcat;
  table["Split"] = importSplit;
  table["Slice"] = importSlice;
  table["Gather"] = importGather;
  table["Expand"] = importReshapeLike<BroadcastToOp>;
  table["ReduceSum"] = importReduce<ReduceSumOp>;
  table["ReduceMean"] = importReduce<ReduceMeanOp>;
  table["ReduceMax"] = importReduce<ReduceMaxOp>;
  table["ReduceMin"] = importComposedReduce<ComposedReduction::Min>;
  table["ReduceL1"] = importComposedReduce<ComposedReduction::L1>;
  table["ReduceL2"] = importComposedReduce<ComposedReduction::L2>;
  table["ReduceSumSquare"] = importComposedReduce<ComposedReduction::SumSquare>;
  table["ReduceLogSumExp"] = importComposedReduce<ComposedReduction::LogSumExp>;
  table["ConstantOfShape"] = importConstantOfShape;
  table["Range"] = importRange;
  table["Shape"] = importShapeOf</*IsSize=*/false>;
  table["Size"] = importShapeOf</*IsSize=*/true>;
}

} // namespace mlir::cleave
