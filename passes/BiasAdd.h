//===- BiasAdd.h - the bias add after a linear layer's product -*- C++ -*-===//
//
// PyTorch exports a Linear layer on activations of rank 3 or more as a
// MatMul and an Add of the bias vector; cleave-fold-transposes makes the
// bias a GEMM's c, cleave-linear-row-order keeps it with the product.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_BIASADD_H
#define CLEAVE_PASSES_BIASADD_H

#include "dialects/cleave/CleaveOps.h"

#include <utility>

namespace mlir::cleave {

/// The bias `add` adds to `product` (a vector of its last dimension that
/// leaves its shape unchanged), with the add; null when there is none.
inline std::pair<Value, AddOp> biasAddOf(Value product) {
  if (!product.hasOneUse())
    return {};
  auto add = dyn_cast<AddOp>(*product.user_begin());
  if (!add || add.getType() != product.getType())
    return {};
  Value bias = add.getLhs() == product ? add.getRhs() : add.getLhs();
  if (bias == product)
    return {};
  auto biasType = cast<RankedTensorType>(bias.getType());
  auto productType = cast<RankedTensorType>(product.getType());
  if (biasType.getRank() != 1 ||
      biasType.getDimSize(0) != productType.getShape().back())
    return {};
  return {bias, add};
}

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_BIASADD_H
