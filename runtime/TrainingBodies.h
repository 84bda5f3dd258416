//===- TrainingBodies.h - dropout, random, optimizer work items -*- C++ -*-===//
//
// Part of the Cleave runtime. The work items of the dropout, random-number
// and optimizer kernels (cuda/KernelsTraining.cu; run on the host by the
// shared-body tests): the per-element bodies of ElementwiseBodies.h and
// Rng.h, which the cpu kernels run too (KernelsTraining.cpp), with the
// tensors they walk.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_TRAININGBODIES_H
#define CLEAVE_RUNTIME_TRAININGBODIES_H

#include "runtime/ElementwiseBodies.h"
#include "runtime/HostDevice.h"
#include "runtime/Rng.h"

#include <cmath>
#include <cstdint>

namespace cleave::body {

//===----------------------------------------------------------------------===//
// Dropout and optimizer steps, one item per element
//===----------------------------------------------------------------------===//

/// Training-mode dropout of element i: kept iff its counter-based uniform
/// (Rng.h) is >= ratio, then scaled by 1 / (1 - ratio); mask may be null.
struct DropoutElement {
  const float *x;
  float *y;
  bool *mask;
  /// Where this block starts in the whole tensor's stream (null: 0); read
  /// where the element runs, so on the device for the cuda target.
  const int64_t *offset;
  /// The block's rows in the whole tensor: rowLength elements each,
  /// rowStride apart (equal for a block of whole rows).
  int64_t rowLength, rowStride;
  uint64_t key;
  float ratio;
  /// 1 - ratio in float and a true division, as the Python reference does.
  float keepProb;

  static DropoutElement make(const float *x, float ratio, uint64_t seed,
                             int64_t node, int64_t step, const int64_t *offset,
                             int64_t rowLength, int64_t rowStride, float *y,
                             bool *mask) {
    return {x,
            y,
            mask,
            offset,
            rowLength,
            rowStride,
            rt::dropoutKey(seed, node, step),
            ratio,
            1.0f - ratio};
  }

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t first = offset ? *offset : 0;
    int64_t index = rowLength == rowStride
                        ? first + i
                        : first + i / rowLength * rowStride + i % rowLength;
    // Every draw is >= 0: ratio 0 (a model exported with dropout off)
    // keeps everything without drawing.
    bool keep = ratio <= 0.0f || rt::dropoutUniformFromKey(key, index) >= ratio;
    y[i] = keep ? x[i] / keepProb : 0.0f;
    if (mask)
      mask[i] = keep;
  }
};

/// ONNX RandomUniform, element i: low + (high - low) * u with u uniform in
/// [0, 1) (Rng.h); a value rounded up to `high` becomes `low`.
struct RandomUniformElement {
  float *y;
  uint64_t key;
  float low;
  float high;

  CLEAVE_HD void operator()(int64_t i) const {
    float v = low + (high - low) * rt::dropoutUniformFromKey(key, i);
    y[i] = v < high ? v : low;
  }
};

/// ONNX RandomNormal, element i: mean + scale * z, z standard normal by the
/// Box-Muller transform of uniforms 2i and 2i + 1 of the stream.
struct RandomNormalElement {
  float *y;
  uint64_t key;
  float mean;
  float scale;

  CLEAVE_HD void operator()(int64_t i) const {
    float radius =
        std::sqrt(-2.0f * std::log(rt::openUniformFromKey(key, 2 * i)));
    float angle = 6.28318530718f * rt::dropoutUniformFromKey(key, 2 * i + 1);
    y[i] = mean + scale * (radius * std::cos(angle));
  }
};

/// torch.optim.SGD on element i, in place. The momentum buffer is used only
/// when momentum != 0 and it is given, as the cpu kernel decides.
struct SgdElement {
  SgdStep step;
  float *param;
  const float *grad;
  float *buffer;
  bool hasMomentum;

  /// `step` counts from 0; the buffer starts as the gradient at step 0.
  static SgdElement make(float *param, const float *grad, float *buffer,
                         float lr, float momentum, float dampening,
                         bool nesterov, float weightDecay, int64_t step) {
    SgdStep body{lr,          momentum, dampening,
                 weightDecay, nesterov, /*firstStep=*/step == 0};
    return {body, param, grad, buffer, momentum != 0.0f && buffer};
  }

  CLEAVE_HD void operator()(int64_t i) const {
    float p = param[i], g = grad[i];
    bool hasDecay = step.weightDecay != 0.0f;
    if (hasMomentum) {
      float &buf = buffer[i];
      param[i] = hasDecay ? step.apply<true, true>(p, g, buf)
                          : step.apply<true, false>(p, g, buf);
    } else {
      float unused = 0.0f;
      param[i] = hasDecay ? step.apply<false, true>(p, g, unused)
                          : step.apply<false, false>(p, g, unused);
    }
  }
};

/// torch.optim.AdamW on element i, in place.
struct AdamwElement {
  AdamwStep step;
  float *param;
  const float *grad;
  float *expAvg;
  float *expAvgSq;

  CLEAVE_HD void operator()(int64_t i) const {
    param[i] = step(param[i], grad[i], expAvg[i], expAvgSq[i]);
  }
};

/// The ONNX training Momentum operator on element i, out of place.
struct OnnxMomentumElement {
  OnnxMomentumStep step;
  const float *x;
  const float *g;
  const float *v;
  float *newX;
  float *newV;

  CLEAVE_HD void operator()(int64_t i) const {
    newX[i] = step(x[i], g[i], v[i], newV[i]);
  }
};

/// The ONNX training Adam operator on element i, out of place.
struct OnnxAdamElement {
  OnnxAdamStep step;
  const float *x;
  const float *g;
  const float *v;
  const float *h;
  float *newX;
  float *newV;
  float *newH;

  CLEAVE_HD void operator()(int64_t i) const {
    newX[i] = step(x[i], g[i], v[i], h[i], newV[i], newH[i]);
  }
};

/// The ONNX training Adagrad operator on element i, out of place.
struct OnnxAdagradElement {
  OnnxAdagradStep step;
  const float *x;
  const float *g;
  const float *h;
  float *newX;
  float *newH;

  CLEAVE_HD void operator()(int64_t i) const {
    newX[i] = step(x[i], g[i], h[i], newH[i]);
  }
};

} // namespace cleave::body

#endif // CLEAVE_RUNTIME_TRAININGBODIES_H
