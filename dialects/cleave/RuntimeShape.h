//===- RuntimeShape.h - a tensor type as the runtime's Shape ----*- C++ -*-===//
//
// For the compiler's decisions that apply the runtime's own rules to an
// op's shapes (which convolution taps it crops, which path a convolution
// pass takes): runtime/ConvolutionLiveTaps.h, runtime/ConvolutionPath.h.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_RUNTIMESHAPE_H
#define CLEAVE_DIALECT_RUNTIMESHAPE_H

#include "runtime/Shape.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

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

} // namespace mlir::cleave

#endif // CLEAVE_DIALECT_RUNTIMESHAPE_H
