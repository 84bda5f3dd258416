//===- LossTest.cpp - softmax cross-entropy and NLL -----------------------===//

#include "runtime/Kernels.h"

#include "test/unit/runtime/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace cleave::rt;
using cleave::rt::test::dot;
using cleave::rt::test::expectGradient;
using cleave::rt::test::randomVector;

namespace {

// scores [[1, 2, 3], [1, 1, 1]], labels [2, 0]: log-probabilities
// [-2.4076, -1.4076, -0.4076] and [-1.0986] * 3.
const std::vector<float> kScores = {1, 2, 3, 1, 1, 1};
const Shape kShape{2, 3};
const float kL0 = 0.40760596f, kL1 = 1.09861229f;

float sce(Reduction red, const float *weights, bool hasIgnore = false,
          int64_t ignore = 0) {
  int64_t labels[2] = {2, 0};
  std::vector<float> loss(2), logProb(6);
  softmaxCrossEntropy(kScores.data(), kShape, labels, weights, red, hasIgnore,
                      ignore, loss.data(), logProb.data());
  return loss[0];
}

TEST(Loss, SoftmaxCrossEntropyHandValues) {
  int64_t labels[2] = {2, 0};
  std::vector<float> loss(2), logProb(6);
  softmaxCrossEntropy(kScores.data(), kShape, labels, nullptr, Reduction::None,
                      false, 0, loss.data(), logProb.data());
  EXPECT_NEAR(loss[0], kL0, 1e-6f);
  EXPECT_NEAR(loss[1], kL1, 1e-6f);
  EXPECT_NEAR(logProb[0], -2.40760596f, 1e-6f);
  EXPECT_NEAR(logProb[4], -kL1, 1e-6f);
  EXPECT_NEAR(sce(Reduction::Sum, nullptr), kL0 + kL1, 1e-6f);
  EXPECT_NEAR(sce(Reduction::Mean, nullptr), (kL0 + kL1) / 2, 1e-6f);
}

TEST(Loss, SoftmaxCrossEntropyWeightsAndIgnoreIndex) {
  std::vector<float> w = {1, 2, 3};
  // Weighted mean divides by the weights of the samples: 3 + 1.
  EXPECT_NEAR(sce(Reduction::Mean, w.data()), (3 * kL0 + kL1) / 4, 1e-6f);
  EXPECT_NEAR(sce(Reduction::Sum, w.data()), 3 * kL0 + kL1, 1e-6f);
  // Ignoring label 2 drops sample 0 from the sum and the count.
  EXPECT_NEAR(sce(Reduction::Mean, nullptr, true, 2), kL1, 1e-6f);
  EXPECT_NEAR(sce(Reduction::Sum, nullptr, true, 2), kL1, 1e-6f);
  EXPECT_NEAR(sce(Reduction::Mean, w.data(), true, 0), kL0, 1e-6f);
  // An ignore index that no label has changes nothing.
  EXPECT_NEAR(sce(Reduction::Mean, nullptr, true, -100), (kL0 + kL1) / 2,
              1e-6f);
}

TEST(Loss, SoftmaxCrossEntropySpatialInt32) {
  // scores [N=1, C=2, d=3], labels [1, 0, 1] (int32).
  std::vector<float> scores = {0, 1, 2, 1, 1, 0};
  int32_t labels[3] = {1, 0, 1};
  std::vector<float> loss(3), logProb(6);
  softmaxCrossEntropy(scores.data(), Shape{1, 2, 3}, labels, nullptr,
                      Reduction::None, false, 0, loss.data(), logProb.data());
  for (int s = 0; s < 3; ++s) {
    double a = scores[s], b = scores[3 + s];
    double lse = std::log(std::exp(a) + std::exp(b));
    double want = lse - (labels[s] == 0 ? a : b);
    EXPECT_NEAR(loss[s], want, 1e-6) << s;
  }
}

/// Checks dScores of every reduction against central differences, with
/// weights, an ignored sample and spatial dims.
template <typename I> void checkSceGrad(bool withWeights) {
  Shape shape{2, 4, 3};
  std::vector<I> labels = {0, 3, 1, 2, 2, 3};
  auto weights = randomVector(4, 1, 0.5f, 2.0f);
  const float *w = withWeights ? weights.data() : nullptr;
  for (Reduction red : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
    auto scores = randomVector(shape.numElements(), 2, -2.0f, 2.0f);
    auto r = randomVector(6, 3);
    int64_t lossSize = red == Reduction::None ? 6 : 1;
    r.resize(lossSize);
    auto loss = [&] {
      std::vector<float> l(lossSize), lp(scores.size());
      softmaxCrossEntropy(scores.data(), shape, labels.data(), w, red, true, 1,
                          l.data(), lp.data());
      return dot(l, r);
    };
    std::vector<float> l(lossSize), lp(scores.size()), ds(scores.size());
    softmaxCrossEntropy(scores.data(), shape, labels.data(), w, red, true, 1,
                        l.data(), lp.data());
    softmaxCrossEntropyGrad(r.data(), lp.data(), shape, labels.data(), w, red,
                            true, 1, ds.data());
    expectGradient(scores, ds, loss);
  }
}

TEST(Loss, SoftmaxCrossEntropyGradMatchesDifferences) {
  checkSceGrad<int64_t>(false);
  checkSceGrad<int64_t>(true);
  checkSceGrad<int32_t>(true);
}

TEST(Loss, NllLossHandValues) {
  std::vector<float> input = {-1, -2, -3, -4};
  int64_t target[2] = {1, 0};
  std::vector<float> loss(2);
  nllLoss(input.data(), Shape{2, 2}, target, nullptr, Reduction::None, false, 0,
          loss.data());
  EXPECT_EQ(loss, (std::vector<float>{2, 3}));
  nllLoss(input.data(), Shape{2, 2}, target, nullptr, Reduction::Mean, false, 0,
          loss.data());
  EXPECT_FLOAT_EQ(loss[0], 2.5f);
  std::vector<float> w = {0.5f, 2.0f};
  // (2 * 2 + 0.5 * 3) / (2 + 0.5).
  nllLoss(input.data(), Shape{2, 2}, target, w.data(), Reduction::Mean, false,
          0, loss.data());
  EXPECT_FLOAT_EQ(loss[0], 2.2f);
  nllLoss(input.data(), Shape{2, 2}, target, w.data(), Reduction::Sum, true, 0,
          loss.data());
  EXPECT_FLOAT_EQ(loss[0], 4.0f);
}

template <typename I> void checkNllGrad() {
  Shape shape{3, 4, 2};
  std::vector<I> target = {0, 3, 1, 2, 2, 0};
  auto weights = randomVector(4, 4, 0.5f, 2.0f);
  for (Reduction red : {Reduction::None, Reduction::Sum, Reduction::Mean})
    for (const float *w : {static_cast<const float *>(nullptr),
                           static_cast<const float *>(weights.data())}) {
      auto input = randomVector(shape.numElements(), 5);
      int64_t lossSize = red == Reduction::None ? 6 : 1;
      auto r = randomVector(lossSize, 6);
      std::vector<float> dInput(input.size(), 7.0f);
      nllLossGrad(r.data(), shape, target.data(), w, red, true, 2,
                  dInput.data());
      expectGradient(input, dInput, [&] {
        std::vector<float> l(lossSize);
        nllLoss(input.data(), shape, target.data(), w, red, true, 2, l.data());
        return dot(l, r);
      });
    }
}

TEST(Loss, NllLossGradMatchesDifferences) {
  checkNllGrad<int64_t>();
  checkNllGrad<int32_t>();
}

TEST(Loss, LabelOutOfRangeAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int64_t labels[2] = {2, 3};
  std::vector<float> loss(1), logProb(6);
  EXPECT_DEATH(softmaxCrossEntropy(kScores.data(), kShape, labels, nullptr,
                                   Reduction::Mean, false, 0, loss.data(),
                                   logProb.data()),
               "label 3 out of range");
}

} // namespace
