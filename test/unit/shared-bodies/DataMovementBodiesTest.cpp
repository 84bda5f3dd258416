//===- DataMovementBodiesTest.cpp - copy, conv and pool work items --------===//
//
// The work items of DataMovementBodies.h and ConvolutionBodies.h, built the
// way runtime/cuda/Kernels{DataMovement,Convolution}.cu build and launch
// them but run by runOnHost, against the cpu kernels of Kernels.h. The cuda
// convolutions' products are cuBLAS calls; here a plain host GEMM (in
// double) stands in for them.
//
// Tolerances: the copies and gathers do the cpu kernels' arithmetic in the
// cpu kernels' order (expectSame's 1e-6 is slack only), and the pools agree
// bit for bit (tolerance 0); the convolutions compare a double GEMM with
// OpenBLAS's float one over at most a few dozen products of values in
// [-1, 1], whose round-off stays well below 1e-5.
//
//===----------------------------------------------------------------------===//

#include "runtime/DataMovementBodies.h"
#include "runtime/ConvolutionBodies.h"
#include "runtime/Kernels.h"

#include "test/unit/runtime/RuntimeTestUtil.h"
#include "test/unit/shared-bodies/RunOnHost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

namespace cleave::rt::test {
namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A host buffer of T; std::vector<bool> has no data() to hand a kernel.
template <typename T> struct Buffer {
  std::unique_ptr<T[]> data;
  int64_t size;

  explicit Buffer(int64_t n, T fill = T()) : data(new T[n]), size(n) {
    std::fill(data.get(), data.get() + n, fill);
  }
  T *get() const { return data.get(); }
  std::vector<double> values() const {
    return std::vector<double>(data.get(), data.get() + size);
  }
};

/// Random values that every type holds exactly: integers in [-50, 50] for
/// the integer types, a coin flip for bool.
template <typename T> Buffer<T> randomBuffer(int64_t n, uint32_t seed) {
  std::vector<float> f = randomVector(n, seed, -50.0f, 50.0f);
  Buffer<T> b(n);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>)
      b.data[i] = f[i] > 0.0f;
    else if constexpr (std::is_floating_point_v<T>)
      b.data[i] = static_cast<T>(f[i]);
    else
      b.data[i] = static_cast<T>(std::lround(f[i]));
  }
  return b;
}

/// NaN compares unequal to itself; give both sides one sentinel instead.
std::vector<float> nanAsSentinel(std::vector<float> v) {
  for (float &x : v)
    if (std::isnan(x))
      x = 12345.0f;
  return v;
}

/// Row-major C = beta * C + op(A) op(B), accumulated in double: what the
/// cuda kernels ask cuBLAS for.
void hostGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, const float *b, float beta, float *c) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = beta == 0.0f ? 0.0 : beta * static_cast<double>(c[i * n + j]);
      for (int64_t p = 0; p < k; ++p)
        s += static_cast<double>(transA ? a[p * m + i] : a[i * k + p]) *
             (transB ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = static_cast<float>(s);
    }
}

//===----------------------------------------------------------------------===//
// broadcastTo, transpose, slice, sliceGrad
//===----------------------------------------------------------------------===//

template <typename T>
void checkBroadcast(const Shape &inShape, const Shape &outShape,
                    uint32_t seed) {
  Buffer<T> in = randomBuffer<T>(inShape.numElements(), seed);
  Buffer<T> got(outShape.numElements()), want(outShape.numElements());
  body::StridedIndex src = body::StridedIndex::broadcast(inShape, outShape);
  ASSERT_EQ(src.numItems(), outShape.numElements());
  runOnHost(src.numItems(), body::StridedCopy<T>{in.get(), got.get(), src});
  broadcastTo(in.get(), inShape, want.get(), outShape);
  expectSame(got.values(), want.values());
}

TEST(DataMovementBodies, BroadcastTo) {
  struct Case {
    Shape in, out;
  };
  std::vector<Case> cases = {{{3, 1}, {2, 3, 4}},    {{}, {5}},
                             {{4}, {3, 4}},          {{2, 1, 3}, {2, 5, 3}},
                             {{1, 4, 1}, {3, 4, 2}}, {{2, 3}, {2, 3}},
                             {{1, 1}, {1, 1}}};
  uint32_t seed = 1;
  for (const Case &c : cases) {
    checkBroadcast<float>(c.in, c.out, seed++);
    checkBroadcast<double>(c.in, c.out, seed++);
    checkBroadcast<int64_t>(c.in, c.out, seed++);
    checkBroadcast<int32_t>(c.in, c.out, seed++);
    checkBroadcast<bool>(c.in, c.out, seed++);
  }
}

template <typename T> void checkTransposes(const Shape &shape, uint32_t seed) {
  Buffer<T> in = randomBuffer<T>(shape.numElements(), seed);
  std::vector<int64_t> perm(shape.rank);
  std::iota(perm.begin(), perm.end(), 0);
  do {
    Buffer<T> got(shape.numElements()), want(shape.numElements());
    body::StridedIndex src = body::StridedIndex::transpose(shape, perm.data());
    runOnHost(src.numItems(), body::StridedCopy<T>{in.get(), got.get(), src});
    transpose(in.get(), shape, perm.data(), want.get());
    expectSame(got.values(), want.values());
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(DataMovementBodies, TransposeEvery3dAnd4dPerm) {
  checkTransposes<float>(Shape{2, 3, 4, 5}, 1);
  checkTransposes<int32_t>(Shape{2, 3, 4, 5}, 2);
  checkTransposes<double>(Shape{3, 1, 4}, 3);
  checkTransposes<bool>(Shape{4, 2, 3}, 4);
  // Large enough for the cpu kernel's tiled path.
  checkTransposes<float>(Shape{37, 41}, 5);
}

struct SliceCase {
  Shape in, out;
  std::vector<int64_t> offsets, strides;
};

/// Strided and negative-stride slices, and one that keeps a whole row
/// (which coalesces).
std::vector<SliceCase> sliceCases() {
  return {{{5, 6, 7}, {2, 2, 4}, {1, 0, 6}, {2, 3, -2}},
          {{4, 9}, {4, 3}, {0, 1}, {1, 3}},
          {{3, 4, 5}, {2, 4, 5}, {1, 0, 0}, {1, 1, 1}},
          {{8}, {3}, {7}, {-3}}};
}

TEST(DataMovementBodies, SliceStrided) {
  uint32_t seed = 10;
  for (const SliceCase &c : sliceCases()) {
    Buffer<int64_t> in = randomBuffer<int64_t>(c.in.numElements(), seed++);
    Buffer<int64_t> got(c.out.numElements()), want(c.out.numElements());
    body::StridedIndex src = body::StridedIndex::slice(c.in, c.offsets.data(),
                                                       c.strides.data(), c.out);
    runOnHost(src.numItems(),
              body::StridedCopy<int64_t>{in.get(), got.get(), src});
    slice(in.get(), c.in, c.offsets.data(), c.strides.data(), want.get(),
          c.out);
    expectSame(got.values(), want.values());
  }
}

TEST(DataMovementBodies, SliceGradZeroFillsThenAdds) {
  uint32_t seed = 20;
  for (const SliceCase &c : sliceCases()) {
    std::vector<float> dOut = randomVector(c.out.numElements(), seed++);
    // Garbage in dIn: the zero-fill phase must clear it.
    std::vector<float> got(c.in.numElements(), 7.0f), want(got.size(), 7.0f);
    runOnHost(c.in.numElements(), body::FillZero<float>{got.data()});
    body::StridedIndex dst = body::StridedIndex::slice(c.in, c.offsets.data(),
                                                       c.strides.data(), c.out);
    runOnHost(dst.numItems(), body::SliceGradAdd{dOut.data(), got.data(), dst});
    sliceGrad(dOut.data(), c.out, c.offsets.data(), c.strides.data(),
              want.data(), c.in);
    expectSame(got, want);
  }
}

//===----------------------------------------------------------------------===//
// concat and split
//===----------------------------------------------------------------------===//

template <typename T>
void checkConcat(const std::vector<Shape> &shapes, int axis, uint32_t seed) {
  std::vector<Buffer<T>> inputs;
  std::vector<const T *> pointers;
  Shape outShape = shapes[0];
  int a = axis < 0 ? axis + outShape.rank : axis;
  outShape.dims[a] = 0;
  for (const Shape &s : shapes) {
    inputs.push_back(randomBuffer<T>(s.numElements(), seed++));
    pointers.push_back(inputs.back().get());
    outShape.dims[a] += s.dims[a];
  }
  int count = static_cast<int>(shapes.size());
  Buffer<T> got(outShape.numElements()), want(outShape.numElements());
  // As cuda::concat: one copy per input.
  for (int i = 0; i < count; ++i) {
    auto piece = body::RowBlockCopy<T>::concatPiece(
        pointers.data(), shapes.data(), count, axis, i, got.get());
    runOnHost(piece.numItems(), piece);
  }
  concat(pointers.data(), shapes.data(), count, axis, want.get());
  expectSame(got.values(), want.values());
}

TEST(DataMovementBodies, ConcatFirstMiddleAndLastAxis) {
  checkConcat<float>({{1, 3}, {2, 3}, {4, 3}}, 0, 1);
  checkConcat<int64_t>({{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, 1, 2);
  checkConcat<double>({{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, -2, 3);
  checkConcat<bool>({{3, 2}, {3, 5}}, -1, 4);
  // An empty input contributes nothing.
  checkConcat<int32_t>({{2, 0, 3}, {2, 2, 3}}, 1, 5);
}

template <typename T>
void checkSplit(const Shape &inShape, int axis,
                const std::vector<int64_t> &sizes, uint32_t seed) {
  Buffer<T> in = randomBuffer<T>(inShape.numElements(), seed);
  int a = axis < 0 ? axis + inShape.rank : axis;
  int count = static_cast<int>(sizes.size());
  std::vector<Buffer<T>> got, want;
  std::vector<T *> wantPointers;
  for (int64_t size : sizes) {
    Shape s = inShape;
    s.dims[a] = size;
    got.emplace_back(s.numElements());
    want.emplace_back(s.numElements());
    wantPointers.push_back(want.back().get());
  }
  for (int i = 0; i < count; ++i) {
    auto piece = body::RowBlockCopy<T>::splitPiece(
        in.get(), inShape, axis, sizes.data(), i, got[i].get());
    runOnHost(piece.numItems(), piece);
  }
  split(in.get(), inShape, axis, sizes.data(), count, wantPointers.data());
  for (int i = 0; i < count; ++i)
    expectSame(got[i].values(), want[i].values());
}

TEST(DataMovementBodies, SplitFirstMiddleAndLastAxis) {
  checkSplit<float>(Shape{6, 2}, 0, {1, 2, 3}, 1);
  checkSplit<int64_t>(Shape{3, 6, 2}, 1, {1, 3, 2}, 2);
  checkSplit<int32_t>(Shape{3, 6, 2}, -2, {4, 2}, 3);
  checkSplit<bool>(Shape{2, 3, 5}, -1, {2, 0, 3}, 4);
}

//===----------------------------------------------------------------------===//
// gather and gatherGrad
//===----------------------------------------------------------------------===//

template <typename T, typename I>
void checkGather(const Shape &dataShape, int axis,
                 const std::vector<I> &indices, uint32_t seed) {
  Buffer<T> data = randomBuffer<T>(dataShape.numElements(), seed);
  auto dims = body::GatherDims::make(dataShape, axis,
                                     static_cast<int64_t>(indices.size()));
  Buffer<T> got(dims.numItems()), want(dims.numItems());
  runOnHost(dims.numItems(),
            body::Gather<T, I>{data.get(), indices.data(), got.get(), dims});
  gather(data.get(), dataShape, indices.data(),
         static_cast<int64_t>(indices.size()), axis, want.get());
  expectSame(got.values(), want.values());
}

TEST(DataMovementBodies, GatherNegativeIndices) {
  checkGather<float, int64_t>(Shape{4, 5, 3}, 1, {-1, 0, 4, -5, 2}, 1);
  checkGather<int64_t, int32_t>(Shape{4, 5, 3}, 1, {-1, 0, 4, -5, 2}, 2);
  checkGather<double, int32_t>(Shape{6, 2}, 0, {5, -6, 3, 3, -1}, 3);
  checkGather<bool, int64_t>(Shape{2, 3, 4}, -1, {-4, 3, 1}, 4);
}

TEST(DataMovementBodies, GatherOutOfRangeWritesZero) {
  // The cpu kernel exits on these; the GPU's work items cannot, and write 0.
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> indices = {1, 3, -4, -7, -2};
  std::vector<float> out(5 * 2, -1.0f);
  auto dims = body::GatherDims::make(Shape{3, 2}, 0, 5);
  runOnHost(dims.numItems(),
            body::Gather<float, int64_t>{data.data(), indices.data(),
                                         out.data(), dims});
  EXPECT_EQ(out, (std::vector<float>{3, 4, 0, 0, 0, 0, 0, 0, 3, 4}));
}

template <typename I>
void checkGatherGrad(const Shape &dataShape, int axis,
                     const std::vector<I> &indices, uint32_t seed) {
  auto dims = body::GatherDims::make(dataShape, axis,
                                     static_cast<int64_t>(indices.size()));
  std::vector<float> dOut = randomVector(dims.numItems(), seed);
  std::vector<float> got(dataShape.numElements(), 7.0f), want(got.size());
  runOnHost(dataShape.numElements(), body::FillZero<float>{got.data()});
  runOnHost(dims.numItems(), body::GatherGradAdd<I>{dOut.data(), indices.data(),
                                                    got.data(), dims});
  gatherGrad(dOut.data(), indices.data(), static_cast<int64_t>(indices.size()),
             axis, want.data(), dataShape);
  expectSame(got, want);
}

TEST(DataMovementBodies, GatherGradAccumulatesRepeatedIndices) {
  checkGatherGrad<int64_t>(Shape{3, 6, 2}, 1, {1, 1, -1, 0, 1, 5}, 1);
  checkGatherGrad<int32_t>(Shape{3, 6, 2}, -2, {2, -4, 2, 2}, 2);
  // An embedding table: one outer slice, many repeats.
  checkGatherGrad<int64_t>(Shape{10, 4}, 0, {3, 3, 9, 0, 3, -1, 9, 3}, 3);
}

//===----------------------------------------------------------------------===//
// Convolution: im2col, col2im, bias
//===----------------------------------------------------------------------===//

struct ConvCase {
  Shape x, w, y;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;

  body::Window3 window() const {
    return body::Window3(x, y, w.dims + 2, strides.data(), pads.data(),
                         dilations.data());
  }
  int64_t groupIn() const { return x[1] / group; }
  int64_t groupOut() const { return w[0] / group; }
  int64_t kRows() const { return groupIn() * window().kernelSize(); }
};

std::vector<ConvCase> convCases() {
  return {
      // 1-d, grouped: (11 + 1 + 2 - 2 * 2 - 1) / 2 + 1 = 5.
      {{2, 4, 11}, {6, 2, 3}, {2, 6, 5}, {2}, {1, 2}, {2}, 2},
      // 2-d, grouped, asymmetric pads: H (7 + 3 - 2 - 1) / 2 + 1 = 4,
      // W (8 + 1 - 2 - 1) + 1 = 7.
      {{2, 4, 7, 8},
       {6, 2, 3, 2},
       {2, 6, 4, 7},
       {2, 1},
       {1, 0, 2, 1},
       {1, 2},
       2},
      // 2-d depthwise, stride 2, pad 1: (6 + 2 - 3) / 2 + 1 = 3, likewise 3.
      {{1, 3, 6, 5},
       {3, 1, 3, 3},
       {1, 3, 3, 3},
       {2, 2},
       {1, 1, 1, 1},
       {1, 1},
       3},
      // 3-d: D (4 + 1 - 2 - 1) + 1 = 3, H (3 + 1 - 1) / 2 + 1 = 2,
      // W (5 + 2 - 2 - 1) / 2 + 1 = 3.
      {{1, 2, 4, 3, 5},
       {4, 2, 2, 1, 3},
       {1, 4, 3, 2, 3},
       {1, 2, 2},
       {0, 1, 1, 1, 0, 1},
       {2, 1, 1},
       1},
      // Pointwise (the cuda kernel skips im2col here; it must still agree).
      {{2, 3, 4, 4},
       {5, 3, 1, 1},
       {2, 5, 4, 4},
       {1, 1},
       {0, 0, 0, 0},
       {1, 1},
       1},
  };
}

/// y = conv(x, w) + bias as cuda::conv computes it, per (sample, group)
/// im2col and a product, then the bias.
std::vector<float> composedConv(const ConvCase &c, const std::vector<float> &x,
                                const std::vector<float> &w,
                                const std::vector<float> &bias) {
  body::Window3 win = c.window();
  int64_t inSize = win.inSize(), oSize = win.outSize();
  std::vector<float> y(c.y.numElements()), col(c.kRows() * oSize);
  for (int64_t b = 0; b < c.x[0]; ++b)
    for (int64_t g = 0; g < c.group; ++g) {
      body::Im2col im2col{x.data() + (b * c.x[1] + g * c.groupIn()) * inSize,
                          col.data(), c.groupIn(), win};
      runOnHost(im2col.numItems(), im2col);
      hostGemm(false, false, c.groupOut(), oSize, c.kRows(),
               w.data() + g * c.groupOut() * c.kRows(), col.data(), 0.0f,
               y.data() + (b * c.w[0] + g * c.groupOut()) * oSize);
    }
  runOnHost(c.y.numElements(),
            body::AddChannelBias{y.data(), bias.data(), c.w[0], oSize});
  return y;
}

TEST(ConvolutionBodies, Im2colAndBiasComposeToConv) {
  uint32_t seed = 1;
  for (const ConvCase &c : convCases()) {
    std::vector<float> x = randomVector(c.x.numElements(), seed++);
    std::vector<float> w = randomVector(c.w.numElements(), seed++);
    std::vector<float> bias = randomVector(c.w[0], seed++);
    std::vector<float> want(c.y.numElements());
    conv(x.data(), c.x, w.data(), c.w, bias.data(), c.strides.data(),
         c.pads.data(), c.dilations.data(), c.group, want.data(), c.y);
    expectSame(composedConv(c, x, w, bias), want, 1e-5, 1e-5);
  }
}

TEST(ConvolutionBodies, Col2imComposesToConvGradInput) {
  uint32_t seed = 100;
  for (const ConvCase &c : convCases()) {
    body::Window3 win = c.window();
    int64_t inSize = win.inSize(), oSize = win.outSize();
    std::vector<float> dy = randomVector(c.y.numElements(), seed++);
    std::vector<float> w = randomVector(c.w.numElements(), seed++);
    // As cuda::convGradInput: dcol = w_g^T dy_g, then col2im overwrites
    // dx_g (no zero-fill, so start from garbage).
    std::vector<float> got(c.x.numElements(), 7.0f), col(c.kRows() * oSize);
    for (int64_t b = 0; b < c.x[0]; ++b)
      for (int64_t g = 0; g < c.group; ++g) {
        hostGemm(true, false, c.kRows(), oSize, c.groupOut(),
                 w.data() + g * c.groupOut() * c.kRows(),
                 dy.data() + (b * c.w[0] + g * c.groupOut()) * oSize, 0.0f,
                 col.data());
        body::Col2im col2im{
            col.data(), got.data() + (b * c.x[1] + g * c.groupIn()) * inSize,
            c.groupIn(), win};
        runOnHost(col2im.numItems(), col2im);
      }
    std::vector<float> want(c.x.numElements());
    convGradInput(dy.data(), c.y, w.data(), c.w, c.strides.data(),
                  c.pads.data(), c.dilations.data(), c.group, want.data(), c.x);
    expectSame(got, want, 1e-5, 1e-5);
  }
}

TEST(ConvolutionBodies, Im2colComposesToConvGradWeight) {
  uint32_t seed = 200;
  for (const ConvCase &c : convCases()) {
    body::Window3 win = c.window();
    int64_t inSize = win.inSize(), oSize = win.outSize();
    std::vector<float> dy = randomVector(c.y.numElements(), seed++);
    std::vector<float> x = randomVector(c.x.numElements(), seed++);
    std::vector<float> got(c.w.numElements(), 7.0f), col(c.kRows() * oSize);
    runOnHost(c.w.numElements(), body::FillZero<float>{got.data()});
    for (int64_t b = 0; b < c.x[0]; ++b)
      for (int64_t g = 0; g < c.group; ++g) {
        body::Im2col im2col{x.data() + (b * c.x[1] + g * c.groupIn()) * inSize,
                            col.data(), c.groupIn(), win};
        runOnHost(im2col.numItems(), im2col);
        hostGemm(false, true, c.groupOut(), c.kRows(), oSize,
                 dy.data() + (b * c.w[0] + g * c.groupOut()) * oSize,
                 col.data(), 1.0f, got.data() + g * c.groupOut() * c.kRows());
      }
    std::vector<float> want(c.w.numElements());
    convGradWeight(dy.data(), c.y, x.data(), c.x, c.strides.data(),
                   c.pads.data(), c.dilations.data(), c.group, want.data(),
                   c.w);
    expectSame(got, want, 1e-5, 1e-5);
  }
}

TEST(ConvolutionBodies, Col2imIsTheAdjointOfIm2col) {
  // <im2col(x), c> == <x, col2im(c)>, independently of any cpu kernel.
  uint32_t seed = 300;
  for (const ConvCase &cc : convCases()) {
    body::Window3 win = cc.window();
    int64_t channels = cc.groupIn();
    std::vector<float> x = randomVector(channels * win.inSize(), seed++);
    std::vector<float> c = randomVector(cc.kRows() * win.outSize(), seed++);
    std::vector<float> col(c.size()), xt(x.size());
    body::Im2col im2col{x.data(), col.data(), channels, win};
    runOnHost(im2col.numItems(), im2col);
    body::Col2im col2im{c.data(), xt.data(), channels, win};
    runOnHost(col2im.numItems(), col2im);
    EXPECT_NEAR(dot(col, c), dot(x, xt), 1e-4);
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  Shape x, y;
  std::vector<int64_t> kernel, strides, pads, dilations;
};

std::vector<PoolCase> poolCases() {
  return {
      // 2-d, padded; W in ceil mode: the last window [4, 7) reaches past
      // the input. H (7 + 2 - 3) / 2 + 1 = 4, W ceil((6 - 3) / 2) + 1 = 3.
      {{2, 3, 7, 6}, {2, 3, 4, 3}, {3, 3}, {2, 2}, {1, 0, 1, 0}, {1, 1}},
      // 1-d in ceil mode: ceil((9 + 3 - 3) / 2) + 1 = 6.
      {{2, 2, 9}, {2, 2, 6}, {3}, {2}, {2, 1}, {1}},
      // 3-d: D (4 + 1 - 2) + 1 = 4, H (5 + 2 - 3) / 2 + 1 = 3,
      // W (3 + 1 - 2) + 1 = 3.
      {{1, 2, 4, 5, 3},
       {1, 2, 4, 3, 3},
       {2, 3, 2},
       {1, 2, 1},
       {1, 1, 0, 0, 1, 1},
       {1, 1, 1}},
  };
}

/// Values on a coarse grid, so that windows hold ties (maxPool's argmax is
/// the first one), and one NaN, which wins its windows.
std::vector<float> tiedValues(int64_t n, uint32_t seed) {
  std::vector<float> v = randomVector(n, seed, -2.0f, 2.0f);
  for (float &x : v)
    x = std::round(x);
  v[n / 3] = NAN;
  return v;
}

TEST(PoolingBodies, MaxPool) {
  std::vector<PoolCase> cases = poolCases();
  // Dilated 1-d: (9 + 3 - 2 * 2 - 1) / 2 + 1 = 4.
  cases.push_back({{2, 2, 9}, {2, 2, 4}, {3}, {2}, {2, 1}, {2}});
  // Rows exactly out * stride long: every tap of 2x2 stride 2 (and the
  // unpadded taps of 3x3 stride 2, pad 1) reads all rows in one loop.
  cases.push_back(
      {{2, 3, 8, 6}, {2, 3, 4, 3}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}});
  cases.push_back(
      {{2, 3, 8, 6}, {2, 3, 4, 3}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}});
  uint32_t seed = 1;
  for (const PoolCase &c : cases) {
    std::vector<float> x = tiedValues(c.x.numElements(), seed++);
    std::vector<float> got(c.y.numElements()), want(got.size());
    body::Window3 win(c.x, c.y, c.kernel.data(), c.strides.data(),
                      c.pads.data(), c.dilations.data());
    runOnHost(c.y.numElements(), body::MaxPool{x.data(), got.data(), win});
    maxPool(x.data(), c.x, c.kernel.data(), c.strides.data(), c.pads.data(),
            c.dilations.data(), want.data(), c.y);
    expectSame(nanAsSentinel(got), nanAsSentinel(want), 0, 0);

    std::vector<float> dy = randomVector(c.y.numElements(), seed++);
    std::vector<float> dxGot(c.x.numElements(), 7.0f), dxWant(dxGot.size());
    runOnHost(c.x.numElements(), body::FillZero<float>{dxGot.data()});
    runOnHost(c.y.numElements(),
              body::MaxPoolGradAdd{dy.data(), x.data(), dxGot.data(), win});
    maxPoolGrad(dy.data(), c.y, x.data(), c.x, c.kernel.data(),
                c.strides.data(), c.pads.data(), c.dilations.data(),
                dxWant.data());
    expectSame(dxGot, dxWant, 0, 0);
  }
}

TEST(PoolingBodies, AvgPoolWithAndWithoutPadInDivisor) {
  uint32_t seed = 100;
  for (const PoolCase &c : poolCases())
    for (bool includePad : {false, true}) {
      std::vector<float> x = randomVector(c.x.numElements(), seed++);
      std::vector<float> got(c.y.numElements()), want(got.size());
      body::Window3 win(c.x, c.y, c.kernel.data(), c.strides.data(),
                        c.pads.data(), nullptr);
      runOnHost(c.y.numElements(),
                body::AvgPool{x.data(), got.data(), win, includePad});
      avgPool(x.data(), c.x, c.kernel.data(), c.strides.data(), c.pads.data(),
              includePad, want.data(), c.y);
      expectSame(got, want, 0, 0);

      // The gradient overwrites dx: start from garbage.
      std::vector<float> dy = randomVector(c.y.numElements(), seed++);
      std::vector<float> dxGot(c.x.numElements(), 7.0f), dxWant(dxGot.size());
      runOnHost(c.x.numElements(),
                body::AvgPoolGrad{dy.data(), dxGot.data(), win, includePad});
      avgPoolGrad(dy.data(), c.y, c.kernel.data(), c.strides.data(),
                  c.pads.data(), includePad, dxWant.data(), c.x);
      expectSame(dxGot, dxWant, 0, 0);
    }
}

} // namespace
} // namespace cleave::rt::test
