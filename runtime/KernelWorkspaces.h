//===- KernelWorkspaces.h - what the cpu kernels hold beside the plan ----===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The memory plan places
// every tensor of a step; two kinds of cpu kernels keep memory of their
// own for the whole run, each as large as its largest call needs: oneDNN's
// convolutions (operand copies in oneDNN's layouts, scratchpads:
// OneDnnConvolution.h), matmulStrided's gather buffer for small products
// (MatmulGeometry.h) and the skinny kernels' transposed operands
// (GemmDispatch.h, SkinnyBuffers). The planner predicts them
// (planner/CpuWorkspace.h); --print-memory-peak reports what they hold.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELWORKSPACES_H
#define CLEAVE_RUNTIME_KERNELWORKSPACES_H

#include "runtime/OneDnnConvolution.h"

#include <atomic>
#include <cstdint>

namespace cleave::rt {

namespace detail {
/// Kept by matmulStrided's buffers as they grow (KernelsLinalg.cpp).
inline std::atomic<int64_t> stridedProductBufferBytes{0};
/// Kept by the skinny kernels' buffers as they grow (SkinnyGemm.cpp).
inline std::atomic<int64_t> skinnyBufferBytes{0};
} // namespace detail

/// The bytes the cpu kernels' own workspaces hold now.
inline int64_t kernelWorkspaceBytes() {
  return oneDnnWorkspaceBytes() + detail::stridedProductBufferBytes.load() +
         detail::skinnyBufferBytes.load();
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELWORKSPACES_H
