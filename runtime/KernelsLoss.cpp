//===- KernelsLoss.cpp - cross-entropy and negative log-likelihood --------===//
//
// Part of the Cleave runtime. Shapes: scores/input [N, C, d...], labels
// [N, d...], weights [C] or null. A sample's weight is weights[label] (1
// without weights) and 0 when its label is the ignore index; 'mean' divides
// by the sum of those weights, as ONNX and torch do. The work items of
// LossBodies.h, the same ones the cuda target launches.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelInstantiations.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/LossBodies.h"

namespace cleave::rt {
namespace {

using namespace cleave::body;
using detail::runItems;

/// The labels with their weights, after checking that each is in [0, C) or
/// the ignore index: the GPU's work items cannot report a bad label
/// (LossBodies.h says what they do instead), the cpu target exits on one
/// before it runs them.
template <typename I>
SampleWeights<I> checkedLabels(const I *labels, const float *weights,
                               const LossView &view, bool hasIgnoreIndex,
                               int64_t ignoreIndex) {
  SampleWeights<I> sw{labels, weights, view.classes, hasIgnoreIndex,
                      ignoreIndex};
  for (int64_t i = 0; i < view.samples(); ++i) {
    int64_t label = sw.label(i);
    if ((!hasIgnoreIndex || label != ignoreIndex) &&
        (label < 0 || label >= view.classes))
      detail::fatal("label %lld out of range [0, %lld)",
                    static_cast<long long>(label),
                    static_cast<long long>(view.classes));
  }
  return sw;
}

/// The weighted negative log-likelihood of the log-probabilities.
template <typename I>
void nllForward(const float *logProb, const LossView &view, const I *labels,
                const float *weights, Reduction reduction, bool hasIgnoreIndex,
                int64_t ignoreIndex, float *loss) {
  NllForward<I> nll{
      logProb, loss,
      checkedLabels(labels, weights, view, hasIgnoreIndex, ignoreIndex), view,
      reduction};
  runItems(nll.items(), view.samples(), nll);
}

/// dLoss[0] / (sum of the sample weights) for Reduction::Mean, else unused.
template <typename I>
float meanScale(const float *dLoss, const SampleWeights<I> &sw,
                const LossView &view, Reduction reduction) {
  float scale = 0.0f;
  if (reduction == Reduction::Mean)
    LossMeanScale<I>{dLoss, &scale, sw, view.samples()}(0);
  return scale;
}

} // namespace

template <typename I>
void softmaxCrossEntropy(const float *scores, const Shape &scoresShape,
                         const I *labels, const float *weights,
                         Reduction reduction, bool hasIgnoreIndex,
                         int64_t ignoreIndex, float *loss, float *logProb) {
  softmax(scores, scoresShape, 1, /*log=*/true, logProb);
  nllForward(logProb, LossView(scoresShape), labels, weights, reduction,
             hasIgnoreIndex, ignoreIndex, loss);
}

template <typename I>
void softmaxCrossEntropyGrad(const float *dLoss, const float *logProb,
                             const Shape &scoresShape, const I *labels,
                             const float *weights, Reduction reduction,
                             bool hasIgnoreIndex, int64_t ignoreIndex,
                             float *dScores) {
  LossView view(scoresShape);
  auto sw = checkedLabels(labels, weights, view, hasIgnoreIndex, ignoreIndex);
  float mean = meanScale(dLoss, sw, view, reduction);
  SoftmaxCrossEntropyGradElement<I> grad{dLoss, &mean, logProb,  dScores,
                                         sw,    view,  reduction};
  runItems(view.samples(), view.elements(), [&](int64_t i) { grad.sample(i); });
}

template <typename I>
void nllLoss(const float *input, const Shape &inputShape, const I *target,
             const float *weights, Reduction reduction, bool hasIgnoreIndex,
             int64_t ignoreIndex, float *loss) {
  nllForward(input, LossView(inputShape), target, weights, reduction,
             hasIgnoreIndex, ignoreIndex, loss);
}

template <typename I>
void nllLossGrad(const float *dLoss, const Shape &inputShape, const I *target,
                 const float *weights, Reduction reduction, bool hasIgnoreIndex,
                 int64_t ignoreIndex, float *dInput) {
  LossView view(inputShape);
  auto sw = checkedLabels(target, weights, view, hasIgnoreIndex, ignoreIndex);
  float mean = meanScale(dLoss, sw, view, reduction);
  NllLossGradElement<I> grad{dLoss, &mean, dInput, sw, view, reduction};
  runItems(view.samples(), view.elements(), [&](int64_t i) { grad.sample(i); });
}

CLEAVE_FOR_EACH_INDEX_TYPE(CLEAVE_INSTANTIATE_LOSS)

} // namespace cleave::rt
