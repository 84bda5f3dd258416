//===- KernelScratch.h - device memory the cuda kernels borrow --*- C++ -*-===//
//
// Part of the Cleave runtime's cuda backend, in plain C++ so that the
// compiler includes it too. Some kernels need device memory for the length
// of a call (DeviceScratch): reduction partials, batch-norm coefficients, a
// loss's mean scale, cuBLASLt and cuDNN workspaces, im2col matrices, the
// staging of gathers along inner dims. It comes from the end of the one
// device block, a region the compiler sizes as the most any op of the step
// asks for, by these bounds, which the kernels keep to.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_KERNELSCRATCH_H
#define CLEAVE_RUNTIME_CUDA_KERNELSCRATCH_H

#include <algorithm>
#include <cstdint>

namespace cleave::rt::cuda::scratch {

/// Every request is rounded up to this (cudaMalloc's own alignment).
constexpr int64_t kAlignment = 256;
inline int64_t aligned(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// cuBLASLt's workspace for a GEMM with an epilogue, at most.
constexpr int64_t kGemmEpilogueBytes = int64_t(4) << 20;

/// A convolution's scratch given its im2col matrix's bytes for one (sample,
/// group): that matrix, or a cuDNN workspace of at most that or 64 MiB.
inline int64_t convolution(int64_t columnBytes) {
  return aligned(std::max(columnBytes, int64_t(64) << 20));
}

/// A reduction to few outputs is split so that about kReduceTargetItems
/// work items run, each over at least kReduceMinChunk inputs: the number
/// of parts asked for (ReduceOverAxes::splitInto makes at most that many).
constexpr int64_t kReduceTargetItems = int64_t(1) << 16;
constexpr int64_t kReduceMinChunk = 2048;
inline int64_t reductionParts(int64_t outCount, int64_t redCount) {
  if (outCount <= 0 || outCount >= kReduceTargetItems)
    return 1;
  return std::min((kReduceTargetItems + outCount - 1) / outCount,
                  (redCount + kReduceMinChunk - 1) / kReduceMinChunk);
}
/// The partial sums (doubles) of a split reduction.
inline int64_t reduction(int64_t outCount, int64_t redCount) {
  int64_t parts = reductionParts(outCount, redCount);
  return parts > 1 ? aligned(outCount * parts * 8) : 0;
}

/// Per-channel coefficients of batchNorm (2 floats) and batchNormGrad (5,
/// batchNormGradFromSums too).
inline int64_t batchNorm(int64_t channels) { return aligned(2 * channels * 4); }
inline int64_t batchNormGrad(int64_t channels) {
  return aligned(5 * channels * 4);
}

/// The mean-reduction scale of a loss gradient: one float.
constexpr int64_t kLossScaleBytes = kAlignment;

} // namespace cleave::rt::cuda::scratch

#endif // CLEAVE_RUNTIME_CUDA_KERNELSCRATCH_H
