//===- KernelTypes.h - enums shared by both targets' kernels ----*- C++ -*-===//
//
// Part of the Cleave runtime: the argument types the cpu kernels (Kernels.h)
// and the cuda kernels (cuda/CudaKernels.h) have in common.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELTYPES_H
#define CLEAVE_RUNTIME_KERNELTYPES_H

namespace cleave::rt {

enum class Reduction { None = 0, Sum = 1, Mean = 2 };
enum class ReduceKind { Sum, Mean, Max };

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELTYPES_H
