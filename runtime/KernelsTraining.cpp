//===- KernelsTraining.cpp - dropout, random numbers, optimizer steps -----===//
//
// Part of the Cleave runtime. The per-element math is in
// ElementwiseBodies.h (SgdStep, AdamwStep), TrainingBodies.h (dropout and
// random numbers) and Rng.h, shared with the cuda target, so that both
// targets train identically.
//
//===----------------------------------------------------------------------===//

#include "runtime/Elementwise.h"
#include "runtime/ElementwiseBodies.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/TrainingBodies.h"

#include "runtime/Rng.h"

#include <algorithm>
#include <type_traits>

namespace cleave::rt {

using detail::kParallelGrain;

void dropout(const float *x, int64_t n, float ratio, uint64_t seed,
             int64_t node, int64_t step, const int64_t *offset,
             int64_t rowLength, int64_t rowStride, float *y, bool *mask) {
  if (ratio <= 0.0f) {
    // Dropout off (a model exported with p = 0) keeps everything: x / 1 is
    // x. A copy, not the element loop below (4.9 ns an element).
    if (y != x)
      std::copy(x, x + n, y);
    if (mask)
      std::fill(mask, mask + n, true);
    return;
  }
  auto element = body::DropoutElement::make(x, ratio, seed, node, step, offset,
                                            rowLength, rowStride, y, mask);
  uint64_t key = element.key;
  float keepProb = element.keepProb;
  int64_t first = offset ? *offset : 0;
  auto keeps = [&](int64_t index) {
    return dropoutUniformFromKey(key, index) >= ratio;
  };
  if (rowLength != rowStride) {
    // A block of short rows (a tensor-parallel block of channels: a row
    // per sample): row by row, each as the contiguous block below.
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
    for (int64_t r = 0; r < n / rowLength; ++r) {
      int64_t start = first + r * rowStride;
      const float *xr = x + r * rowLength;
      float *yr = y + r * rowLength;
      bool *mr = mask ? mask + r * rowLength : nullptr;
      CLEAVE_SIMD
      for (int64_t i = 0; i < rowLength; ++i) {
        bool keep = keeps(start + i);
        yr[i] = keep ? xr[i] / keepProb : 0.0f;
        if (mr)
          mr[i] = keep;
      }
    }
    return;
  }
  // A contiguous block: DropoutElement's draw and select, with its stream
  // index first + i, in vector registers (its per-item index arithmetic
  // and tests kept the loop scalar, 3.8 ns an element).
  if (mask) {
#pragma omp parallel for simd schedule(static) if (parallel                    \
                                                   : n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) {
      bool keep = keeps(first + i);
      y[i] = keep ? x[i] / keepProb : 0.0f;
      mask[i] = keep;
    }
  } else {
#pragma omp parallel for simd schedule(static) if (parallel                    \
                                                   : n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i)
      y[i] = keeps(first + i) ? x[i] / keepProb : 0.0f;
  }
}

void randomUniform(float *y, int64_t n, float low, float high, uint64_t seed,
                   int64_t node, int64_t step) {
  detail::runItems(
      n, n,
      body::RandomUniformElement{y, randomKey(seed, node, step), low, high});
}

void randomNormal(float *y, int64_t n, float mean, float scale, uint64_t seed,
                  int64_t node, int64_t step) {
  detail::runItems(
      n, n,
      body::RandomNormalElement{y, randomKey(seed, node, step), mean, scale});
}

void sgdUpdate(float *param, const float *grad, float *buffer, int64_t n,
               float lr, float momentum, float dampening, bool nesterov,
               float weightDecay, int64_t step) {
  body::SgdStep body{lr,
                     momentum,
                     dampening,
                     weightDecay,
                     nesterov,
                     /*firstStep=*/step == 0};
  // One loop per combination, so each vectorizes without per-element tests.
  auto run = [&](auto hasMomentum, auto hasDecay) {
    constexpr bool kMomentum = decltype(hasMomentum)::value;
    constexpr bool kDecay = decltype(hasDecay)::value;
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) {
      float unused = 0.0f;
      float &buf = kMomentum ? buffer[i] : unused;
      param[i] = body.template apply<kMomentum, kDecay>(param[i], grad[i], buf);
    }
  };
  detail::withSgdCombination(momentum != 0.0f && buffer, weightDecay != 0.0f,
                             run);
}

void adamwUpdate(float *param, const float *grad, float *expAvg,
                 float *expAvgSq, int64_t n, float lr, float beta1, float beta2,
                 float eps, float weightDecay, int64_t step) {
  auto body = body::AdamwStep::make(lr, beta1, beta2, eps, weightDecay, step);
  // One pass over p, g, m and v in vector registers: the four tensors never
  // overlap (the memory plan gives each its own buffer), and sqrt does not
  // set errno (-fno-math-errno, runtime/CMakeLists.txt), so the loop
  // vectorizes.
  float *__restrict p = param;
  const float *__restrict g = grad;
  float *__restrict m = expAvg;
  float *__restrict v = expAvgSq;
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    p[i] = body(p[i], g[i], m[i], v[i]);
}

void onnxMomentumUpdate(const float *x, const float *g, const float *v,
                        int64_t n, float lr, int64_t step, float alpha,
                        float beta, float normCoefficient, bool nesterov,
                        float *newX, float *newV) {
  body::OnnxMomentumStep body{lr, alpha, beta, normCoefficient, nesterov, step};
  for (int64_t i = 0; i < n; ++i)
    newX[i] = body(x[i], g[i], v[i], newV[i]);
}

void onnxAdamUpdate(const float *x, const float *g, const float *v,
                    const float *h, int64_t n, float lr, int64_t step,
                    float alpha, float beta, float epsilon,
                    float normCoefficient, float normCoefficientPost,
                    float *newX, float *newV, float *newH) {
  body::OnnxAdamStep body{lr,      alpha,           beta,
                          epsilon, normCoefficient, normCoefficientPost,
                          step};
  for (int64_t i = 0; i < n; ++i)
    newX[i] = body(x[i], g[i], v[i], h[i], newV[i], newH[i]);
}

void onnxAdagradUpdate(const float *x, const float *g, const float *h,
                       int64_t n, float lr, int64_t step, float decayFactor,
                       float epsilon, float normCoefficient, float *newX,
                       float *newH) {
  body::OnnxAdagradStep body{lr, decayFactor, epsilon, normCoefficient, step};
  for (int64_t i = 0; i < n; ++i)
    newX[i] = body(x[i], g[i], h[i], newH[i]);
}

} // namespace cleave::rt
