//===- RuntimeShape.h - a tensor type as the runtime's Shape ----*- C++ -*-===//
//
// For the compiler's decisions that apply the runtime's own rules to an
// op's shapes (which convolution taps it crops, which path a convolution
// pass takes): runtime/ConvolutionLiveTaps.h, runtime/ConvolutionPath.h.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_RUNTIMESHAPE_H
#define CLEAVE_DIALECT_RUNTIMESHAPE_H

#include "runtime/ConvolutionLiveTaps.h"
#include "runtime/Shape.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::cleave {

/// `value`'s static shape as the runtime holds it; rank 0 where it has no
/// static shape or more dims than the runtime's Shape.
inline ::cleave::rt::Shape runtimeShape(Value value) {
  ::cleave::rt::Shape shape;
  auto type = dyn_cast<ShapedType>(value.getType());
  if (!type || !type.hasStaticShape() ||
      type.getRank() > ::cleave::rt::kMaxRank)
    return shape;
  for (int64_t d : type.getShape())
    shape.dims[shape.rank++] = d;
  return shape;
}

/// The crop the runtime makes of convolution pass `op` (any op with the
/// conv attributes) of input `x`, kernel `w` and output `y` when some of
/// its taps read only padding (rt::cropDeadTaps); none otherwise.
template <typename ConvLike>
std::optional<::cleave::rt::ConvCrop> deadTapCrop(ConvLike op, Value x, Value w,
                                                  Value y) {
  ::cleave::rt::ConvCrop crop;
  if (!::cleave::rt::cropDeadTaps(runtimeShape(x), runtimeShape(w),
                                  runtimeShape(y), op.getStrides().data(),
                                  op.getPads().data(), op.getDilations().data(),
                                  crop))
    return std::nullopt;
  return crop;
}

} // namespace mlir::cleave

#endif // CLEAVE_DIALECT_RUNTIMESHAPE_H
