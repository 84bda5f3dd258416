//===- TensorBuilder.cpp - build cleave ops with inferred types -----------===//

#include "dialects/cleave/TensorBuilder.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Matchers.h"

#include <numeric>

namespace mlir::cleave {

Value TensorBuilder::scalar(Type element, double value) {
  return splat(RankedTensorType::get({}, element), value);
}

Value TensorBuilder::zerosLike(Type type) {
  return splat(cast<RankedTensorType>(type), 0.0);
}

Value TensorBuilder::splat(RankedTensorType type, double value) {
  Type element = type.getElementType();
  Attribute attr = isa<IntegerType>(element)
                       ? Attribute(b.getIntegerAttr(
                             element, static_cast<int64_t>(value)))
                       : Attribute(b.getFloatAttr(element, value));
  return splat(type, attr);
}

// A large constant of one non-zero value is a scalar broadcast: programs
// embed only zero splats as arrays, and the broadcast fuses into its users.
Value TensorBuilder::splat(RankedTensorType type, Attribute element) {
  bool zero = matchPattern(element, m_Zero()) ||
              matchPattern(element, m_AnyZeroFloat());
  if (type.getNumElements() <= 1 || zero)
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, element));
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  Value scalar =
      ConstantOp::create(b, loc, DenseElementsAttr::get(scalarType, element));
  return broadcastTo(scalar, type.getShape());
}

Value TensorBuilder::indices(ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getI64Type());
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
}

RankedTensorType TensorBuilder::broadcastType(Value lhs, Value rhs,
                                              Type element) {
  SmallVector<int64_t> shape;
  mlir::OpTrait::util::getBroadcastedShape(typeOf(lhs).getShape(),
                                     typeOf(rhs).getShape(), shape);
  return RankedTensorType::get(shape, element);
}

Value TensorBuilder::less(Value lhs, Value rhs) {
  return LessOp::create(b, loc, broadcastType(lhs, rhs, b.getI1Type()), lhs,
                        rhs);
}

Value TensorBuilder::equal(Value lhs, Value rhs) {
  return EqualOp::create(b, loc, broadcastType(lhs, rhs, b.getI1Type()), lhs,
                         rhs);
}

Value TensorBuilder::where(Value cond, Value onTrue, Value onFalse) {
  SmallVector<int64_t> shape, both;
  mlir::OpTrait::util::getBroadcastedShape(typeOf(onTrue).getShape(),
                                     typeOf(onFalse).getShape(), both);
  mlir::OpTrait::util::getBroadcastedShape(typeOf(cond).getShape(), both, shape);
  return WhereOp::create(
      b, loc, RankedTensorType::get(shape, elementTypeOf(onTrue)), cond,
      onTrue, onFalse);
}

// where(a < b, b, a) keeps a NaN in `a` (the comparison is false) but not
// one in `b`; a second select makes both propagate, as torch.maximum does.
Value TensorBuilder::maximum(Value lhs, Value rhs) {
  Value picked = where(less(lhs, rhs), rhs, lhs);
  if (!isa<FloatType>(elementTypeOf(lhs)))
    return picked;
  return where(equal(rhs, rhs), picked, rhs);
}

Value TensorBuilder::minimum(Value lhs, Value rhs) {
  Value picked = where(less(rhs, lhs), rhs, lhs);
  if (!isa<FloatType>(elementTypeOf(lhs)))
    return picked;
  return where(equal(rhs, rhs), picked, rhs);
}

Value TensorBuilder::castTo(Value value, Type element) {
  if (elementTypeOf(value) == element)
    return value;
  return CastOp::create(
      b, loc, RankedTensorType::get(typeOf(value).getShape(), element), value);
}

Value TensorBuilder::abs(Value value) {
  Value zero = scalarLike(value, 0.0);
  return add(where(less(zero, value), value, zero),
             where(less(value, zero), neg(value), zero));
}

Value TensorBuilder::sqrtZeroSafe(Value value) {
  Value zero = scalarLike(value, 0.0);
  Value isZero = equal(value, zero);
  Value safe = where(isZero, scalarLike(value, 1.0), value);
  return where(isZero, zero, unary<SqrtOp>(safe));
}

Value TensorBuilder::reshape(Value value, ArrayRef<int64_t> shape) {
  if (typeOf(value).getShape() == shape)
    return value;
  return ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, elementTypeOf(value)), value);
}

Value TensorBuilder::transpose(Value value, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(typeOf(value).getDimSize(p));
  return TransposeOp::create(
      b, loc, RankedTensorType::get(shape, elementTypeOf(value)), value,
      b.getDenseI64ArrayAttr(perm));
}

Value TensorBuilder::transposeLast2(Value value) {
  int64_t rank = typeOf(value).getRank();
  SmallVector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return transpose(value, perm);
}

Value TensorBuilder::broadcastTo(Value value, ArrayRef<int64_t> shape) {
  if (typeOf(value).getShape() == shape)
    return value;
  return BroadcastToOp::create(
      b, loc, RankedTensorType::get(shape, elementTypeOf(value)), value);
}

Value TensorBuilder::gather(Value data, ArrayRef<int64_t> indexValues,
                            int64_t axis) {
  SmallVector<int64_t> shape(typeOf(data).getShape());
  shape[axis] = indexValues.size();
  return GatherOp::create(b, loc,
                          RankedTensorType::get(shape, elementTypeOf(data)),
                          data, indices(indexValues),
                          b.getI64IntegerAttr(axis));
}

Value TensorBuilder::concat(ArrayRef<Value> inputs, int64_t axis) {
  if (inputs.size() == 1)
    return inputs.front();
  SmallVector<int64_t> shape(typeOf(inputs.front()).getShape());
  shape[axis] = 0;
  for (Value input : inputs)
    shape[axis] += typeOf(input).getDimSize(axis);
  return ConcatOp::create(
      b, loc, RankedTensorType::get(shape, elementTypeOf(inputs.front())),
      inputs, b.getI64IntegerAttr(axis));
}

Value TensorBuilder::sliceAxis(Value value, int64_t axis, int64_t start,
                               int64_t size) {
  RankedTensorType type = typeOf(value);
  if (start == 0 && size == type.getDimSize(axis))
    return value;
  SmallVector<int64_t> shape(type.getShape()), offsets(type.getRank(), 0),
      strides(type.getRank(), 1);
  shape[axis] = size;
  offsets[axis] = start;
  return SliceOp::create(b, loc,
                         RankedTensorType::get(shape, type.getElementType()),
                         value, b.getDenseI64ArrayAttr(offsets),
                         b.getDenseI64ArrayAttr(strides));
}

RankedTensorType TensorBuilder::reducedType(Value value,
                                            ArrayRef<int64_t> axes,
                                            bool keepdims) {
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(typeOf(value).getShape())) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      shape.push_back(d);
    else if (keepdims)
      shape.push_back(1);
  }
  return RankedTensorType::get(shape, elementTypeOf(value));
}

Value TensorBuilder::reduceTo(Value grad, Type target) {
  ArrayRef<int64_t> from = typeOf(grad).getShape();
  ArrayRef<int64_t> to = cast<RankedTensorType>(target).getShape();
  if (from == to)
    return grad;
  int64_t lead = from.size() - to.size();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < static_cast<int64_t>(from.size()); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  Value sum = axes.empty() ? grad : reduceSum(grad, axes, false);
  return reshape(sum, to);
}

RankedTensorType TensorBuilder::matmulType(Value lhs, Value rhs) {
  ArrayRef<int64_t> a = typeOf(lhs).getShape(), c = typeOf(rhs).getShape();
  SmallVector<int64_t> batch;
  mlir::OpTrait::util::getBroadcastedShape(a.drop_back(2), c.drop_back(2), batch);
  batch.push_back(a[a.size() - 2]);
  batch.push_back(c.back());
  return RankedTensorType::get(batch, elementTypeOf(lhs));
}

Value TensorBuilder::matmul(Value lhs, Value rhs) {
  return MatmulOp::create(b, loc, matmulType(lhs, rhs), lhs, rhs);
}

} // namespace mlir::cleave
