//===- DataMovementTest.cpp - broadcast, transpose, concat, slice, gather -===//

#include "runtime/Kernels.h"

#include "test/unit/runtime/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace cleave::rt;
using cleave::rt::test::expectGradient;
using cleave::rt::test::flatIndex;
using cleave::rt::test::randomVector;
using cleave::rt::test::unflatten;

namespace {

std::vector<float> iota(int64_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST(DataMovement, BroadcastTo) {
  // [3, 1] -> [2, 3, 4].
  std::vector<float> in = {1, 2, 3}, out(24);
  broadcastTo(in.data(), Shape{3, 1}, out.data(), Shape{2, 3, 4});
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_EQ(out[i], in[i / 4 % 3]) << i;
  // Scalar and bool.
  bool b = true, bs[5] = {};
  broadcastTo(&b, Shape{}, bs, Shape{5});
  EXPECT_TRUE(std::all_of(bs, bs + 5, [](bool v) { return v; }));
}

/// transpose against out[i] = in[i permuted] for every perm of a 4-d shape.
template <typename T> void checkAllPerms(const Shape &shape) {
  std::vector<T> in(shape.numElements());
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<T>(i * 7 % 1000);
  std::vector<int64_t> perm(shape.rank);
  std::iota(perm.begin(), perm.end(), 0);
  do {
    Shape outShape;
    outShape.rank = shape.rank;
    for (int i = 0; i < shape.rank; ++i)
      outShape.dims[i] = shape.dims[perm[i]];
    std::vector<T> out(in.size());
    transpose(in.data(), shape, perm.data(), out.data());
    for (int64_t f = 0; f < outShape.numElements(); ++f) {
      int64_t oi[kMaxRank], ii[kMaxRank];
      unflatten(outShape, f, oi);
      for (int i = 0; i < shape.rank; ++i)
        ii[perm[i]] = oi[i];
      ASSERT_EQ(out[f], in[flatIndex(shape, ii)]) << "element " << f;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(DataMovement, TransposeAll4dPerms) {
  checkAllPerms<float>(Shape{2, 3, 4, 5});
  checkAllPerms<int64_t>(Shape{3, 1, 4, 2});
  checkAllPerms<int32_t>(Shape{2, 3, 1, 5});
}

TEST(DataMovement, TransposeLargeTiled) {
  // Swapping the last two dims takes the tiled path; sizes not multiples of
  // the tile, and large enough to run threaded.
  checkAllPerms<float>(Shape{3, 70, 190});
  checkAllPerms<double>(Shape{2, 33, 45, 20});
  // The unit-stride dim away from the innermost one (attention's head
  // dims: [128, 8, 12] by [2, 0, 1]), and outer dims on both sides of it.
  checkAllPerms<float>(Shape{128, 8, 12});
  checkAllPerms<float>(Shape{5, 40, 3, 36});
}

TEST(DataMovement, TransposeHandValues) {
  // [[0, 1, 2], [3, 4, 5]]^T.
  auto in = iota(6);
  std::vector<float> out(6);
  int64_t perm[2] = {1, 0};
  transpose(in.data(), Shape{2, 3}, perm, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 3, 1, 4, 2, 5}));
  bool bin[6] = {true, false, false, true, true, false}, bout[6];
  transpose(bin, Shape{2, 3}, perm, bout);
  EXPECT_EQ(std::vector<bool>(bout, bout + 6),
            (std::vector<bool>{true, true, false, true, false, false}));
}

TEST(DataMovement, ConcatAndSplit) {
  // Along axis 1: [2, 1, 2], [2, 2, 2], [2, 0, 2] -> [2, 3, 2].
  std::vector<float> a = {0, 1, 2, 3}, b = {10, 11, 12, 13, 14, 15, 16, 17};
  float empty = 0;
  const float *inputs[3] = {a.data(), b.data(), &empty};
  Shape shapes[3] = {{2, 1, 2}, {2, 2, 2}, {2, 0, 2}};
  std::vector<float> out(12);
  concat(inputs, shapes, 3, 1, out.data());
  EXPECT_EQ(out,
            (std::vector<float>{0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17}));
  // Negative axis.
  std::vector<float> out2(12);
  concat(inputs, shapes, 3, -2, out2.data());
  EXPECT_EQ(out2, out);

  std::vector<float> pa(4), pb(8);
  float pc = -1;
  float *outs[3] = {pa.data(), pb.data(), &pc};
  int64_t sizes[3] = {1, 2, 0};
  split(out.data(), Shape{2, 3, 2}, 1, sizes, 3, outs);
  EXPECT_EQ(pa, a);
  EXPECT_EQ(pb, b);
  EXPECT_EQ(pc, -1);

  int64_t ia[2] = {1, 2}, ib[1] = {3}, ic[3];
  const int64_t *iin[2] = {ia, ib};
  Shape ishapes[2] = {{2}, {1}};
  concat(iin, ishapes, 2, 0, ic);
  EXPECT_EQ(std::vector<int64_t>(ic, ic + 3), (std::vector<int64_t>{1, 2, 3}));
}

TEST(DataMovement, SliceStrided) {
  // x = arange(24).reshape(2, 3, 4); x[1:2, ::2, 3:0:-2] (offset 3, stride
  // -2 on the last dim) = [[[15, 13], [23, 21]]].
  auto in = iota(24);
  int64_t offsets[3] = {1, 0, 3}, strides[3] = {1, 2, -2};
  std::vector<float> out(4);
  slice(in.data(), Shape{2, 3, 4}, offsets, strides, out.data(),
        Shape{1, 2, 2});
  EXPECT_EQ(out, (std::vector<float>{15, 13, 23, 21}));

  std::vector<int32_t> iin(24);
  std::iota(iin.begin(), iin.end(), 0);
  std::vector<int32_t> iout(4);
  slice(iin.data(), Shape{2, 3, 4}, offsets, strides, iout.data(),
        Shape{1, 2, 2});
  EXPECT_EQ(iout, (std::vector<int32_t>{15, 13, 23, 21}));
}

TEST(DataMovement, SliceGradIsAdjointAndMatchesDifferences) {
  Shape inShape{3, 4, 5}, outShape{2, 2, 3};
  int64_t offsets[3] = {1, 3, 0}, strides[3] = {1, -2, 2};
  auto x = randomVector(inShape.numElements(), 1);
  auto w = randomVector(outShape.numElements(), 2);
  std::vector<float> dx(x.size(), 5.0f);
  sliceGrad(w.data(), outShape, offsets, strides, dx.data(), inShape);
  expectGradient(x, dx, [&] {
    std::vector<float> y(outShape.numElements());
    slice(x.data(), inShape, offsets, strides, y.data(), outShape);
    return cleave::rt::test::dot(y, w);
  });
  // Untouched positions are zeroed.
  EXPECT_EQ(dx[0], 0.0f);
}

TEST(DataMovement, GatherNegativeIndices) {
  // data [3, 2], gather rows [-1, 0, 2, -3] along axis 0.
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  int64_t idx[4] = {-1, 0, 2, -3};
  std::vector<float> out(8);
  gather(data.data(), Shape{3, 2}, idx, 4, 0, out.data());
  EXPECT_EQ(out, (std::vector<float>{5, 6, 1, 2, 5, 6, 1, 2}));
  // Along axis 1 with int32 indices: data[:, [1, -2]].
  int32_t idx32[2] = {1, -2};
  std::vector<float> out2(6);
  gather(data.data(), Shape{3, 2}, idx32, 2, 1, out2.data());
  EXPECT_EQ(out2, (std::vector<float>{2, 1, 4, 3, 6, 5}));
  // Axis -1 on int64 data with a 2-d index tensor [[0], [1]] -> [2, 2, 1].
  std::vector<int64_t> idata = {10, 20, 30, 40};
  int64_t idx2[2] = {0, 1};
  std::vector<int64_t> iout(4);
  gather(idata.data(), Shape{2, 2}, idx2, 2, -1, iout.data());
  EXPECT_EQ(iout, (std::vector<int64_t>{10, 20, 30, 40}));
}

TEST(DataMovement, GatherOutOfRangeAborts) {
  // OpenMP's worker threads exist by now; re-execute instead of forking.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<float> data = {1, 2, 3};
  int64_t idx[1] = {3};
  float out;
  EXPECT_DEATH(gather(data.data(), Shape{3}, idx, 1, 0, &out),
               "gather index 3 out of range");
}

TEST(DataMovement, GatherGradAccumulatesRepeats) {
  // Embedding-style: table [4, 3], indices [1, -1, 1, 0].
  Shape dataShape{4, 3};
  int64_t idx[4] = {1, -1, 1, 0};
  std::vector<float> dOut = {1, 2, 3, 10, 20, 30, 100, 200, 300, 7, 8, 9};
  std::vector<float> dData(12, -1.0f);
  gatherGrad(dOut.data(), idx, 4, 0, dData.data(), dataShape);
  EXPECT_EQ(dData,
            (std::vector<float>{7, 8, 9, 101, 202, 303, 0, 0, 0, 10, 20, 30}));
}

TEST(DataMovement, GatherGradMatchesDifferences) {
  for (int axis : {0, 1, 2}) {
    Shape dataShape{3, 4, 5};
    int32_t idx[5] = {2, -1, 0, 2, 1};
    Shape outShape = dataShape;
    outShape.dims[axis] = 5;
    auto x = randomVector(dataShape.numElements(), 3);
    auto w = randomVector(outShape.numElements(), 4);
    std::vector<float> dx(x.size());
    gatherGrad(w.data(), idx, 5, axis, dx.data(), dataShape);
    expectGradient(x, dx, [&] {
      std::vector<float> y(outShape.numElements());
      gather(x.data(), dataShape, idx, 5, axis, y.data());
      return cleave::rt::test::dot(y, w);
    });
  }
}

TEST(DataMovement, GatherGradLargeTable) {
  // One outer slice with a wide row: the threaded inner-chunk path.
  Shape dataShape{10, 4096};
  std::vector<int64_t> idx = {3, 3, 9, 0, 3};
  auto dOut = randomVector(5 * 4096, 5);
  std::vector<float> dData(dataShape.numElements());
  gatherGrad(dOut.data(), idx.data(), 5, 0, dData.data(), dataShape);
  for (int64_t j = 0; j < 4096; j += 97) {
    EXPECT_FLOAT_EQ(dData[3 * 4096 + j],
                    dOut[j] + dOut[4096 + j] + dOut[4 * 4096 + j]);
    EXPECT_EQ(dData[5 * 4096 + j], 0.0f);
  }
}

} // namespace
