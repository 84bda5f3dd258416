//===- VectorMathTest.cpp - vector exp, erf, tanh, log against libm -------===//
//
// The elementwise loops run exp, erf, tanh, log and sigmoid through libmvec's
// vector variants (runtime/VectorMath.h). Each is checked here over the
// whole float range (every 251st bit pattern, both signs, and the special
// values) against libm's double function rounded to float, in ulps, and
// softmax on masked lines (the clamp of its exp argument) against its
// definition.
//
//===----------------------------------------------------------------------===//

#include "runtime/Elementwise.h"
#include "runtime/ElementwiseBodies.h"
#include "runtime/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using namespace cleave;
using cleave::rt::Shape;

namespace {

/// libmvec's documented bound for these functions, and what it measures
/// here against correctly rounded results (3 for exp and tanh, 4 for erf and
/// log on this machine).
constexpr int64_t kMaxUlps = 4;

/// A float's position on the number line, so that neighbours differ by 1
/// (and +0 and -0 coincide).
int64_t ordinal(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : bits;
}

/// Floats spread over the whole range, both signs, plus the edge values.
std::vector<float> sweep() {
  std::vector<float> xs;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 251) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    xs.push_back(x);
    xs.push_back(-x);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, inf, -inf, std::nanf(""), 1.0f, -1.0f,
                  88.72f, 88.73f, -87.33f, -87.34f, -103.9f, -104.0f,
                  std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::max()})
    xs.push_back(x);
  return xs;
}

/// The vector loop's results for `xs` against `reference`, in ulps: NaN
/// exactly where the reference is NaN, infinities and zeros alike.
template <typename Body, typename Reference>
void expectWithinUlps(const char *name, Body body, Reference reference) {
  std::vector<float> xs = sweep();
  std::vector<float> ys(xs.size());
  rt::mapUnary(xs.data(), ys.data(), static_cast<int64_t>(xs.size()), body);
  int64_t worst = 0;
  float worstAt = 0.0f;
  for (size_t i = 0; i < xs.size(); ++i) {
    float want = static_cast<float>(reference(static_cast<double>(xs[i])));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(ys[i])) << name << "(" << xs[i] << ")";
      continue;
    }
    ASSERT_FALSE(std::isnan(ys[i])) << name << "(" << xs[i] << ")";
    if (std::isinf(want)) {
      ASSERT_EQ(ys[i], want) << name << "(" << xs[i] << ")";
      continue;
    }
    int64_t ulps = std::llabs(ordinal(ys[i]) - ordinal(want));
    if (ulps > worst) {
      worst = ulps;
      worstAt = xs[i];
    }
  }
  EXPECT_LE(worst, kMaxUlps) << name << " is " << worst << " ulps off at "
                             << worstAt;
}

TEST(VectorMath, ExpWithinUlps) {
  expectWithinUlps("exp", body::Exp{}, [](double x) { return std::exp(x); });
}

TEST(VectorMath, ErfWithinUlps) {
  expectWithinUlps("erf", body::Erf{}, [](double x) { return std::erf(x); });
}

TEST(VectorMath, TanhWithinUlps) {
  expectWithinUlps("tanh", body::Tanh{},
                   [](double x) { return std::tanh(x); });
}

TEST(VectorMath, LogWithinUlps) {
  expectWithinUlps("log", body::Log{}, [](double x) { return std::log(x); });
}

TEST(VectorMath, SigmoidWithinUlps) {
  // One exp, a division and a product: a few ulps more than exp alone.
  expectWithinUlps("sigmoid", body::Sigmoid{},
                   [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}

/// A causal mask's -inf scores (and scores far below the maximum) give
/// exactly 0, the rest sums to 1 and matches exp(x - max) / sum; log-softmax
/// gives -inf there. In place too, as the memory plan may place it.
TEST(VectorMath, SoftmaxOfMaskedLines) {
  const int64_t d = 67; // not a multiple of the vector width
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(3 * d);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < d; ++i)
      x[r * d + i] = i > 20 + r ? -inf : (i == 5 ? -95.0f : 0.1f * i - 1.0f);
  for (bool inPlace : {false, true}) {
    std::vector<float> y = x, ly = x;
    std::vector<float> out(x.size()), logOut(x.size());
    float *yp = inPlace ? y.data() : out.data();
    float *lyp = inPlace ? ly.data() : logOut.data();
    rt::softmax(inPlace ? y.data() : x.data(), Shape{3, d}, 1, false, yp);
    rt::softmax(inPlace ? ly.data() : x.data(), Shape{3, d}, 1, true, lyp);
    for (int64_t r = 0; r < 3; ++r) {
      double max = -inf, sum = 0.0;
      for (int64_t i = 0; i < d; ++i)
        max = std::max<double>(max, x[r * d + i]);
      for (int64_t i = 0; i < d; ++i)
        sum += std::exp(x[r * d + i] - max);
      for (int64_t i = 0; i < d; ++i) {
        int64_t k = r * d + i;
        // exp within 4 ulps, then a product: 5e-7 is 8 ulps.
        double want = std::exp(x[k] - max) / sum;
        if (x[k] == -inf || i == 5) {
          EXPECT_EQ(yp[k], 0.0f) << "row " << r << " element " << i;
        } else {
          EXPECT_NEAR(yp[k], want, 5e-7 * want) << "row " << r << " " << i;
        }
        if (x[k] == -inf)
          EXPECT_EQ(lyp[k], -inf);
        else
          EXPECT_NEAR(lyp[k], (x[k] - max) - std::log(sum), 2e-6);
      }
    }
  }
}

} // namespace
