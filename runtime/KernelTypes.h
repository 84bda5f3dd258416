//===- KernelTypes.h - argument types of both targets' kernels -*- C++ -*-===//
//
// Part of the Cleave runtime: the argument types the cpu kernels (Kernels.h)
// and the cuda kernels (cuda/CudaKernels.h) have in common.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELTYPES_H
#define CLEAVE_RUNTIME_KERNELTYPES_H

#include "runtime/Shape.h"

namespace cleave::rt {

enum class Reduction { None = 0, Sum = 1, Mean = 2 };
enum class ReduceKind { Sum, Mean, Max };

/// Attention's scale and mask around a softmax along an axis, applied in
/// the softmax's line loop so that the scaled and masked scores are never
/// stored (codegen/FusionPlan.h, SoftmaxFusion). softmaxMasked reads
/// where(condition == keepWhen, x * scale + mask, fill); softmaxGradMasked
/// writes where(condition == keepWhen, dx, fill) * scale. Each part is
/// optional (a null pointer), `divide` makes "* scale" a division, at most
/// one of mask and condition is given, and its shape numpy-broadcasts to
/// the softmax's. Scalars are one-element tensors; on the cuda target every
/// pointer is device memory.
struct SoftmaxMasking {
  const float *scale = nullptr;
  bool divide = false;
  /// An additive mask (softmaxMasked only).
  const float *mask = nullptr;
  const bool *condition = nullptr;
  bool keepWhen = true;
  const float *fill = nullptr;
  /// The shape of `mask` or `condition`.
  Shape maskShape;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELTYPES_H
