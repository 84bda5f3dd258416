//===- TensorBuilder.h - build cleave ops with inferred types ---*- C++ -*-===//
//
// Creates cleave ops from values alone, computing each result type (numpy
// broadcasting, reductions, transposes) the way the op's verifier expects.
// Autodiff builds gradients with it and the importer builds the
// decompositions of ONNX operators that are compositions of cleave ops
// (Clip, HardSwish, InstanceNormalization, Pad, Resize, Einsum, ...).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECTS_CLEAVE_TENSORBUILDER_H
#define CLEAVE_DIALECTS_CLEAVE_TENSORBUILDER_H

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::cleave {

class TensorBuilder {
public:
  TensorBuilder(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}

  static RankedTensorType typeOf(Value value) {
    return cast<RankedTensorType>(value.getType());
  }
  static Type elementTypeOf(Value value) {
    return typeOf(value).getElementType();
  }

  /// A rank-0 constant of `element` type (integers truncate `value`).
  Value scalar(Type element, double value);
  /// A rank-0 constant with `like`'s element type.
  Value scalarLike(Value like, double value) {
    return scalar(elementTypeOf(like), value);
  }
  Value zerosLike(Type type);
  /// A tensor with every element `value` (a non-zero one as a broadcast
  /// scalar).
  Value splat(RankedTensorType type, double value);
  /// The same with the element given as an attribute of the element type.
  Value splat(RankedTensorType type, Attribute element);
  /// A constant i64 tensor of shape {values.size()}.
  Value indices(ArrayRef<int64_t> values);

  RankedTensorType broadcastType(Value lhs, Value rhs, Type element);
  template <typename OpTy> Value binary(Value lhs, Value rhs) {
    return OpTy::create(b, loc,
                        broadcastType(lhs, rhs, elementTypeOf(lhs)), lhs, rhs);
  }
  template <typename OpTy> Value unary(Value value) {
    return OpTy::create(b, loc, value.getType(), value);
  }
  Value add(Value lhs, Value rhs) { return binary<AddOp>(lhs, rhs); }
  Value sub(Value lhs, Value rhs) { return binary<SubOp>(lhs, rhs); }
  Value mul(Value lhs, Value rhs) { return binary<MulOp>(lhs, rhs); }
  Value div(Value lhs, Value rhs) { return binary<DivOp>(lhs, rhs); }
  Value mul(Value lhs, double factor) {
    return mul(lhs, scalarLike(lhs, factor));
  }
  Value add(Value lhs, double term) { return add(lhs, scalarLike(lhs, term)); }
  Value neg(Value value) { return unary<NegOp>(value); }
  Value less(Value lhs, Value rhs);
  Value equal(Value lhs, Value rhs);
  Value where(Value cond, Value onTrue, Value onFalse);
  /// The elementwise maximum / minimum (NaN-propagating like torch's).
  Value maximum(Value lhs, Value rhs);
  Value minimum(Value lhs, Value rhs);
  Value castTo(Value value, Type element);
  /// |x|, with the gradient 0 at 0 (as torch.abs has).
  Value abs(Value value);
  /// sqrt(x) for x >= 0 whose gradient at 0 is 0, not inf * 0 (a norm of
  /// zeros: torch.norm's choice).
  Value sqrtZeroSafe(Value value);

  Value reshape(Value value, ArrayRef<int64_t> shape);
  Value transpose(Value value, ArrayRef<int64_t> perm);
  /// Swaps the last two dimensions.
  Value transposeLast2(Value value);
  Value broadcastTo(Value value, ArrayRef<int64_t> shape);
  Value gather(Value data, ArrayRef<int64_t> indexValues, int64_t axis);
  Value concat(ArrayRef<Value> inputs, int64_t axis);
  /// Elements [start, start + size) of dimension `axis`.
  Value sliceAxis(Value value, int64_t axis, int64_t start, int64_t size);

  template <typename ReduceOpTy>
  Value reduce(Value value, ArrayRef<int64_t> axes, bool keepdims) {
    return ReduceOpTy::create(b, loc, reducedType(value, axes, keepdims),
                              value, b.getDenseI64ArrayAttr(axes),
                              b.getBoolAttr(keepdims));
  }
  Value reduceSum(Value value, ArrayRef<int64_t> axes, bool keepdims) {
    return reduce<ReduceSumOp>(value, axes, keepdims);
  }
  static RankedTensorType reducedType(Value value, ArrayRef<int64_t> axes,
                                      bool keepdims);

  /// Sums a broadcast gradient back to the operand's shape.
  Value reduceTo(Value grad, Type target);

  /// numpy matmul's result type.
  RankedTensorType matmulType(Value lhs, Value rhs);
  Value matmul(Value lhs, Value rhs);

  OpBuilder &b;
  Location loc;
};

} // namespace mlir::cleave

#endif // CLEAVE_DIALECTS_CLEAVE_TENSORBUILDER_H
