//===- Kernels.h - the cpu target's tensor kernels --------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Generated training
// programs call these, one call per cleave op; the list (KernelApi.inc) is
// the cuda target's too. Elementwise math lives in ElementwiseBodies.h,
// shared with the cuda target.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_H
#define CLEAVE_RUNTIME_KERNELS_H

#include "runtime/KernelTypes.h"
#include "runtime/Shape.h"

#include <cstdint>

namespace cleave::rt {

#include "runtime/KernelApi.inc"

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_H
