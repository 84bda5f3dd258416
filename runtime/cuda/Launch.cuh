//===- Launch.cuh - work-item functors over an index range -----*- CUDA -*-===//
//
// Part of the Cleave runtime's cuda backend. Every cuda kernel of the
// runtime is a functor of the *Bodies.h headers, `CLEAVE_HD void
// operator()(int64_t i) const` doing work item i, launched here over
// [0, n). runOnHost (the shared-body tests) calls the same functor in a
// plain loop, which is how the cpu checks the math the GPU runs; so does
// launch itself in the host emulation (CudaHostEmulation.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_LAUNCH_CUH
#define CLEAVE_RUNTIME_CUDA_LAUNCH_CUH

#include "runtime/cuda/CudaSupport.h"

#include <algorithm>
#include <cstdint>

namespace cleave::rt::cuda {

constexpr int kThreadsPerBlock = 256;

/// Grid-stride loop: any n with a bounded grid.
template <typename F> __global__ void forEachIndex(int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    f(i);
}

#ifdef CLEAVE_CUDA_HOST_EMULATION
/// The host emulation runs the work items in order, at once.
template <typename F> void launch(int64_t n, const F &f) {
  for (int64_t i = 0; i < n; ++i)
    f(i);
}
#else
/// Enqueues f(i) for i in [0, n) on the compute stream.
template <typename F> void launch(int64_t n, const F &f) {
  if (n <= 0)
    return;
  int64_t blocks = std::min<int64_t>(
      (n + kThreadsPerBlock - 1) / kThreadsPerBlock, int64_t(1) << 16);
  forEachIndex<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0,
                 computeStream()>>>(n, f);
  CLEAVE_CUDA_CHECK(cudaGetLastError());
}
#endif

} // namespace cleave::rt::cuda

#endif // CLEAVE_RUNTIME_CUDA_LAUNCH_CUH
