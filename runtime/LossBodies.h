//===- LossBodies.h - loss work items ---------------------------*- C++ -*-===//
//
// Part of the Cleave runtime. The work items of the loss kernels of both
// targets: the cuda target launches them (cuda/KernelsLoss.cu), the cpu
// target runs them in OpenMP loops (KernelsLoss.cpp).
//
// Labels are not range-checked here. The cpu target checks them before it
// runs the items, reports a label outside [0, C) and exits; a work item on a
// GPU has no way to stop the program, so such a sample is treated as if it
// were ignored: it contributes no loss, no weight to 'mean' and no gradient.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_LOSSBODIES_H
#define CLEAVE_RUNTIME_LOSSBODIES_H

#include "runtime/HostDevice.h"
#include "runtime/KernelTypes.h"
#include "runtime/Shape.h"

#include <cmath>
#include <cstdint>

namespace cleave::body {

//===----------------------------------------------------------------------===//
// Losses (scores [N, C, d...], labels [N, d...], weights [C] or null)
//===----------------------------------------------------------------------===//

/// The [N, C, d...] scores of a loss seen as samples (N * d... of them) by
/// classes.
struct LossView {
  int64_t n = 0;
  int64_t classes = 0;
  int64_t spatial = 0;

  LossView() = default;
  explicit LossView(const rt::Shape &shape)
      : n(shape.dims[0]), classes(shape.dims[1]),
        spatial(shape.product(2, shape.rank)) {}

  CLEAVE_HD int64_t samples() const { return n * spatial; }
  CLEAVE_HD int64_t elements() const { return n * classes * spatial; }
  /// Flat index of class c of sample i.
  CLEAVE_HD int64_t at(int64_t i, int64_t c) const {
    return (i / spatial * classes + c) * spatial + i % spatial;
  }
  /// The sample and the class of flat element k.
  CLEAVE_HD int64_t sampleOf(int64_t k) const {
    return k / (classes * spatial) * spatial + k % spatial;
  }
  CLEAVE_HD int64_t classOf(int64_t k) const { return k / spatial % classes; }
};

/// The labels of a loss with what weighs them: weights[label] (1 without
/// weights), 0 for the ignore index, and 0 for a label out of range (see
/// the file comment).
template <typename I> struct SampleWeights {
  const I *labels;
  const float *weights;
  int64_t classes;
  bool hasIgnoreIndex;
  int64_t ignoreIndex;

  CLEAVE_HD int64_t label(int64_t i) const {
    return static_cast<int64_t>(labels[i]);
  }
  CLEAVE_HD float weight(int64_t i) const {
    int64_t l = label(i);
    if (hasIgnoreIndex && l == ignoreIndex)
      return 0.0f;
    if (l < 0 || l >= classes)
      return 0.0f;
    return weights ? weights[l] : 1.0f;
  }
};

/// -weight * logProb[label] per sample, reduced. With Reduction::None it is
/// launched over the samples, item i writing loss[i]; otherwise as one item
/// that sums all samples in order and writes loss[0] (sum, or sum over the
/// sum of weights for mean).
template <typename I> struct NllForward {
  const float *logProb;
  float *loss;
  SampleWeights<I> sw;
  LossView view;
  rt::Reduction reduction;

  int64_t items() const {
    return reduction == rt::Reduction::None ? view.samples() : 1;
  }

  CLEAVE_HD float sampleLoss(int64_t i, float w) const {
    return w != 0.0f ? -w * logProb[view.at(i, sw.label(i))] : 0.0f;
  }

  CLEAVE_HD void operator()(int64_t item) const {
    if (reduction == rt::Reduction::None) {
      loss[item] = sampleLoss(item, sw.weight(item));
      return;
    }
    double sum = 0.0, weightSum = 0.0;
    for (int64_t i = 0; i < view.samples(); ++i) {
      float w = sw.weight(i);
      sum += sampleLoss(i, w);
      weightSum += w;
    }
    loss[0] = static_cast<float>(
        reduction == rt::Reduction::Sum ? sum : sum / weightSum);
  }
};

/// One item for Reduction::Mean gradients: *scale = dLoss[0] / (sum of the
/// sample weights), which every element of the gradient then reads.
template <typename I> struct LossMeanScale {
  const float *dLoss;
  float *scale;
  SampleWeights<I> sw;
  int64_t samples;

  CLEAVE_HD void operator()(int64_t) const {
    double weightSum = 0.0;
    for (int64_t i = 0; i < samples; ++i)
      weightSum += sw.weight(i);
    *scale = static_cast<float>(dLoss[0] / weightSum);
  }
};

/// The upstream gradient of sample i's unreduced loss: dLoss[i] for None,
/// dLoss[0] for Sum, LossMeanScale's *meanScale for Mean.
CLEAVE_HD inline float sampleGradScale(const float *dLoss,
                                       const float *meanScale,
                                       rt::Reduction reduction, int64_t i) {
  if (reduction == rt::Reduction::None)
    return dLoss[i];
  if (reduction == rt::Reduction::Sum)
    return dLoss[0];
  return *meanScale;
}

/// One element of dScores of softmaxCrossEntropy:
/// w * scale * (softmax(x)_c - [c == label]), 0 for a sample of weight 0.
template <typename I> struct SoftmaxCrossEntropyGradElement {
  const float *dLoss;
  const float *meanScale;
  const float *logProb;
  float *dScores;
  SampleWeights<I> sw;
  LossView view;
  rt::Reduction reduction;

  /// Element k, class c of sample i.
  CLEAVE_HD void element(int64_t k, int64_t i, int64_t c) const {
    float w = sw.weight(i);
    if (w == 0.0f) {
      dScores[k] = 0.0f;
      return;
    }
    float g = w * sampleGradScale(dLoss, meanScale, reduction, i);
    float target = c == sw.label(i) ? 1.0f : 0.0f;
    dScores[k] = g * (std::exp(logProb[k]) - target);
  }
  CLEAVE_HD void operator()(int64_t k) const {
    element(k, view.sampleOf(k), view.classOf(k));
  }
  /// The elements of sample i, every class: the cpu target's unit. As
  /// element() with the sample's terms hoisted, so that the classes run in
  /// vector registers.
  CLEAVE_HD void sample(int64_t i) const {
    int64_t first = view.at(i, 0), step = view.spatial;
    float w = sw.weight(i);
    if (w == 0.0f) {
      for (int64_t c = 0; c < view.classes; ++c)
        dScores[first + c * step] = 0.0f;
      return;
    }
    float g = w * sampleGradScale(dLoss, meanScale, reduction, i);
    int64_t label = sw.label(i);
    CLEAVE_SIMD
    for (int64_t c = 0; c < view.classes; ++c) {
      int64_t k = first + c * step;
      dScores[k] = g * (std::exp(logProb[k]) - (c == label ? 1.0f : 0.0f));
    }
  }
};

/// One element of dInput of nllLoss: -w * scale at the sample's label, 0
/// elsewhere.
template <typename I> struct NllLossGradElement {
  const float *dLoss;
  const float *meanScale;
  float *dInput;
  SampleWeights<I> sw;
  LossView view;
  rt::Reduction reduction;

  /// Element k, class c of sample i.
  CLEAVE_HD void element(int64_t k, int64_t i, int64_t c) const {
    float w = sw.weight(i);
    dInput[k] = w != 0.0f && c == sw.label(i)
                    ? -w * sampleGradScale(dLoss, meanScale, reduction, i)
                    : 0.0f;
  }
  CLEAVE_HD void operator()(int64_t k) const {
    element(k, view.sampleOf(k), view.classOf(k));
  }
  /// The elements of sample i, every class: the cpu target's unit.
  CLEAVE_HD void sample(int64_t i) const {
    for (int64_t c = 0; c < view.classes; ++c)
      element(view.at(i, c), i, c);
  }
};

} // namespace cleave::body

#endif // CLEAVE_RUNTIME_LOSSBODIES_H
