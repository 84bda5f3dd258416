//===- KernelsLoss.cpp - cross-entropy and negative log-likelihood --------===//
//
// Part of the Cleave runtime. Shapes: scores/input [N, C, d...], labels
// [N, d...], weights [C] or null. A sample's weight is weights[label] (1
// without weights) and 0 when its label is the ignore index; 'mean' divides
// by the sum of those weights, as ONNX and torch do.
//
//===----------------------------------------------------------------------===//

#include "runtime/Elementwise.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <cmath>

namespace cleave::rt {
namespace {

using detail::kParallelGrain;

struct LossDims {
  int64_t n, classes, spatial;
  explicit LossDims(const Shape &shape)
      : n(shape.dims[0]), classes(shape.dims[1]),
        spatial(shape.product(2, shape.rank)) {}
  int64_t samples() const { return n * spatial; }
  /// Flat index of class c of sample i in the [N, C, d...] tensor.
  int64_t at(int64_t i, int64_t c) const {
    return (i / spatial * classes + c) * spatial + i % spatial;
  }
};

/// The weight of sample i (0 when ignored); checks the label's range.
template <typename I>
float sampleWeight(const I *labels, int64_t i, const float *weights,
                   int64_t classes, bool hasIgnoreIndex, int64_t ignoreIndex) {
  int64_t label = static_cast<int64_t>(labels[i]);
  if (hasIgnoreIndex && label == ignoreIndex)
    return 0.0f;
  if (label < 0 || label >= classes)
    detail::fatal("label %lld out of range [0, %lld)",
                  static_cast<long long>(label),
                  static_cast<long long>(classes));
  return weights ? weights[label] : 1.0f;
}

/// -weight * logProb[label] per sample, reduced.
template <typename I>
void nllForward(const float *logProb, const LossDims &dims, const I *labels,
                const float *weights, Reduction reduction, bool hasIgnoreIndex,
                int64_t ignoreIndex, float *loss) {
  int64_t samples = dims.samples();
  double sum = 0.0, weightSum = 0.0;
  for (int64_t i = 0; i < samples; ++i) {
    float w = sampleWeight(labels, i, weights, dims.classes, hasIgnoreIndex,
                           ignoreIndex);
    float l = 0.0f;
    if (w != 0.0f)
      l = -w * logProb[dims.at(i, static_cast<int64_t>(labels[i]))];
    if (reduction == Reduction::None)
      loss[i] = l;
    sum += l;
    weightSum += w;
  }
  if (reduction == Reduction::Sum)
    loss[0] = static_cast<float>(sum);
  else if (reduction == Reduction::Mean)
    loss[0] = static_cast<float>(sum / weightSum);
}

/// The upstream gradient of sample i's unreduced loss, for reduction.
float sampleGradScale(const float *dLoss, Reduction reduction, int64_t i,
                      float meanScale) {
  if (reduction == Reduction::None)
    return dLoss[i];
  if (reduction == Reduction::Sum)
    return dLoss[0];
  return meanScale;
}

/// dLoss[0] / sum of sample weights for 'mean', else unused.
template <typename I>
float meanScale(const float *dLoss, const LossDims &dims, const I *labels,
                const float *weights, Reduction reduction, bool hasIgnoreIndex,
                int64_t ignoreIndex) {
  if (reduction != Reduction::Mean)
    return 0.0f;
  double weightSum = 0.0;
  for (int64_t i = 0; i < dims.samples(); ++i)
    weightSum += sampleWeight(labels, i, weights, dims.classes, hasIgnoreIndex,
                              ignoreIndex);
  return static_cast<float>(dLoss[0] / weightSum);
}

} // namespace

template <typename I>
void softmaxCrossEntropy(const float *scores, const Shape &scoresShape,
                         const I *labels, const float *weights,
                         Reduction reduction, bool hasIgnoreIndex,
                         int64_t ignoreIndex, float *loss, float *logProb) {
  softmax(scores, scoresShape, 1, /*log=*/true, logProb);
  nllForward(logProb, LossDims(scoresShape), labels, weights, reduction,
             hasIgnoreIndex, ignoreIndex, loss);
}

template <typename I>
void softmaxCrossEntropyGrad(const float *dLoss, const float *logProb,
                             const Shape &scoresShape, const I *labels,
                             const float *weights, Reduction reduction,
                             bool hasIgnoreIndex, int64_t ignoreIndex,
                             float *dScores) {
  LossDims dims(scoresShape);
  float mean = meanScale(dLoss, dims, labels, weights, reduction,
                         hasIgnoreIndex, ignoreIndex);
  int64_t samples = dims.samples();
  // d(-w * logsoftmax(x)[l]) / dx_c = w * (softmax(x)_c - [c == l]).
  bool parallel = samples * dims.classes > kParallelGrain;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < samples; ++i) {
    float w = sampleWeight(labels, i, weights, dims.classes, hasIgnoreIndex,
                           ignoreIndex);
    float g = w * sampleGradScale(dLoss, reduction, i, mean);
    int64_t label = static_cast<int64_t>(labels[i]);
    for (int64_t c = 0; c < dims.classes; ++c) {
      int64_t k = dims.at(i, c);
      float target = c == label ? 1.0f : 0.0f;
      dScores[k] = w == 0.0f ? 0.0f : g * (std::exp(logProb[k]) - target);
    }
  }
}

template <typename I>
void nllLoss(const float *input, const Shape &inputShape, const I *target,
             const float *weights, Reduction reduction, bool hasIgnoreIndex,
             int64_t ignoreIndex, float *loss) {
  nllForward(input, LossDims(inputShape), target, weights, reduction,
             hasIgnoreIndex, ignoreIndex, loss);
}

template <typename I>
void nllLossGrad(const float *dLoss, const Shape &inputShape, const I *target,
                 const float *weights, Reduction reduction, bool hasIgnoreIndex,
                 int64_t ignoreIndex, float *dInput) {
  LossDims dims(inputShape);
  std::fill(dInput, dInput + inputShape.numElements(), 0.0f);
  float mean = meanScale(dLoss, dims, target, weights, reduction,
                         hasIgnoreIndex, ignoreIndex);
  for (int64_t i = 0; i < dims.samples(); ++i) {
    float w = sampleWeight(target, i, weights, dims.classes, hasIgnoreIndex,
                           ignoreIndex);
    if (w != 0.0f)
      dInput[dims.at(i, static_cast<int64_t>(target[i]))] =
          -w * sampleGradScale(dLoss, reduction, i, mean);
  }
}

#define CLEAVE_INSTANTIATE_LOSS(I)                                             \
  template void softmaxCrossEntropy<I>(const float *, const Shape &,           \
                                       const I *, const float *, Reduction,    \
                                       bool, int64_t, float *, float *);       \
  template void softmaxCrossEntropyGrad<I>(                                    \
      const float *, const float *, const Shape &, const I *, const float *,   \
      Reduction, bool, int64_t, float *);                                      \
  template void nllLoss<I>(const float *, const Shape &, const I *,            \
                           const float *, Reduction, bool, int64_t, float *);  \
  template void nllLossGrad<I>(const float *, const Shape &, const I *,        \
                               const float *, Reduction, bool, int64_t,        \
                               float *);

CLEAVE_INSTANTIATE_LOSS(int64_t)
CLEAVE_INSTANTIATE_LOSS(int32_t)
#undef CLEAVE_INSTANTIATE_LOSS

} // namespace cleave::rt
