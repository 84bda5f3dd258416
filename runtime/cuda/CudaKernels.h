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

//===----------------------------------------------------------------------===//
// Linear algebra (cuBLAS)
//===----------------------------------------------------------------------===//

/// C = alpha * op(A) * op(B) + beta * C, with op(A) MxK and op(B) KxN,
/// row-major; `a`/`b` are stored as given (transposed storage when
/// transA/transB). C is read when beta != 0.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, const float *b, float beta, float *c);

/// numpy.matmul with broadcast batch dims (shapes are the op's shapes,
/// 1-d operands promoted as numpy does). out = a @ b.
void matmul(const float *a, const Shape &aShape, const float *b,
            const Shape &bShape, float *out, const Shape &outShape);

//===----------------------------------------------------------------------===//
// Data movement (templates instantiated for float, double, int64_t, int32_t,
// bool in Kernels*.cpp)
//===----------------------------------------------------------------------===//

/// Numpy-broadcasts `in` to `outShape`.
template <typename T>
void broadcastTo(const T *in, const Shape &inShape, T *out,
                 const Shape &outShape);

/// Result dim i is input dim perm[i].
template <typename T>
void transpose(const T *in, const Shape &inShape, const int64_t *perm, T *out);

/// Concatenates `count` tensors along `axis`.
template <typename T>
void concat(const T *const *inputs, const Shape *shapes, int count, int axis,
            T *out);

/// Splits along `axis` into `count` pieces of sizes[i] elements along axis.
template <typename T>
void split(const T *in, const Shape &inShape, int axis, const int64_t *sizes,
           int count, T *const *outs);

/// out[i...] = in[offsets + i * strides] per dim (cleave.slice semantics).
template <typename T>
void slice(const T *in, const Shape &inShape, const int64_t *offsets,
           const int64_t *strides, T *out, const Shape &outShape);

/// The adjoint of slice: zero-fills dIn, then adds dOut into the window.
void sliceGrad(const float *dOut, const Shape &outShape, const int64_t *offsets,
               const int64_t *strides, float *dIn, const Shape &inShape);

/// ONNX Gather along `axis`; negative indices count from the end.
template <typename T, typename I>
void gather(const T *data, const Shape &dataShape, const I *indices,
            int64_t numIndices, int axis, T *out);

/// The adjoint of gather: zero-fills dData, then scatter-adds dOut (repeated
/// indices accumulate, as an embedding gradient needs).
template <typename I>
void gatherGrad(const float *dOut, const I *indices, int64_t numIndices,
                int axis, float *dData, const Shape &dataShape);

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Reduces `in` over the ascending `axes`; the output is the input shape
/// without (or with size-1) reduced dims, contiguous either way.
void reduce(ReduceKind kind, const float *in, const Shape &inShape,
            const int64_t *axes, int numAxes, float *out);

//===----------------------------------------------------------------------===//
// Normalization and activations over an axis
//===----------------------------------------------------------------------===//

/// Softmax (or log-softmax) along `axis`, numerically stable.
void softmax(const float *x, const Shape &shape, int axis, bool log, float *y);

/// dx from y = softmax(x) (or log-softmax when `log`) and dy.
void softmaxGrad(const float *y, const float *dy, const Shape &shape, int axis,
                 bool log, float *dx);

/// ONNX LayerNormalization over dims [axis, rank); `bias` may be null.
/// mean/invStd have one value per row (the leading dims).
void layerNorm(const float *x, const Shape &shape, int axis,
               const float *scale, const float *bias, float epsilon, float *y,
               float *mean, float *invStd);

/// Gradients of layerNorm; dBias may be null.
void layerNormGrad(const float *dy, const float *x, const Shape &shape,
                   int axis, const float *scale, const float *mean,
                   const float *invStd, float *dx, float *dScale,
                   float *dBias);

/// BatchNormalization over dim 1 of [N, C, ...]. Training mode uses batch
/// statistics (biased variance for normalization) and writes
/// newRunningMean/Var = momentum * running + (1 - momentum) * batch (ONNX
/// semantics, batch variance biased); inference uses the running stats and
/// copies them to the outputs.
void batchNorm(const float *x, const Shape &shape, const float *scale,
               const float *bias, const float *runningMean,
               const float *runningVar, float epsilon, float momentum,
               bool training, float *y, float *newRunningMean,
               float *newRunningVar);

/// Gradients of training-mode batchNorm (recomputes batch statistics).
void batchNormGrad(const float *dy, const float *x, const Shape &shape,
                   const float *scale, float epsilon, float *dx,
                   float *dScale, float *dBias);

//===----------------------------------------------------------------------===//
// Convolution and pooling (N-d: 1, 2 or 3 spatial dims; pads begin then end)
//===----------------------------------------------------------------------===//

/// y = conv(x, w) + bias (bias may be null), grouped.
void conv(const float *x, const Shape &xShape, const float *w,
          const Shape &wShape, const float *bias, const int64_t *strides,
          const int64_t *pads, const int64_t *dilations, int64_t group,
          float *y, const Shape &yShape);

void convGradInput(const float *dy, const Shape &yShape, const float *w,
                   const Shape &wShape, const int64_t *strides,
                   const int64_t *pads, const int64_t *dilations,
                   int64_t group, float *dx, const Shape &xShape);

void convGradWeight(const float *dy, const Shape &yShape, const float *x,
                    const Shape &xShape, const int64_t *strides,
                    const int64_t *pads, const int64_t *dilations,
                    int64_t group, float *dw, const Shape &wShape);

/// ONNX MaxPool (padding never wins the max).
void maxPool(const float *x, const Shape &xShape, const int64_t *kernel,
             const int64_t *strides, const int64_t *pads,
             const int64_t *dilations, float *y, const Shape &yShape);

/// Routes each dy to the (first) argmax of its window in x.
void maxPoolGrad(const float *dy, const Shape &yShape, const float *x,
                 const Shape &xShape, const int64_t *kernel,
                 const int64_t *strides, const int64_t *pads,
                 const int64_t *dilations, float *dx);

/// ONNX AveragePool; countIncludePad selects the divisor.
void avgPool(const float *x, const Shape &xShape, const int64_t *kernel,
             const int64_t *strides, const int64_t *pads,
             bool countIncludePad, float *y, const Shape &yShape);

void avgPoolGrad(const float *dy, const Shape &yShape, const int64_t *kernel,
                 const int64_t *strides, const int64_t *pads,
                 bool countIncludePad, float *dx, const Shape &xShape);

//===----------------------------------------------------------------------===//
// Losses (scores [N, C, d...], labels [N, d...], weights [C] or null)
//===----------------------------------------------------------------------===//

/// ONNX SoftmaxCrossEntropyLoss; `loss` has 1 element unless reduction is
/// None ([N, d...]); logProb has the scores' shape. Samples whose label is
/// ignoreIndex (when hasIgnoreIndex) contribute 0 and no weight.
template <typename I>
void softmaxCrossEntropy(const float *scores, const Shape &scoresShape,
                         const I *labels, const float *weights,
                         Reduction reduction, bool hasIgnoreIndex,
                         int64_t ignoreIndex, float *loss, float *logProb);

/// dScores from the loss gradient dLoss (1 element, or [N, d...] for None).
template <typename I>
void softmaxCrossEntropyGrad(const float *dLoss, const float *logProb,
                             const Shape &scoresShape, const I *labels,
                             const float *weights, Reduction reduction,
                             bool hasIgnoreIndex, int64_t ignoreIndex,
                             float *dScores);

/// ONNX NegativeLogLikelihoodLoss on log-probabilities.
template <typename I>
void nllLoss(const float *input, const Shape &inputShape, const I *target,
             const float *weights, Reduction reduction, bool hasIgnoreIndex,
             int64_t ignoreIndex, float *loss);

template <typename I>
void nllLossGrad(const float *dLoss, const Shape &inputShape, const I *target,
                 const float *weights, Reduction reduction,
                 bool hasIgnoreIndex, int64_t ignoreIndex, float *dInput);

//===----------------------------------------------------------------------===//
// Dropout and optimizers
//===----------------------------------------------------------------------===//

/// Training-mode dropout with the counter-based mask of Rng.h:
/// keep element i iff dropoutUniform(seed, node, step, i) >= ratio;
/// y = keep ? x / (1 - ratio) : 0.
void dropout(const float *x, int64_t n, float ratio, uint64_t seed,
             int64_t node, int64_t step, float *y, bool *mask);

/// torch.optim.SGD, one parameter tensor, in place. `step` counts from 0;
/// at step 0 the momentum buffer is initialized to the gradient as PyTorch
/// does. buffer may be null when momentum == 0.
void sgdUpdate(float *param, const float *grad, float *buffer, int64_t n,
               float lr, float momentum, float dampening, bool nesterov,
               float weightDecay, int64_t step);

/// torch.optim.AdamW (decoupled weight decay), in place; `step` counts
/// from 0 (bias correction uses step + 1).
void adamwUpdate(float *param, const float *grad, float *expAvg,
                 float *expAvgSq, int64_t n, float lr, float beta1,
                 float beta2, float eps, float weightDecay, int64_t step);

/// The ONNX training optimizers (ai.onnx.preview.training), one tensor
/// each, out of place: `lr` is R, `step` is T.
void onnxMomentumUpdate(const float *x, const float *g, const float *v,
                        int64_t n, float lr, int64_t step, float alpha,
                        float beta, float normCoefficient, bool nesterov,
                        float *newX, float *newV);
void onnxAdamUpdate(const float *x, const float *g, const float *v,
                    const float *h, int64_t n, float lr, int64_t step,
                    float alpha, float beta, float epsilon,
                    float normCoefficient, float normCoefficientPost,
                    float *newX, float *newV, float *newH);
void onnxAdagradUpdate(const float *x, const float *g, const float *h,
                       int64_t n, float lr, int64_t step, float decayFactor,
                       float epsilon, float normCoefficient, float *newX,
                       float *newH);

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
