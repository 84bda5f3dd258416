//===- CudaKernels.h - the cuda target's tensor kernels ---------*- C++ -*-===//
//
// Part of the Cleave runtime's cuda backend. The same functions, with the
// same arguments and meaning, as the cpu target's Kernels.h, so that a
// generated .cu reads like the generated .cpp: every pointer here is device
// memory, every Shape a host value, and every kernel is enqueued on the
// compute stream (CudaSupport.h) without waiting for it. The per-element and
// per-row math is the __host__ __device__ code of the *Bodies.h headers,
// which the cpu target runs too.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_CUDAKERNELS_H
#define CLEAVE_RUNTIME_CUDA_CUDAKERNELS_H

#include "runtime/KernelTypes.h"
#include "runtime/Shape.h"

#include <cstdint>

namespace cleave::rt::cuda {

#include "runtime/KernelApi.inc"

//===----------------------------------------------------------------------===//
// Kernels of the cuda target only
//===----------------------------------------------------------------------===//

/// What gemmBias does after adding the bias: nothing, or max(x, 0).
enum class GemmEpilogue { Bias, BiasRelu };

/// c = alpha * op(a) op(b) + bias, with bias (n elements) added to every
/// row of the [m, n] result (then ReLU'd for BiasRelu): a Gemm whose C is a
/// bias row and beta 1 (and the Relu that alone reads it), in one cuBLASLt
/// call with the bias (or ReLU-bias) epilogue instead of broadcastTo + gemm
/// (+ relu). Shapes and transposes as in gemm().
void gemmBias(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              float alpha, const float *a, const float *b, const float *bias,
              float *c, GemmEpilogue epilogue);

//===----------------------------------------------------------------------===//
// Host-side helpers of generated programs
//===----------------------------------------------------------------------===//

/// dst[0, n) = src[0, n), device to device, on the compute stream.
template <typename T> void copyN(const T *src, int64_t n, T *dst);
/// dst[0, n) = value (an inference-mode dropout's mask).
void fillN(bool *dst, int64_t n, bool value);
/// Waits for the compute stream and returns *src (the loss; a learning
/// rate or step counter of an ONNX training optimizer).
template <typename T> T readScalar(const T *src);
/// *dst = value (a learning-rate factor computed on the host).
void writeScalar(float *dst, float value);
/// Waits until the step's kernels are done (the end of every step, so that
/// the driver may refill the pinned input buffers).
void synchronize();

} // namespace cleave::rt::cuda

#endif // CLEAVE_RUNTIME_CUDA_CUDAKERNELS_H
