//===- TrainingTest.cpp - dropout, SGD and AdamW --------------------------===//
//
// The optimizer expectations are worked by hand from torch.optim's update
// rules (torch 1.13), as documented in Kernels.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernels.h"
#include "runtime/Rng.h"

#include "test/unit/runtime/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace cleave::rt;
using cleave::rt::test::randomVector;

namespace {

TEST(Training, DropoutMatchesReferenceMask) {
  // torch_train.py's vector: seed 1234, node 0, step 0, ratio 0.25.
  std::vector<float> x(16, 3.0f), y(16);
  bool mask[16];
  dropout(x.data(), 16, 0.25f, 1234, 0, 0, nullptr, 16, 16, y.data(), mask);
  std::string keep;
  for (int i = 0; i < 16; ++i) {
    keep += mask[i] ? '1' : '0';
    EXPECT_EQ(y[i], mask[i] ? 3.0f / 0.75f : 0.0f) << i;
  }
  EXPECT_EQ(keep, "1011111110110111");
  // A null mask is allowed.
  std::vector<float> y2(16);
  dropout(x.data(), 16, 0.25f, 1234, 0, 0, nullptr, 16, 16, y2.data(), nullptr);
  EXPECT_EQ(y2, y);
}

TEST(Training, DropoutOffKeepsEverything) {
  // Ratio 0 (a model exported with p = 0), a whole block and a strided one,
  // in place too: the input unchanged and every mask element true.
  auto x = randomVector(40, 3);
  std::vector<float> y(40, -1.0f);
  bool mask[40] = {};
  dropout(x.data(), 40, 0.0f, 5, 0, 2, nullptr, 40, 40, y.data(), mask);
  EXPECT_EQ(y, x);
  for (int i = 0; i < 40; ++i)
    EXPECT_TRUE(mask[i]) << i;
  std::vector<float> inPlace = x;
  dropout(inPlace.data(), 40, 0.0f, 5, 0, 2, nullptr, 8, 16, inPlace.data(),
          nullptr);
  EXPECT_EQ(inPlace, x);
}

TEST(Training, DropoutOfABlockIsTheWholeTensorsRows) {
  // A block of rows (a rank's share of the batch, a micro-batch) with its
  // offset is masked as those rows of the whole tensor.
  auto x = randomVector(64, 2);
  std::vector<float> whole(64), block(24);
  bool wholeMask[64], blockMask[24];
  dropout(x.data(), 64, 0.3f, 7, 1, 5, nullptr, 64, 64, whole.data(),
          wholeMask);
  int64_t offset = 32;
  dropout(x.data() + 32, 24, 0.3f, 7, 1, 5, &offset, 24, 24, block.data(),
          blockMask);
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(block[i], whole[32 + i]) << i;
    EXPECT_EQ(blockMask[i], wholeMask[32 + i]) << i;
  }
}

TEST(Training, DropoutOfAStridedBlockIsTheWholeTensorsElements) {
  // A block of a [4, 6, 5] tensor split along dims 0 and 1 (rows 2-3,
  // columns 3-5 of dim 1: a rank's share of the batch and of the features)
  // with row_dim 1: rows of 3 x 5 elements, 6 x 5 apart in the whole.
  auto x = randomVector(120, 3);
  std::vector<float> whole(120);
  bool wholeMask[120];
  dropout(x.data(), 120, 0.4f, 11, 2, 9, nullptr, 120, 120, whole.data(),
          wholeMask);
  std::vector<float> blockIn, block(30);
  for (int b = 2; b < 4; ++b)
    for (int f = 3; f < 6; ++f)
      for (int k = 0; k < 5; ++k)
        blockIn.push_back(x[(b * 6 + f) * 5 + k]);
  bool blockMask[30];
  int64_t offset = (2 * 6 + 3) * 5;
  dropout(blockIn.data(), 30, 0.4f, 11, 2, 9, &offset, 15, 30, block.data(),
          blockMask);
  int i = 0;
  for (int b = 2; b < 4; ++b)
    for (int f = 3; f < 6; ++f)
      for (int k = 0; k < 5; ++k, ++i) {
        EXPECT_EQ(block[i], whole[(b * 6 + f) * 5 + k]) << i;
        EXPECT_EQ(blockMask[i], wholeMask[(b * 6 + f) * 5 + k]) << i;
      }
}

TEST(Training, DropoutRatioZeroIsIdentity) {
  auto x = randomVector(100, 1);
  std::vector<float> y(100);
  dropout(x.data(), 100, 0.0f, 5, 2, 3, nullptr, 100, 100, y.data(), nullptr);
  EXPECT_EQ(y, x);
}

TEST(Training, DropoutLargeKeepsExpectedFraction) {
  // Threaded; each element still follows dropoutUniform.
  const int64_t n = 200000;
  std::vector<float> x(n, 1.0f), y(n);
  std::vector<char> mask(n);
  dropout(x.data(), n, 0.1f, 99, 4, 17, nullptr, n, n, y.data(),
          reinterpret_cast<bool *>(mask.data()));
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool want = dropoutUniform(99, 4, 17, i) >= 0.1f;
    ASSERT_EQ(static_cast<bool>(mask[i]), want) << i;
    kept += want;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.9, 0.005);
}

/// Runs sgdUpdate on one element for the given gradients.
std::vector<float> sgdTrace(float p, std::vector<float> grads, float lr,
                            float momentum, float dampening, bool nesterov,
                            float weightDecay) {
  float buf = 12345.0f; // garbage: step 0 must overwrite it
  std::vector<float> trace;
  for (size_t t = 0; t < grads.size(); ++t) {
    sgdUpdate(&p, &grads[t], momentum != 0.0f ? &buf : nullptr, 1, lr, momentum,
              dampening, nesterov, weightDecay, t);
    trace.push_back(p);
  }
  return trace;
}

void expectTrace(const std::vector<float> &got,
                 const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6f) << "step " << i;
}

TEST(Training, SgdPlainAndWeightDecay) {
  expectTrace(sgdTrace(1.0f, {0.5f}, 0.1f, 0, 0, false, 0), {0.95f});
  // g = 0.5 + 0.1 * 1.
  expectTrace(sgdTrace(1.0f, {0.5f}, 0.1f, 0, 0, false, 0.1f), {0.94f});
}

TEST(Training, SgdMomentum) {
  // buf: 1, 0.9 * 1 + 2 = 2.9, 0.9 * 2.9 - 1 = 1.61.
  expectTrace(sgdTrace(0.0f, {1, 2, -1}, 0.1f, 0.9f, 0, false, 0),
              {-0.1f, -0.39f, -0.551f});
  // Dampening 0.5 is not applied at step 0: buf 1, 1.9, 1.21.
  expectTrace(sgdTrace(0.0f, {1, 2, -1}, 0.1f, 0.9f, 0.5f, false, 0),
              {-0.1f, -0.29f, -0.411f});
}

TEST(Training, SgdNesterov) {
  // g + 0.9 * buf: 1.9, then 2 + 0.9 * 2.9 = 4.61.
  expectTrace(sgdTrace(0.0f, {1, 2}, 0.1f, 0.9f, 0, true, 0),
              {-0.19f, -0.651f});
  // With weight decay 0.1 from p = 1: g = 1.1, buf = 1.1, 1.1 + 0.99.
  expectTrace(sgdTrace(1.0f, {1}, 0.1f, 0.9f, 0, true, 0.1f), {0.791f});
}

TEST(Training, AdamwHandSteps) {
  // lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.01, p = 1.
  // Step 1 (g = 0.5): p = 0.999 - (0.05 / 0.1) / (0.5 + 1e-8) = 0.899.
  // Steps 2 and 3 (g = -1, 0.25) worked in double from the same formula.
  // The hyperparameters are float (the dialect's f32 attributes): 1 - 0.999f
  // is 1.3e-5 relative below 1 - 0.999, so v carries that relative error;
  // it cancels against the bias correction in p.
  float p = 1.0f, m = 0.0f, v = 0.0f;
  float grads[3] = {0.5f, -1.0f, 0.25f};
  double want[3] = {0.899000002, 0.9347113542385653, 0.9474457089827375};
  double wantM[3] = {0.05, -0.055, -0.0245};
  double wantV[3] = {0.00025, 0.00124975, 0.00131100025};
  for (int t = 0; t < 3; ++t) {
    adamwUpdate(&p, &grads[t], &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, t);
    EXPECT_NEAR(p, want[t], 2e-6) << "step " << t;
    EXPECT_NEAR(m, wantM[t], 1e-7) << "step " << t;
    EXPECT_NEAR(v, wantV[t], 2e-5 * wantV[t]) << "step " << t;
  }
}

TEST(Training, AdamwManyElements) {
  // Threaded path: every element follows the same double-precision
  // reference recurrence.
  const int64_t n = 100000;
  auto p = randomVector(n, 1), g = randomVector(n, 2);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  std::vector<double> rp(p.begin(), p.end()), rm(n, 0.0), rv(n, 0.0);
  const double lr = 0.01, b1 = 0.8, b2 = 0.99, eps = 1e-6, wd = 0.1;
  for (int64_t t = 0; t < 2; ++t) {
    adamwUpdate(p.data(), g.data(), m.data(), v.data(), n, lr, b1, b2, eps, wd,
                t);
    for (int64_t i = 0; i < n; ++i) {
      rp[i] *= 1 - float(lr) * float(wd);
      rm[i] = float(b1) * rm[i] + (1 - float(b1)) * g[i];
      rv[i] = float(b2) * rv[i] + (1 - float(b2)) * g[i] * double(g[i]);
      double bc1 = 1 - std::pow(double(float(b1)), t + 1);
      double bc2 = 1 - std::pow(double(float(b2)), t + 1);
      rp[i] -= float(lr) / bc1 * rm[i] / (std::sqrt(rv[i] / bc2) + float(eps));
    }
  }
  for (int64_t i = 0; i < n; i += 7)
    ASSERT_NEAR(p[i], rp[i], 1e-5) << i;
}

} // namespace
