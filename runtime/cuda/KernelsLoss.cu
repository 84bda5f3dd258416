//===- KernelsLoss.cu - cross-entropy and NLL losses on the GPU -----------===//
//
// Part of the Cleave runtime's cuda backend: the work items of LossBodies.h.
// The reductions over samples run as one item, in sample order, as the cpu
// target sums them: a loss has one value per token, few enough that the
// order (and so the result) is worth more than the parallelism. Labels are
// not range-checked on the GPU (LossBodies.h says what happens instead).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/KernelInstantiations.h"
#include "runtime/LossBodies.h"
#include "runtime/NormalizationBodies.h"

namespace cleave::rt::cuda {

using namespace cleave::body;

namespace {

/// The gradient's scale for Reduction::Mean, computed once into `scratch`
/// (one float); null for the other reductions, whose items read dLoss
/// directly.
template <typename I>
const float *meanScale(const float *dLoss, const SampleWeights<I> &sw,
                       const LossView &view, Reduction reduction,
                       DeviceScratch &scratch) {
  if (reduction != Reduction::Mean)
    return nullptr;
  float *scale = scratch.as<float>();
  launch(1, LossMeanScale<I>{dLoss, scale, sw, view.samples()});
  return scale;
}

} // namespace

template <typename I>
void softmaxCrossEntropy(const float *scores, const Shape &scoresShape,
                         const I *labels, const float *weights,
                         Reduction reduction, bool hasIgnoreIndex,
                         int64_t ignoreIndex, float *loss, float *logProb) {
  // Phase 1: log-softmax over the classes, one line per sample.
  AxisView classes(scoresShape, 1);
  launch(classes.lines(), SoftmaxLine{scores, logProb, classes, /*log=*/true});
  // Phase 2: the weighted negative log-likelihood.
  LossView view(scoresShape);
  SampleWeights<I> sw{labels, weights, view.classes, hasIgnoreIndex,
                      ignoreIndex};
  NllForward<I> nll{logProb, loss, sw, view, reduction};
  launch(nll.items(), nll);
}

template <typename I>
void softmaxCrossEntropyGrad(const float *dLoss, const float *logProb,
                             const Shape &scoresShape, const I *labels,
                             const float *weights, Reduction reduction,
                             bool hasIgnoreIndex, int64_t ignoreIndex,
                             float *dScores) {
  LossView view(scoresShape);
  SampleWeights<I> sw{labels, weights, view.classes, hasIgnoreIndex,
                      ignoreIndex};
  DeviceScratch scratch(reduction == Reduction::Mean ? sizeof(float) : 0);
  const float *mean = meanScale(dLoss, sw, view, reduction, scratch);
  launch(view.elements(),
         SoftmaxCrossEntropyGradElement<I>{dLoss, mean, logProb, dScores, sw,
                                           view, reduction});
}

template <typename I>
void nllLoss(const float *input, const Shape &inputShape, const I *target,
             const float *weights, Reduction reduction, bool hasIgnoreIndex,
             int64_t ignoreIndex, float *loss) {
  LossView view(inputShape);
  SampleWeights<I> sw{target, weights, view.classes, hasIgnoreIndex,
                      ignoreIndex};
  NllForward<I> nll{input, loss, sw, view, reduction};
  launch(nll.items(), nll);
}

template <typename I>
void nllLossGrad(const float *dLoss, const Shape &inputShape, const I *target,
                 const float *weights, Reduction reduction, bool hasIgnoreIndex,
                 int64_t ignoreIndex, float *dInput) {
  LossView view(inputShape);
  SampleWeights<I> sw{target, weights, view.classes, hasIgnoreIndex,
                      ignoreIndex};
  DeviceScratch scratch(reduction == Reduction::Mean ? sizeof(float) : 0);
  const float *mean = meanScale(dLoss, sw, view, reduction, scratch);
  launch(view.elements(),
         NllLossGradElement<I>{dLoss, mean, dInput, sw, view, reduction});
}

CLEAVE_FOR_EACH_INDEX_TYPE(CLEAVE_INSTANTIATE_LOSS)

} // namespace cleave::rt::cuda
