//===- NormalizationTest.cpp - softmax, layer norm, batch norm ------------===//

#include "runtime/Kernels.h"

#include "test/unit/runtime/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

using namespace cleave::rt;
using cleave::rt::test::dot;
using cleave::rt::test::expectGradient;
using cleave::rt::test::randomVector;

namespace {

void expectAllNear(const std::vector<float> &got,
                   const std::vector<float> &want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(Normalization, SoftmaxHandValues) {
  std::vector<float> x = {1, 2, 3, 1001, 1002, 1003}, y(6);
  softmax(x.data(), Shape{2, 3}, 1, false, y.data());
  // Shift-invariant, and no overflow for the second row.
  expectAllNear(y, {0.09003057f, 0.24472847f, 0.66524096f, 0.09003057f,
                    0.24472847f, 0.66524096f});
  softmax(x.data(), Shape{2, 3}, -1, true, y.data());
  expectAllNear(y,
                {-2.40760596f, -1.40760596f, -0.40760596f, -2.40760596f,
                 -1.40760596f, -0.40760596f},
                1e-4f);
}

/// softmax along a middle axis against exp / sum computed directly.
TEST(Normalization, SoftmaxStridedAxis) {
  Shape shape{2, 3, 300};
  auto x = randomVector(shape.numElements(), 1, -5.0f, 5.0f);
  std::vector<float> y(x.size()), ly(x.size());
  softmax(x.data(), shape, 1, false, y.data());
  softmax(x.data(), shape, 1, true, ly.data());
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t i = 0; i < 300; ++i) {
      double sum = 0.0;
      for (int64_t d = 0; d < 3; ++d)
        sum += std::exp(double(x[(o * 3 + d) * 300 + i]));
      for (int64_t d = 0; d < 3; ++d) {
        int64_t k = (o * 3 + d) * 300 + i;
        ASSERT_NEAR(y[k], std::exp(double(x[k])) / sum, 1e-6);
        ASSERT_NEAR(ly[k], double(x[k]) - std::log(sum), 1e-5);
      }
    }
}

/// Contiguous lines shorter than 32 (run as blocks of lines, their exps in
/// one loop) against the same lines laid out along a strided axis (run
/// line by line): every length 1-33, softmax and log-softmax, a block
/// boundary inside the lines, masked (-inf) scores, and a line all -inf
/// (NaN, as PyTorch gives).
TEST(Normalization, SoftmaxShortLinesMatchStrided) {
  const int64_t lines = 70;
  for (int64_t d = 1; d <= 33; ++d) {
    auto x = randomVector(lines * d, 3 + d, -20.0f, 20.0f);
    for (int64_t i = 0; i < lines; i += 7)
      x[i * d + (i % d)] = -INFINITY;
    for (int64_t k = 0; k < d; ++k)
      x[5 * d + k] = -INFINITY;
    // The same values as [d, lines]: softmax along axis 0 is strided.
    std::vector<float> xt(x.size());
    for (int64_t i = 0; i < lines; ++i)
      for (int64_t k = 0; k < d; ++k)
        xt[k * lines + i] = x[i * d + k];
    for (bool log : {false, true}) {
      std::vector<float> y(x.size()), yt(x.size());
      softmax(x.data(), Shape{lines, d}, 1, log, y.data());
      softmax(xt.data(), Shape{d, lines}, 0, log, yt.data());
      for (int64_t i = 0; i < lines; ++i)
        for (int64_t k = 0; k < d; ++k) {
          float got = y[i * d + k], want = yt[k * lines + i];
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << "d " << d << " line " << i;
            continue;
          }
          if (std::isinf(want)) {
            EXPECT_EQ(got, want) << "d " << d << " line " << i;
            continue;
          }
          EXPECT_NEAR(got, want, 1e-6f * std::max(1.0f, std::fabs(want)))
              << "d " << d << " line " << i << " log " << log;
        }
    }
  }
}

TEST(Normalization, SoftmaxLargeRowsSumToOne) {
  Shape shape{64, 1000};
  auto x = randomVector(shape.numElements(), 2, -10.0f, 10.0f);
  std::vector<float> y(x.size());
  softmax(x.data(), shape, 1, false, y.data());
  for (int64_t r = 0; r < 64; ++r) {
    double s = 0.0;
    for (int64_t i = 0; i < 1000; ++i)
      s += y[r * 1000 + i];
    ASSERT_NEAR(s, 1.0, 1e-5);
  }
}

TEST(Normalization, SoftmaxGradMatchesDifferences) {
  for (bool log : {false, true})
    for (int axis : {1, 2}) {
      Shape shape{2, 3, 4};
      auto x = randomVector(shape.numElements(), 3, -2.0f, 2.0f);
      auto w = randomVector(shape.numElements(), 4);
      std::vector<float> y(x.size()), dx(x.size());
      softmax(x.data(), shape, axis, log, y.data());
      softmaxGrad(y.data(), w.data(), shape, axis, log, dx.data());
      expectGradient(x, dx, [&] {
        std::vector<float> yy(x.size());
        softmax(x.data(), shape, axis, log, yy.data());
        return dot(yy, w);
      });
    }
}

/// One case of attention's scale and mask around a softmax.
struct MaskedCase {
  Shape shape;
  int axis;
  Shape maskShape;
  bool additive; // an additive mask, else a where-condition
  bool keepWhen; // where(c, z, fill) when true, where(c, fill, z) else
  bool divide;
};

std::vector<MaskedCase> maskedCases() {
  return {
      // GPT's causal mask: where(tril, scores * scale, -inf), lines of 5
      // (the short-line blocks) and of 40.
      {{2, 3, 5, 5}, 3, {1, 1, 5, 5}, false, true, false},
      {{2, 2, 40, 40}, -1, {1, 1, 40, 40}, false, true, false},
      // nn.MultiheadAttention's key padding mask: an additive [B*H, 1, S].
      {{4, 6, 6}, 2, {4, 1, 6}, true, true, true},
      {{4, 3, 37}, 2, {4, 1, 37}, true, true, false},
      // Short lines over several blocks of 64 lines, and an additive mask
      // repeated along the lines (one value per line).
      {{5, 30, 12}, 2, {5, 1, 12}, true, true, false},
      {{3, 4, 10}, 2, {3, 4, 1}, true, true, true},
      // masked_fill(pad, fill): where(c, fill, z); a mask of lower rank.
      {{2, 3, 7, 40}, 3, {40}, false, false, true},
      // Along a middle axis (strided lines), the mask repeated along it.
      {{2, 5, 3}, 1, {2, 1, 3}, true, true, false},
      {{2, 5, 3}, 1, {5, 1}, false, false, false},
  };
}

/// The mask's element for element `i` of `shape`.
int64_t maskIndexOf(const Shape &shape, const Shape &mask, int64_t i) {
  int64_t idx[kMaxRank], at = 0;
  cleave::rt::test::unflatten(shape, i, idx);
  for (int d = 0; d < mask.rank; ++d) {
    int64_t size = mask.dims[d];
    at = at * size + (size == 1 ? 0 : idx[shape.rank - mask.rank + d]);
  }
  return at;
}

/// softmaxMasked against softmax of the scores scaled and masked by
/// separate loops (what the unfused program computes, op by op): the same
/// float operations in the same order, so equal up to the exps' rounding.
TEST(Normalization, SoftmaxMaskedMatchesUnfused) {
  uint32_t seed = 50;
  for (const MaskedCase &c : maskedCases())
    for (bool log : {false, true}) {
      SCOPED_TRACE(testing::Message() << "rank " << c.shape.rank << " axis "
                                      << c.axis << " log " << log);
      int64_t n = c.shape.numElements(), m = c.maskShape.numElements();
      auto x = randomVector(n, seed++, -8.0f, 8.0f);
      auto noise = randomVector(m, seed++);
      std::vector<float> additive(m);
      std::unique_ptr<bool[]> condition(new bool[m]);
      for (int64_t i = 0; i < m; ++i) {
        condition[i] = noise[i] > -0.3f;
        additive[i] = noise[i] > 0.5f ? -INFINITY : noise[i];
      }
      const float scale = 0.35f, fill = c.keepWhen ? -INFINITY : -1e9f;
      std::vector<float> z(n);
      for (int64_t i = 0; i < n; ++i) {
        float v = c.divide ? x[i] / scale : x[i] * scale;
        int64_t k = maskIndexOf(c.shape, c.maskShape, i);
        if (c.additive)
          v = v + additive[k];
        else
          v = condition[k] == c.keepWhen ? v : fill;
        z[i] = v;
      }
      std::vector<float> want(n), got(n);
      softmax(z.data(), c.shape, c.axis, log, want.data());
      SoftmaxMasking masking;
      masking.scale = &scale;
      masking.divide = c.divide;
      if (c.additive)
        masking.mask = additive.data();
      else
        masking.condition = condition.get();
      masking.keepWhen = c.keepWhen;
      masking.fill = &fill;
      masking.maskShape = c.maskShape;
      softmaxMasked(x.data(), c.shape, c.axis, log, masking, got.data());
      for (int64_t i = 0; i < n; ++i) {
        if (std::isinf(want[i]) || std::isnan(want[i])) {
          EXPECT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "at " << i;
          if (!std::isnan(want[i])) {
            EXPECT_EQ(got[i], want[i]) << "at " << i;
          }
          continue;
        }
        EXPECT_NEAR(got[i], want[i], 1e-6f * std::max(1.0f, std::fabs(want[i])))
            << "at " << i;
      }
      // In place: y in x's buffer.
      softmaxMasked(x.data(), c.shape, c.axis, log, masking, x.data());
      for (int64_t i = 0; i < n; ++i)
        if (!std::isnan(got[i])) {
          EXPECT_EQ(x[i], got[i]) << "in place, at " << i;
        }
    }
}

/// softmaxGradMasked with a scale alone (the backward pass of attention
/// whose mask is additive) against softmaxGrad then the scale: lines short
/// and long, in one block of lines and several, multiplied and divided.
TEST(Normalization, SoftmaxGradScaledMatchesUnfused) {
  uint32_t seed = 120;
  const Shape shapes[] = {{4, 6, 6}, {5, 30, 12}, {4, 3, 37}};
  for (const Shape &shape : shapes)
    for (bool divide : {false, true})
      for (bool log : {false, true}) {
        SCOPED_TRACE(testing::Message() << "d " << shape.dims[2] << " divide "
                                        << divide << " log " << log);
        int64_t n = shape.numElements();
        auto x = randomVector(n, seed++, -3.0f, 3.0f);
        auto dy = randomVector(n, seed++);
        std::vector<float> y(n), dx(n), got(n);
        softmax(x.data(), shape, 2, log, y.data());
        softmaxGrad(y.data(), dy.data(), shape, 2, log, dx.data());
        const float scale = 0.35f;
        SoftmaxMasking masking;
        masking.scale = &scale;
        masking.divide = divide;
        softmaxGradMasked(y.data(), dy.data(), shape, 2, log, masking,
                          got.data());
        for (int64_t i = 0; i < n; ++i)
          EXPECT_EQ(got[i], divide ? dx[i] / scale : dx[i] * scale)
              << "at " << i;
      }
}

/// softmaxGradMasked against softmaxGrad followed by the where and the
/// scale as separate loops (the unfused backward pass), and, with a zero
/// fill, against central differences of softmaxMasked.
TEST(Normalization, SoftmaxGradMaskedMatchesUnfused) {
  uint32_t seed = 80;
  for (const MaskedCase &c : maskedCases()) {
    if (c.additive)
      continue;
    for (bool log : {false, true}) {
      SCOPED_TRACE(testing::Message() << "rank " << c.shape.rank << " axis "
                                      << c.axis << " log " << log);
      int64_t n = c.shape.numElements(), m = c.maskShape.numElements();
      auto x = randomVector(n, seed++, -3.0f, 3.0f);
      auto dy = randomVector(n, seed++);
      auto noise = randomVector(m, seed++);
      std::unique_ptr<bool[]> condition(new bool[m]);
      for (int64_t i = 0; i < m; ++i)
        condition[i] = noise[i] > -0.3f;
      const float scale = 0.35f, fill = -1e9f, zero = 0.0f;
      SoftmaxMasking masking;
      masking.scale = &scale;
      masking.divide = c.divide;
      masking.condition = condition.get();
      masking.keepWhen = c.keepWhen;
      masking.fill = &fill;
      masking.maskShape = c.maskShape;
      std::vector<float> y(n), dx(n), want(n), got(n);
      softmaxMasked(x.data(), c.shape, c.axis, log, masking, y.data());
      softmaxGrad(y.data(), dy.data(), c.shape, c.axis, log, dx.data());
      for (int64_t i = 0; i < n; ++i) {
        int64_t k = maskIndexOf(c.shape, c.maskShape, i);
        float v = condition[k] == c.keepWhen ? dx[i] : zero;
        want[i] = c.divide ? v / scale : v * scale;
      }
      SoftmaxMasking gradMasking = masking;
      gradMasking.fill = &zero;
      softmaxGradMasked(y.data(), dy.data(), c.shape, c.axis, log, gradMasking,
                        got.data());
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6f * std::max(1.0f, std::fabs(want[i])))
            << "at " << i;
      // A finite fill keeps every line finite for the differences (of the
      // softmax: log-softmax's masked outputs sit near the fill, -1e9,
      // where float differences are noise).
      if (n > 200 || log)
        continue;
      expectGradient(x, got, [&] {
        std::vector<float> yy(x.size());
        softmaxMasked(x.data(), c.shape, c.axis, log, masking, yy.data());
        return dot(yy, dy);
      });
    }
  }
}

TEST(Normalization, LayerNormHandValues) {
  std::vector<float> x = {1, 2, 3, 4}, scale = {1, 2, 1, 2},
                     bias = {0, 0, 1, 1}, y(4);
  float mean, invStd;
  layerNorm(x.data(), Shape{1, 4}, 1, scale.data(), bias.data(), 0.0f, y.data(),
            &mean, &invStd);
  EXPECT_FLOAT_EQ(mean, 2.5f);
  // Biased variance 1.25.
  EXPECT_NEAR(invStd, 0.894427191f, 1e-6f);
  expectAllNear(y, {-1.3416408f, -0.8944272f, 1.4472136f, 3.6832816f});
  // No bias, epsilon added to the variance.
  layerNorm(x.data(), Shape{4}, 0, scale.data(), nullptr, 0.75f, y.data(),
            &mean, &invStd);
  EXPECT_NEAR(invStd, 1.0f / std::sqrt(2.0f), 1e-6f);
  expectAllNear(y, {-1.0606602f, -0.7071068f, 0.3535534f, 2.1213203f});
}

TEST(Normalization, LayerNormGradMatchesDifferences) {
  Shape shape{3, 2, 5};
  const int axis = 1;
  const int64_t rows = 3, d = 10;
  auto x = randomVector(shape.numElements(), 5);
  auto scale = randomVector(d, 6, 0.5f, 1.5f);
  auto bias = randomVector(d, 7);
  auto w = randomVector(shape.numElements(), 8);
  const float eps = 1e-5f;
  auto loss = [&] {
    std::vector<float> y(x.size()), mean(rows), invStd(rows);
    layerNorm(x.data(), shape, axis, scale.data(), bias.data(), eps, y.data(),
              mean.data(), invStd.data());
    return dot(y, w);
  };
  std::vector<float> y(x.size()), mean(rows), invStd(rows);
  layerNorm(x.data(), shape, axis, scale.data(), bias.data(), eps, y.data(),
            mean.data(), invStd.data());
  std::vector<float> dx(x.size()), dScale(d), dBias(d);
  layerNormGrad(w.data(), x.data(), shape, axis, scale.data(), mean.data(),
                invStd.data(), dx.data(), dScale.data(), dBias.data());
  expectGradient(x, dx, loss);
  expectGradient(scale, dScale, loss);
  expectGradient(bias, dBias, loss);

  // dBias may be null.
  std::vector<float> dx2(x.size()), dScale2(d);
  layerNormGrad(w.data(), x.data(), shape, axis, scale.data(), mean.data(),
                invStd.data(), dx2.data(), dScale2.data(), nullptr);
  EXPECT_EQ(dx2, dx);
  EXPECT_EQ(dScale2, dScale);
}

TEST(Normalization, LayerNormGradManyRows) {
  // Enough rows for the threaded path with per-thread partial sums.
  Shape shape{512, 96};
  auto x = randomVector(shape.numElements(), 9);
  auto dy = randomVector(shape.numElements(), 10);
  std::vector<float> scale(96, 1.0f), y(x.size()), mean(512), invStd(512);
  layerNorm(x.data(), shape, 1, scale.data(), nullptr, 1e-5f, y.data(),
            mean.data(), invStd.data());
  std::vector<float> dx(x.size()), dScale(96), dBias(96);
  layerNormGrad(dy.data(), x.data(), shape, 1, scale.data(), mean.data(),
                invStd.data(), dx.data(), dScale.data(), dBias.data());
  for (int64_t j = 0; j < 96; ++j) {
    double s = 0.0, b = 0.0;
    for (int64_t r = 0; r < 512; ++r) {
      s += double(dy[r * 96 + j]) * y[r * 96 + j];
      b += dy[r * 96 + j];
    }
    ASSERT_NEAR(dScale[j], s, 1e-3);
    ASSERT_NEAR(dBias[j], b, 1e-4);
  }
}

TEST(Normalization, BatchNormTrainingHandValues) {
  // x [N=2, C=2, 2]: channel 0 holds 1, 2, 3, 4 (mean 2.5, biased var
  // 1.25); channel 1 holds 0, 0, 2, 2 (mean 1, var 1).
  std::vector<float> x = {1, 2, 0, 0, 3, 4, 2, 2};
  std::vector<float> scale = {1, 2}, bias = {0, 1};
  std::vector<float> runMean = {0, 10}, runVar = {1, 1};
  std::vector<float> y(8), newMean(2), newVar(2);
  batchNorm(x.data(), Shape{2, 2, 2}, scale.data(), bias.data(), runMean.data(),
            runVar.data(), 0.0f, 0.9f, true, y.data(), newMean.data(),
            newVar.data());
  expectAllNear(
      y, {-1.3416408f, -0.4472136f, -1, -1, 0.4472136f, 1.3416408f, 3, 3});
  // momentum * running + (1 - momentum) * batch, biased batch variance.
  expectAllNear(newMean, {0.25f, 9.1f});
  expectAllNear(newVar, {1.025f, 1.0f});
}

TEST(Normalization, BatchNormInference) {
  std::vector<float> x = {1, 2, 0, 0, 3, 4, 2, 2};
  std::vector<float> scale = {1, 2}, bias = {0, 1};
  std::vector<float> runMean = {1, 10}, runVar = {4, 0.25f};
  std::vector<float> y(8), newMean(2), newVar(2);
  batchNorm(x.data(), Shape{2, 2, 2}, scale.data(), bias.data(), runMean.data(),
            runVar.data(), 0.0f, 0.9f, false, y.data(), newMean.data(),
            newVar.data());
  // (x - 1) / 2 and (x - 10) / 0.5 * 2 + 1.
  expectAllNear(y, {0, 0.5f, -39, -39, 1, 1.5f, -31, -31});
  EXPECT_EQ(newMean, runMean);
  EXPECT_EQ(newVar, runVar);
}

TEST(Normalization, BatchNormGradMatchesDifferences) {
  Shape shape{3, 2, 2, 3};
  auto x = randomVector(shape.numElements(), 11);
  auto scale = randomVector(2, 12, 0.5f, 1.5f);
  auto bias = randomVector(2, 13);
  auto w = randomVector(shape.numElements(), 14);
  std::vector<float> runMean(2, 0.0f), runVar(2, 1.0f);
  const float eps = 1e-5f;
  auto loss = [&] {
    std::vector<float> y(x.size()), nm(2), nv(2);
    batchNorm(x.data(), shape, scale.data(), bias.data(), runMean.data(),
              runVar.data(), eps, 0.9f, true, y.data(), nm.data(), nv.data());
    return dot(y, w);
  };
  std::vector<float> dx(x.size()), dScale(2), dBias(2);
  batchNormGrad(w.data(), x.data(), shape, scale.data(), eps, dx.data(),
                dScale.data(), dBias.data());
  expectGradient(x, dx, loss);
  expectGradient(scale, dScale, loss);
  expectGradient(bias, dBias, loss);
}

/// batchNorm's training forward and batchNormGrad against the formulas in
/// double, on shapes whose channel planes are 1, 4, 255 (rows longer than
/// a thread's block of positions), 256 and 480 floats (walked plane by
/// plane: KernelsBatchNorm.cpp), on 1 and 2 threads. Values have a mean of 3
/// against a spread of 1, as activations after a conv may.
TEST(Normalization, BatchNormAgainstFormulas) {
  for (Shape shape :
       {Shape{16, 80, 1, 1}, Shape{5, 7, 4}, Shape{3, 6, 15, 17},
        Shape{3, 6, 16, 16}, Shape{2, 5, 24, 20}, Shape{2, 700, 1}}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "rank " << shape.rank << " dim1 "
                                      << shape.dims[1] << " threads "
                                      << threads);
      cleave::rt::test::ScopedThreads scoped(threads);
      int64_t n = shape.dims[0], c = shape.dims[1];
      int64_t s = shape.numElements() / (n * c);
      auto x = randomVector(shape.numElements(), 21, 2.0f, 4.0f);
      auto dy = randomVector(shape.numElements(), 22);
      auto scale = randomVector(c, 23, 0.5f, 1.5f);
      auto bias = randomVector(c, 24);
      std::vector<float> runMean(c, 0.5f), runVar(c, 2.0f);
      const float eps = 1e-5f, momentum = 0.9f;
      std::vector<float> y(x.size()), nm(c), nv(c), dx(x.size()), dScale(c),
          dBias(c);
      batchNorm(x.data(), shape, scale.data(), bias.data(), runMean.data(),
                runVar.data(), eps, momentum, true, y.data(), nm.data(),
                nv.data());
      batchNormGrad(dy.data(), x.data(), shape, scale.data(), eps, dx.data(),
                    dScale.data(), dBias.data());
      auto at = [&](int64_t b, int64_t ch, int64_t i) {
        return (b * c + ch) * s + i;
      };
      for (int64_t ch = 0; ch < c; ++ch) {
        double count = n * s, mean = 0, var = 0;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < s; ++i)
            mean += x[at(b, ch, i)] / count;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < s; ++i)
            var += (x[at(b, ch, i)] - mean) * (x[at(b, ch, i)] - mean) / count;
        double rstd = 1.0 / std::sqrt(var + eps);
        ASSERT_NEAR(nm[ch], momentum * 0.5 + (1 - momentum) * mean, 1e-5);
        ASSERT_NEAR(nv[ch], momentum * 2.0 + (1 - momentum) * var, 1e-5);
        double sumDy = 0, sumDyXhat = 0;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < s; ++i) {
            double xhat = (x[at(b, ch, i)] - mean) * rstd;
            ASSERT_NEAR(y[at(b, ch, i)], xhat * scale[ch] + bias[ch], 1e-4);
            sumDy += dy[at(b, ch, i)];
            sumDyXhat += dy[at(b, ch, i)] * xhat;
          }
        ASSERT_NEAR(dBias[ch], sumDy, 1e-4);
        ASSERT_NEAR(dScale[ch], sumDyXhat, 1e-3);
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < s; ++i) {
            double xhat = (x[at(b, ch, i)] - mean) * rstd;
            double want = scale[ch] * rstd *
                          (dy[at(b, ch, i)] - sumDy / count -
                           xhat * sumDyXhat / count);
            // float rounding, amplified where a channel has few values
            // and a small variance; a wrong position is off by O(1).
            ASSERT_NEAR(dx[at(b, ch, i)], want, 1e-3 * (1 + std::fabs(want)));
          }
      }
      // dBias may be absent.
      std::vector<float> dx2(x.size()), dScale2(c);
      batchNormGrad(dy.data(), x.data(), shape, scale.data(), eps, dx2.data(),
                    dScale2.data(), nullptr);
      EXPECT_EQ(dx2, dx);
      EXPECT_EQ(dScale2, dScale);
    }
  }
}

} // namespace
