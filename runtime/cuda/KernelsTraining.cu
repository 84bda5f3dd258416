//===- KernelsTraining.cu - dropout and optimizer steps on the GPU --------===//
//
// Part of the Cleave runtime's cuda backend. The per-element math is the
// cpu target's (SgdStep, AdamwStep, the Onnx*Step bodies of
// ElementwiseBodies.h and the dropout mask of Rng.h), wrapped with the
// tensors by the work items of TrainingBodies.h, so that both targets train
// identically.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/TrainingBodies.h"

namespace cleave::rt::cuda {

using namespace cleave::body;

void dropout(const float *x, int64_t n, float ratio, uint64_t seed,
             int64_t node, int64_t step, const int64_t *offset,
             int64_t rowLength, int64_t rowStride, float *y, bool *mask) {
  launch(n, DropoutElement::make(x, ratio, seed, node, step, offset, rowLength,
                                 rowStride, y, mask));
}

void randomUniform(float *y, int64_t n, float low, float high, uint64_t seed,
                   int64_t node, int64_t step) {
  launch(n, RandomUniformElement{y, randomKey(seed, node, step), low, high});
}

void randomNormal(float *y, int64_t n, float mean, float scale, uint64_t seed,
                  int64_t node, int64_t step) {
  launch(n, RandomNormalElement{y, randomKey(seed, node, step), mean, scale});
}

void sgdUpdate(float *param, const float *grad, float *buffer, int64_t n,
               float lr, float momentum, float dampening, bool nesterov,
               float weightDecay, int64_t step) {
  launch(n, SgdElement::make(param, grad, buffer, lr, momentum, dampening,
                             nesterov, weightDecay, step));
}

void adamwUpdate(float *param, const float *grad, float *expAvg,
                 float *expAvgSq, int64_t n, float lr, float beta1, float beta2,
                 float eps, float weightDecay, int64_t step) {
  AdamwStep body = AdamwStep::make(lr, beta1, beta2, eps, weightDecay, step);
  launch(n, AdamwElement{body, param, grad, expAvg, expAvgSq});
}

void onnxMomentumUpdate(const float *x, const float *g, const float *v,
                        int64_t n, float lr, int64_t step, float alpha,
                        float beta, float normCoefficient, bool nesterov,
                        float *newX, float *newV) {
  OnnxMomentumStep body{lr, alpha, beta, normCoefficient, nesterov, step};
  launch(n, OnnxMomentumElement{body, x, g, v, newX, newV});
}

void onnxAdamUpdate(const float *x, const float *g, const float *v,
                    const float *h, int64_t n, float lr, int64_t step,
                    float alpha, float beta, float epsilon,
                    float normCoefficient, float normCoefficientPost,
                    float *newX, float *newV, float *newH) {
  OnnxAdamStep body{
      lr, alpha, beta, epsilon, normCoefficient, normCoefficientPost, step};
  launch(n, OnnxAdamElement{body, x, g, v, h, newX, newV, newH});
}

void onnxAdagradUpdate(const float *x, const float *g, const float *h,
                       int64_t n, float lr, int64_t step, float decayFactor,
                       float epsilon, float normCoefficient, float *newX,
                       float *newH) {
  OnnxAdagradStep body{lr, decayFactor, epsilon, normCoefficient, step};
  launch(n, OnnxAdagradElement{body, x, g, h, newX, newH});
}

} // namespace cleave::rt::cuda
