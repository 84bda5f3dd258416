//===- ElementwiseTest.cpp - element bodies and broadcasting loops --------===//

#include "runtime/Elementwise.h"
#include "runtime/ElementwiseBodies.h"

#include "test/unit/runtime/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace cleave;
using cleave::rt::Shape;
using cleave::rt::test::flatIndex;
using cleave::rt::test::randomVector;
using cleave::rt::test::unflatten;

namespace {

TEST(ElementwiseBodies, Arithmetic) {
  EXPECT_EQ(body::Add()(2, 3), 5);
  EXPECT_FLOAT_EQ(body::Sub()(2.5f, 3.0f), -0.5f);
  EXPECT_EQ(body::Mul()(int64_t(-4), int64_t(3)), -12);
  // Integer division truncates toward zero, as ONNX's reference does.
  EXPECT_EQ(body::Div()(-7, 2), -3);
  EXPECT_FLOAT_EQ(body::Div()(-7.0f, 2.0f), -3.5f);
}

TEST(ElementwiseBodies, PowFloatAndMixed) {
  EXPECT_FLOAT_EQ(body::Pow()(2.0f, 0.5f), std::sqrt(2.0f));
  EXPECT_FLOAT_EQ(body::Pow()(3.0f, int64_t(2)), 9.0f);
  EXPECT_EQ(body::Pow()(int64_t(2), 0.5f), 1);
  EXPECT_DOUBLE_EQ(body::Pow()(-2.0, 3.0), -8.0);
}

TEST(ElementwiseBodies, PowIntegerIsExact) {
  EXPECT_EQ(body::Pow()(int64_t(3), int64_t(5)), 243);
  EXPECT_EQ(body::Pow()(int64_t(-2), int64_t(3)), -8);
  EXPECT_EQ(body::Pow()(int32_t(7), int32_t(0)), 1);
  // 3^39 does not survive a round trip through double.
  EXPECT_EQ(body::Pow()(int64_t(3), int64_t(39)), 4052555153018976267LL);
  EXPECT_EQ(body::Pow()(int64_t(2), int64_t(-1)), 0);
  EXPECT_EQ(body::Pow()(int64_t(1), int64_t(-3)), 1);
  EXPECT_EQ(body::Pow()(int64_t(-1), int64_t(-3)), -1);
  EXPECT_EQ(body::Pow()(int64_t(-1), int64_t(-4)), 1);
  // Overflow wraps modulo 2^32, as numpy's int32 power does.
  EXPECT_EQ(body::Pow()(int32_t(3), int32_t(20)), -808182895);
  EXPECT_EQ(body::Pow()(int32_t(3), int32_t(21)), 1870418611);
  EXPECT_EQ(body::Pow()(int32_t(-3), int32_t(3)), -27);
}

TEST(ElementwiseBodies, ComparisonsAndWhere) {
  EXPECT_TRUE(body::Equal()(int64_t(3), int64_t(3)));
  EXPECT_FALSE(body::Equal()(1.0f, 1.5f));
  EXPECT_TRUE(body::Less()(-1.0f, 0.0f));
  EXPECT_FALSE(body::Less()(2, 2));
  EXPECT_EQ(body::Where()(true, 1.5f, 2.5f), 1.5f);
  EXPECT_EQ(body::Where()(false, int64_t(1), int64_t(2)), 2);
}

TEST(ElementwiseBodies, UnaryMath) {
  EXPECT_FLOAT_EQ(body::Sqrt()(9.0f), 3.0f);
  EXPECT_FLOAT_EQ(body::Neg()(1.5f), -1.5f);
  EXPECT_NEAR(body::Erf()(0.5f), 0.5204998778f, 1e-6f);
  EXPECT_NEAR(body::Tanh()(1.0f), 0.7615941560f, 1e-6f);
  EXPECT_FLOAT_EQ(body::Exp()(0.0f), 1.0f);
  EXPECT_NEAR(body::Log()(2.0f), 0.6931471806f, 1e-6f);
  EXPECT_FLOAT_EQ(body::Relu()(-2.0f), 0.0f);
  EXPECT_FLOAT_EQ(body::Relu()(2.0f), 2.0f);
  EXPECT_TRUE(std::isnan(body::Relu()(std::nanf(""))));
}

TEST(ElementwiseBodies, SigmoidIsStable) {
  EXPECT_FLOAT_EQ(body::Sigmoid()(0.0f), 0.5f);
  EXPECT_NEAR(body::Sigmoid()(2.0f), 0.8807970780f, 1e-6f);
  EXPECT_NEAR(body::Sigmoid()(-2.0f), 0.1192029220f, 1e-6f);
  EXPECT_FLOAT_EQ(body::Sigmoid()(100.0f), 1.0f);
  // exp(-(-100)) overflows in the naive form; the stable one keeps the
  // tiny result.
  float tiny = body::Sigmoid()(-100.0f);
  EXPECT_GT(tiny, 0.0f);
  EXPECT_NEAR(tiny / std::exp(-100.0f), 1.0f, 1e-5f);
  EXPECT_FALSE(std::isnan(body::Sigmoid()(-1000.0f)));
}

TEST(ElementwiseBodies, Cast) {
  EXPECT_EQ(body::Cast<int32_t>()(3.7f), 3);
  EXPECT_EQ(body::Cast<int64_t>()(-3.7f), -3);
  EXPECT_TRUE(body::Cast<bool>()(0.5f));
  EXPECT_FALSE(body::Cast<bool>()(0.0f));
  EXPECT_FLOAT_EQ(body::Cast<float>()(int64_t(7)), 7.0f);
  EXPECT_FLOAT_EQ(body::Cast<float>()(true), 1.0f);
}

TEST(Elementwise, MapUnary) {
  std::vector<float> x = {-1.0f, 0.5f, -0.0f, 3.0f};
  std::vector<float> y(4);
  rt::mapUnary(x.data(), y.data(), 4, body::Relu());
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.5f, 0.0f, 3.0f}));
  std::vector<int32_t> yi(4);
  rt::mapUnary(x.data(), yi.data(), 4, body::Cast<int32_t>());
  EXPECT_EQ(yi, (std::vector<int32_t>{-1, 0, 0, 3}));
}

/// mapBinary against a direct evaluation of numpy's broadcasting rule.
void checkBroadcastAdd(const Shape &aShape, const Shape &bShape,
                       const Shape &outShape) {
  auto a = randomVector(aShape.numElements(), 1);
  auto b = randomVector(bShape.numElements(), 2);
  std::vector<float> out(outShape.numElements(), -99.0f);
  rt::mapBinary(a.data(), aShape, b.data(), bShape, out.data(), outShape,
                body::Add());
  for (int64_t f = 0; f < outShape.numElements(); ++f) {
    int64_t idx[rt::kMaxRank], ia[rt::kMaxRank], ib[rt::kMaxRank];
    unflatten(outShape, f, idx);
    for (int i = 0; i < aShape.rank; ++i) {
      int64_t o = idx[i + outShape.rank - aShape.rank];
      ia[i] = aShape.dims[i] == 1 ? 0 : o;
    }
    for (int i = 0; i < bShape.rank; ++i) {
      int64_t o = idx[i + outShape.rank - bShape.rank];
      ib[i] = bShape.dims[i] == 1 ? 0 : o;
    }
    ASSERT_EQ(out[f], a[flatIndex(aShape, ia)] + b[flatIndex(bShape, ib)])
        << "at flat index " << f;
  }
}

TEST(Elementwise, MapBinaryBroadcasting) {
  checkBroadcastAdd({2, 3}, {2, 3}, {2, 3});
  checkBroadcastAdd({2, 3}, {}, {2, 3});
  checkBroadcastAdd({1}, {2, 3}, {2, 3});
  checkBroadcastAdd({2, 3}, {3}, {2, 3});
  checkBroadcastAdd({2, 3}, {2, 1}, {2, 3});
  checkBroadcastAdd({2, 1, 4}, {3, 1}, {2, 3, 4});
  checkBroadcastAdd({4, 1, 3, 1}, {1, 5, 1, 2}, {4, 5, 3, 2});
  checkBroadcastAdd({2, 3, 4, 5}, {1, 3, 1, 1}, {2, 3, 4, 5});
  checkBroadcastAdd({5}, {4, 1}, {4, 5});
  // Large enough for the threaded loop.
  checkBroadcastAdd({64, 1, 1024}, {8, 1}, {64, 8, 1024});
  checkBroadcastAdd({64, 1, 1}, {1, 8, 1024}, {64, 8, 1024});
}

TEST(Elementwise, MapBinaryHandValues) {
  // [[1], [2]] * [10, 20, 30].
  std::vector<float> a = {1, 2}, b = {10, 20, 30}, out(6);
  rt::mapBinary(a.data(), Shape{2, 1}, b.data(), Shape{3}, out.data(),
                Shape{2, 3}, body::Mul());
  EXPECT_EQ(out, (std::vector<float>{10, 20, 30, 20, 40, 60}));
}

TEST(Elementwise, MapBinaryComparisonAndMixedTypes) {
  std::vector<float> a = {1, 5, 3, 0};
  std::vector<float> b = {2};
  bool out[4];
  rt::mapBinary(a.data(), Shape{4}, b.data(), Shape{}, out, Shape{4},
                body::Less());
  EXPECT_TRUE(out[0]);
  EXPECT_FALSE(out[1]);
  EXPECT_FALSE(out[2]);
  EXPECT_TRUE(out[3]);

  std::vector<int64_t> e = {0, 1, 2};
  std::vector<float> base = {3.0f}, pw(3);
  rt::mapBinary(base.data(), Shape{1}, e.data(), Shape{3}, pw.data(), Shape{3},
                body::Pow());
  EXPECT_EQ(pw, (std::vector<float>{1.0f, 3.0f, 9.0f}));
}

TEST(Elementwise, MapTernaryWhere) {
  // cond [2, 1], a [3], b scalar -> [2, 3].
  bool cond[2] = {true, false};
  std::vector<float> a = {1, 2, 3}, b = {-1}, out(6);
  rt::mapTernary(cond, Shape{2, 1}, a.data(), Shape{3}, b.data(), Shape{},
                 out.data(), Shape{2, 3}, body::Where());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, -1, -1, -1}));

  bool same[3] = {false, true, false};
  std::vector<float> c = {4, 5, 6}, d(3);
  rt::mapTernary(same, Shape{3}, a.data(), Shape{3}, c.data(), Shape{3},
                 d.data(), Shape{3}, body::Where());
  EXPECT_EQ(d, (std::vector<float>{4, 2, 6}));
}

/// An attention mask: cond [T, T] broadcast over [B, T, T], one value
/// along the rows and the other a scalar, on either side.
TEST(Elementwise, MapTernaryMask) {
  constexpr int64_t b = 3, t = 5;
  bool cond[t * t];
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j)
      cond[i * t + j] = j <= i;
  std::vector<float> x(b * t * t), fill = {-7.0f}, kept(x.size()),
      dropped(x.size());
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = 0.5f * static_cast<float>(k);
  rt::mapTernary(cond, Shape{t, t}, x.data(), Shape{b, t, t}, fill.data(),
                 Shape{}, kept.data(), Shape{b, t, t}, body::Where());
  rt::mapTernary(cond, Shape{t, t}, fill.data(), Shape{}, x.data(),
                 Shape{b, t, t}, dropped.data(), Shape{b, t, t},
                 body::Where());
  for (size_t k = 0; k < x.size(); ++k) {
    bool on = cond[k % (t * t)];
    EXPECT_EQ(kept[k], on ? x[k] : -7.0f) << k;
    EXPECT_EQ(dropped[k], on ? -7.0f : x[k]) << k;
  }
}

TEST(Elementwise, EmptyTensors) {
  std::vector<float> a = {1}, out;
  rt::mapBinary(a.data(), Shape{1}, a.data(), Shape{0}, out.data(), Shape{0},
                body::Add());
}

} // namespace
