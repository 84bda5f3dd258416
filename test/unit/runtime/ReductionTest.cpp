//===- ReductionTest.cpp - sum, mean, max over axes -----------------------===//

#include "runtime/Kernels.h"

#include "test/unit/runtime/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace cleave::rt;
using cleave::rt::test::randomVector;
using cleave::rt::test::unflatten;

namespace {

/// Reduces by visiting every input element, in double.
std::vector<float> naiveReduce(ReduceKind kind, const std::vector<float> &in,
                               const Shape &shape, unsigned axisMask) {
  Shape outShape;
  outShape.rank = shape.rank;
  int64_t count = 1;
  for (int i = 0; i < shape.rank; ++i) {
    bool r = axisMask >> i & 1;
    outShape.dims[i] = r ? 1 : shape.dims[i];
    if (r)
      count *= shape.dims[i];
  }
  std::vector<double> acc(outShape.numElements(),
                          kind == ReduceKind::Max ? -INFINITY : 0.0);
  for (int64_t f = 0; f < shape.numElements(); ++f) {
    int64_t idx[kMaxRank];
    unflatten(shape, f, idx);
    for (int i = 0; i < shape.rank; ++i)
      if (axisMask >> i & 1)
        idx[i] = 0;
    double &a = acc[cleave::rt::test::flatIndex(outShape, idx)];
    a = kind == ReduceKind::Max ? std::max(a, double(in[f])) : a + in[f];
  }
  std::vector<float> out;
  for (double a : acc)
    out.push_back(static_cast<float>(kind == ReduceKind::Mean ? a / count : a));
  return out;
}

TEST(Reduction, EveryAxisSubsetOf4d) {
  Shape shape{3, 4, 2, 5};
  auto in = randomVector(shape.numElements(), 1);
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max})
    for (unsigned mask = 0; mask < 16; ++mask) {
      std::vector<int64_t> axes;
      for (int i = 0; i < 4; ++i)
        if (mask >> i & 1)
          axes.push_back(i);
      auto want = naiveReduce(kind, in, shape, mask);
      std::vector<float> out(want.size(), -99.0f);
      reduce(kind, in.data(), shape, axes.data(), axes.size(), out.data());
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_NEAR(out[i], want[i], 1e-5f)
            << "kind " << int(kind) << " mask " << mask << " at " << i;
    }
}

TEST(Reduction, SizeOneDimsAndNegativeAxes) {
  Shape shape{2, 1, 3};
  std::vector<float> in = {1, 2, 3, 4, 5, 6};
  int64_t axes[1] = {-1};
  std::vector<float> out(2);
  reduce(ReduceKind::Sum, in.data(), shape, axes, 1, out.data());
  EXPECT_EQ(out, (std::vector<float>{6, 15}));
  int64_t axis1[1] = {1};
  std::vector<float> same(6);
  reduce(ReduceKind::Mean, in.data(), shape, axis1, 1, same.data());
  EXPECT_EQ(same, in);
}

TEST(Reduction, LargeThreaded) {
  // All-reduce, [N, C] -> [C] (kept inner dim) and [N, C] -> [N].
  Shape shape{300, 517};
  auto in = randomVector(shape.numElements(), 2);
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max})
    for (unsigned mask : {1u, 2u, 3u}) {
      std::vector<int64_t> axes;
      for (int i = 0; i < 2; ++i)
        if (mask >> i & 1)
          axes.push_back(i);
      auto want = naiveReduce(kind, in, shape, mask);
      std::vector<float> out(want.size());
      reduce(kind, in.data(), shape, axes.data(), axes.size(), out.data());
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_NEAR(out[i], want[i], 1e-4f) << "mask " << mask << " at " << i;
    }
}

TEST(Reduction, MaxPropagatesNaN) {
  std::vector<float> in = {1, NAN, 3, 4, 5, 6};
  int64_t axes[1] = {1};
  std::vector<float> out(2);
  reduce(ReduceKind::Max, in.data(), Shape{2, 3}, axes, 1, out.data());
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 6.0f);
  int64_t axes0[1] = {0};
  std::vector<float> cols(3);
  reduce(ReduceKind::Max, in.data(), Shape{2, 3}, axes0, 1, cols.data());
  EXPECT_EQ(cols[0], 4.0f);
  EXPECT_TRUE(std::isnan(cols[1]));
  // In a run long enough for interleaved accumulators, wherever it lies.
  for (int at : {0, 17, 39}) {
    std::vector<float> row(40, 1.0f);
    row[at] = NAN;
    float max = 0;
    reduce(ReduceKind::Max, row.data(), Shape{1, 40}, axes, 1, &max);
    EXPECT_TRUE(std::isnan(max)) << "NaN at " << at;
  }
}

TEST(Reduction, EmptyReducedDim) {
  Shape shape{2, 0};
  int64_t axes[1] = {1};
  float out[2];
  reduce(ReduceKind::Sum, nullptr, shape, axes, 1, out);
  EXPECT_EQ(out[0], 0.0f);
  reduce(ReduceKind::Max, nullptr, shape, axes, 1, out);
  EXPECT_EQ(out[1], -std::numeric_limits<float>::infinity());
  reduce(ReduceKind::Mean, nullptr, shape, axes, 1, out);
  EXPECT_TRUE(std::isnan(out[0]));
}

} // namespace
