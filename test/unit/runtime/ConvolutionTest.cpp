//===- ConvolutionTest.cpp - convolution and pooling ----------------------===//
//
// The convolution and max pool are checked against direct loops over the
// ONNX definition (in double), the gradients against finite differences;
// the convolution's two paths (im2col + sgemm, oneDNN) each against the
// definition of all three passes.
//
//===----------------------------------------------------------------------===//

#include "runtime/ConvolutionCrop.h"
#include "runtime/Kernels.h"
#include "runtime/OneDnnConvolution.h"

#include "test/unit/runtime/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

using namespace cleave::rt;
using cleave::rt::test::distinctVector;
using cleave::rt::test::dot;
using cleave::rt::test::expectGradient;
using cleave::rt::test::flatIndex;
using cleave::rt::test::randomVector;
using cleave::rt::test::ScopedThreads;
using cleave::rt::test::unflatten;

namespace {

struct ConvCase {
  Shape x, w, y;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

/// Spatial shape (dims 2..) of a [N, C, ...] shape.
Shape spatialOf(const Shape &s) {
  Shape r;
  r.rank = s.rank - 2;
  for (int i = 0; i < r.rank; ++i)
    r.dims[i] = s.dims[2 + i];
  return r;
}

/// Calls f(yIndex, xIndex, wIndex) for every product x * w that the ONNX
/// definition sums into y: y[n, m, o] = bias[m] + sum_{c, k} x[n, g * C/G +
/// c, o * s - p + k * d] * w[m, c, k], padding contributing nothing.
template <typename F> void forEachProduct(const ConvCase &cc, F f) {
  int sp = cc.x.rank - 2;
  int64_t n = cc.x[0], c = cc.x[1], m = cc.w[0];
  int64_t cg = c / cc.group, mg = m / cc.group;
  Shape xs = spatialOf(cc.x), ks = spatialOf(cc.w), ys = spatialOf(cc.y);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t of = 0; of < ys.numElements(); ++of) {
        int64_t o[3], k[3], in[3];
        unflatten(ys, of, o);
        int64_t g = oc / mg;
        for (int64_t ic = 0; ic < cg; ++ic)
          for (int64_t kf = 0; kf < ks.numElements(); ++kf) {
            unflatten(ks, kf, k);
            bool inside = true;
            for (int d = 0; d < sp; ++d) {
              in[d] =
                  o[d] * cc.strides[d] - cc.pads[d] + k[d] * cc.dilations[d];
              inside = inside && in[d] >= 0 && in[d] < xs.dims[d];
            }
            if (!inside)
              continue;
            f((b * m + oc) * ys.numElements() + of,
              (b * c + g * cg + ic) * xs.numElements() + flatIndex(xs, in),
              (oc * cg + ic) * ks.numElements() + kf);
          }
      }
}

/// The convolution by the definition, in double.
std::vector<float> directConv(const ConvCase &cc, const std::vector<float> &x,
                              const std::vector<float> &w, const float *bias) {
  int64_t m = cc.w[0], planeSize = cc.y.numElements() / cc.y[0] / m;
  std::vector<double> acc(cc.y.numElements());
  for (size_t i = 0; i < acc.size(); ++i)
    acc[i] = bias ? bias[i / planeSize % m] : 0.0;
  forEachProduct(cc, [&](int64_t yi, int64_t xi, int64_t wi) {
    acc[yi] += static_cast<double>(x[xi]) * w[wi];
  });
  return std::vector<float>(acc.begin(), acc.end());
}

void runConv(const ConvCase &cc, const std::vector<float> &x,
             const std::vector<float> &w, const float *bias,
             std::vector<float> &y) {
  y.assign(cc.y.numElements(), -99.0f);
  conv(x.data(), cc.x, w.data(), cc.w, bias, cc.strides.data(), cc.pads.data(),
       cc.dilations.data(), cc.group, y.data(), cc.y);
}

void checkConv(const ConvCase &cc, bool withBias) {
  auto x = randomVector(cc.x.numElements(), 1);
  auto w = randomVector(cc.w.numElements(), 2);
  auto bias = randomVector(cc.w[0], 3);
  const float *b = withBias ? bias.data() : nullptr;
  std::vector<float> y;
  runConv(cc, x, w, b, y);
  auto want = directConv(cc, x, w, b);
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], want[i], 1e-5f) << "at " << i;

  // Gradients of L = <conv(x, w), r>.
  auto r = randomVector(cc.y.numElements(), 4);
  auto loss = [&] {
    std::vector<float> yy;
    runConv(cc, x, w, b, yy);
    return dot(yy, r);
  };
  std::vector<float> dx(x.size(), 7.0f), dw(w.size(), 7.0f);
  convGradInput(r.data(), cc.y, w.data(), cc.w, cc.strides.data(),
                cc.pads.data(), cc.dilations.data(), cc.group, dx.data(), cc.x);
  convGradWeight(r.data(), cc.y, x.data(), cc.x, cc.strides.data(),
                 cc.pads.data(), cc.dilations.data(), cc.group, dw.data(),
                 cc.w);
  expectGradient(x, dx, loss);
  expectGradient(w, dw, loss);
}

TEST(Convolution, Conv2dGroupedStridedPaddedDilated) {
  // H: (7 + 1 + 2 - 1*(3-1) - 1) / 2 + 1 = 4; W: (8 + 0 + 1 - 2*(2-1) - 1)
  // / 1 + 1 = 7.
  ConvCase cc{{2, 4, 7, 8},
              {6, 2, 3, 2},
              {2, 6, 4, 7},
              {2, 1},
              {1, 0, 2, 1},
              {1, 2},
              2};
  checkConv(cc, true);
  checkConv(cc, false);
}

TEST(Convolution, Conv2dStride2Padding) {
  // (9 + 2 - 3) / 2 + 1 = 5 both ways.
  ConvCase cc{{1, 3, 9, 9},
              {4, 3, 3, 3},
              {1, 4, 5, 5},
              {2, 2},
              {1, 1, 1, 1},
              {1, 1},
              1};
  checkConv(cc, true);
}

TEST(Convolution, Conv1d) {
  ConvCase cc{{2, 3, 10}, {2, 3, 3}, {2, 2, 5}, {2}, {1, 1}, {1}, 1};
  checkConv(cc, true);
}

TEST(Convolution, Conv3dGrouped) {
  // D: (4 + 0 + 1 - 2 - 1) + 1 = 3; H: (5 + 1 + 1 - 2 - 1) / 2 + 1 = 3;
  // W: (3 + 1 + 0 - 1 - 1) + 1 = 3.
  ConvCase cc{{1, 2, 4, 5, 3},
              {4, 1, 2, 3, 2},
              {1, 4, 3, 3, 3},
              {1, 2, 1},
              {0, 1, 1, 1, 1, 0},
              {2, 1, 1},
              2};
  checkConv(cc, true);
}

TEST(Convolution, PointwiseAndDepthwise) {
  ConvCase pointwise{{2, 3, 5, 5},
                     {4, 3, 1, 1},
                     {2, 4, 5, 5},
                     {1, 1},
                     {0, 0, 0, 0},
                     {1, 1},
                     1};
  checkConv(pointwise, true);
  ConvCase depthwise{{2, 3, 6, 6},
                     {6, 1, 3, 3},
                     {2, 6, 6, 6},
                     {1, 1},
                     {1, 1, 1, 1},
                     {1, 1},
                     3};
  checkConv(depthwise, false);
  // 1x1 with stride 2 is not pointwise: it goes through im2col.
  ConvCase strided{{1, 2, 5, 5},
                   {3, 2, 1, 1},
                   {1, 3, 3, 3},
                   {2, 2},
                   {0, 0, 0, 0},
                   {1, 1},
                   1};
  checkConv(strided, false);
}

TEST(Convolution, SmallOutputsSideBySide) {
  // Outputs of a few positions: several samples' im2col matrices go into
  // one GEMM (grouped, strided, padded, with a bias), pointwise ones too.
  ConvCase grouped{{5, 4, 3, 3},
                   {6, 2, 3, 3},
                   {5, 6, 2, 2},
                   {2, 2},
                   {1, 1, 1, 1},
                   {1, 1},
                   2};
  checkConv(grouped, true);
  ConvCase pointwise{{4, 3, 2, 2},
                     {5, 3, 1, 1},
                     {4, 5, 2, 2},
                     {1, 1},
                     {0, 0, 0, 0},
                     {1, 1},
                     1};
  checkConv(pointwise, false);
}

/// conv against directConv, and convGradInput as conv's adjoint in x:
/// <conv(x), r> = <x, convGradInput(r)>.
void checkConvAndGradInput(const ConvCase &cc, uint32_t seed) {
  auto x = randomVector(cc.x.numElements(), seed);
  auto w = randomVector(cc.w.numElements(), seed + 1);
  std::vector<float> y;
  runConv(cc, x, w, nullptr, y);
  auto want = directConv(cc, x, w, nullptr);
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], want[i], 1e-4f) << "at " << i;
  auto r = randomVector(cc.y.numElements(), seed + 2);
  std::vector<float> dx(x.size());
  convGradInput(r.data(), cc.y, w.data(), cc.w, cc.strides.data(),
                cc.pads.data(), cc.dilations.data(), cc.group, dx.data(),
                cc.x);
  EXPECT_NEAR(dot(y, r), dot(x, dx), 1e-3 * std::fabs(dot(y, r)) + 1e-2);
}

TEST(Convolution, ConvLargeThreaded) {
  // Big enough to run threaded: its samples or, on more threads than
  // samples, its GEMMs.
  checkConvAndGradInput(
      {{2, 8, 40, 40}, {16, 8, 3, 3}, {2, 16, 40, 40}, {1, 1}, {1, 1, 1, 1},
       {1, 1}, 1},
      5);
}

TEST(Convolution, ConvSamplesOnThreads) {
  // More samples than threads (3 here) and work enough: the samples run on
  // the threads, each with its own im2col matrix; grouped, strided, padded.
  ScopedThreads threads(3);
  checkConvAndGradInput(
      {{5, 6, 20, 20}, {8, 3, 3, 3}, {5, 8, 10, 10}, {2, 2}, {1, 1, 1, 1},
       {1, 1}, 2},
      8);
}

TEST(Convolution, SmallOutputChunksOnThreads) {
  // 1x1 outputs of 1040 samples: chunks of 256 samples per GEMM, more
  // chunks than threads, so the chunks run on the threads.
  ScopedThreads threads(2);
  checkConvAndGradInput(
      {{1040, 8, 3, 3}, {16, 8, 3, 3}, {1040, 16, 1, 1}, {1, 1}, {0, 0, 0, 0},
       {1, 1}, 1},
      11);
}

//===----------------------------------------------------------------------===//
// The two paths: im2col + sgemm and oneDNN (OneDnnConvolution.h)
//===----------------------------------------------------------------------===//

/// y, dx and dw of L = <conv(x, w), r> by the definition, in double.
struct DirectResults {
  std::vector<float> y, dx, dw;
};

DirectResults directAll(const ConvCase &cc, const std::vector<float> &x,
                        const std::vector<float> &w,
                        const std::vector<float> &r) {
  std::vector<double> y(cc.y.numElements()), dx(x.size()), dw(w.size());
  forEachProduct(cc, [&](int64_t yi, int64_t xi, int64_t wi) {
    y[yi] += static_cast<double>(x[xi]) * w[wi];
    dx[xi] += static_cast<double>(r[yi]) * w[wi];
    dw[wi] += static_cast<double>(r[yi]) * x[xi];
  });
  auto toFloat = [](const std::vector<double> &v) {
    return std::vector<float>(v.begin(), v.end());
  };
  return {toFloat(y), toFloat(dx), toFloat(dw)};
}

/// Sums of up to a few hundred products of values in [-1, 1]: float
/// rounding stays far below 1e-4 of the magnitudes, while a wrong tap,
/// layout or stride moves results by about their own size.
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const char *what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4f + 1e-4f * std::fabs(want[i]))
        << what << " at " << i;
}

/// Every way of computing the three passes of `cc` against the definition:
/// the dispatching kernels (rt::conv and its gradients), im2col, and
/// oneDNN in each layout (Winograd's where oneDNN has no such kernel for
/// `cc` runs its direct ones). Outputs start as garbage, as every path
/// must overwrite them.
void checkBothPaths(const ConvCase &cc) {
  auto x = randomVector(cc.x.numElements(), 21);
  auto w = randomVector(cc.w.numElements(), 22);
  auto r = randomVector(cc.y.numElements(), 23);
  DirectResults want = directAll(cc, x, w, r);
  const int64_t *s = cc.strides.data(), *p = cc.pads.data(),
                *d = cc.dilations.data();
  std::vector<float> y, dx, dw;
  auto reset = [&] {
    y.assign(cc.y.numElements(), -99.0f);
    dx.assign(x.size(), -99.0f);
    dw.assign(w.size(), -99.0f);
  };
  auto expectAll = [&](const char *path) {
    SCOPED_TRACE(path);
    expectClose(y, want.y, "y");
    expectClose(dx, want.dx, "dx");
    expectClose(dw, want.dw, "dw");
  };
  reset();
  conv(x.data(), cc.x, w.data(), cc.w, nullptr, s, p, d, cc.group, y.data(),
       cc.y);
  convGradInput(r.data(), cc.y, w.data(), cc.w, s, p, d, cc.group, dx.data(),
                cc.x);
  convGradWeight(r.data(), cc.y, x.data(), cc.x, s, p, d, cc.group, dw.data(),
                 cc.w);
  expectAll("dispatch");
  reset();
  im2colConv(x.data(), cc.x, w.data(), cc.w, nullptr, s, p, d, cc.group,
             y.data(), cc.y);
  im2colConvGradInput(r.data(), cc.y, w.data(), cc.w, s, p, d, cc.group,
                      dx.data(), cc.x);
  im2colConvGradWeight(r.data(), cc.y, x.data(), cc.x, s, p, d, cc.group,
                       dw.data(), cc.w);
  expectAll("im2col");
  for (OneDnnLayout layout :
       {OneDnnLayout::Plain, OneDnnLayout::Blocked, OneDnnLayout::Winograd}) {
    reset();
    ASSERT_TRUE(oneDnnConv(x.data(), cc.x, w.data(), cc.w, nullptr, s, p, d,
                           cc.group, y.data(), cc.y, layout));
    ASSERT_TRUE(oneDnnConvGradInput(r.data(), cc.y, w.data(), cc.w, s, p, d,
                                    cc.group, dx.data(), cc.x, layout));
    ASSERT_TRUE(oneDnnConvGradWeight(r.data(), cc.y, x.data(), cc.x, s, p, d,
                                     cc.group, dw.data(), cc.w, layout));
    expectAll(layout == OneDnnLayout::Plain     ? "oneDNN plain"
              : layout == OneDnnLayout::Blocked ? "oneDNN blocked"
                                                : "oneDNN Winograd");
  }
  // The bias, on the forward pass that takes one.
  auto bias = randomVector(cc.w[0], 24);
  auto wantBiased = directConv(cc, x, w, bias.data());
  for (OneDnnLayout layout :
       {OneDnnLayout::Plain, OneDnnLayout::Blocked, OneDnnLayout::Winograd}) {
    reset();
    ASSERT_TRUE(oneDnnConv(x.data(), cc.x, w.data(), cc.w, bias.data(), s, p,
                           d, cc.group, y.data(), cc.y, layout));
    expectClose(y, wantBiased, "biased y");
  }
}

/// The path preferOneDnn picks for each pass of `cc` on `threads`
/// threads, as "im2col", "plain", "blocked" or "winograd" (fwd, dx,
/// dw).
std::vector<std::string> chosenPaths(const ConvCase &cc, int threads) {
  cleave::body::Window3 win(cc.x, cc.y, cc.w.dims + 2, cc.strides.data(), cc.pads.data(),
              cc.dilations.data());
  ConvDims cd(cc.x, cc.w, cc.group, win);
  std::vector<std::string> paths;
  for (ConvPass pass :
       {ConvPass::Forward, ConvPass::GradInput, ConvPass::GradWeight}) {
    OneDnnLayout layout;
    bool dnnl = preferOneDnn(pass, cd, win, threads, layout);
    paths.push_back(!dnnl                             ? "im2col"
                    : layout == OneDnnLayout::Plain   ? "plain"
                    : layout == OneDnnLayout::Blocked ? "blocked"
                                                      : "winograd");
  }
  return paths;
}

using Paths = std::vector<std::string>;

TEST(ConvolutionPaths, BlockedOneDnnStridedPaddedDilated) {
  // 16 channels, 3x3: every pass goes to oneDNN's blocked layouts on one
  // thread. H: (9 + 1 + 2 - 1*2 - 1) / 2 + 1 = 5; W: (9 + 0 + 1 - 2*2 - 1)
  // / 1 + 1 = 6.
  ScopedThreads threads(1);
  ConvCase cc{{2, 16, 9, 9},  {24, 16, 3, 3}, {2, 24, 5, 6}, {2, 1},
              {1, 0, 2, 1},   {1, 2},         1};
  EXPECT_EQ(chosenPaths(cc, 1), (Paths{"blocked", "blocked", "blocked"}));
  checkBothPaths(cc);
}

TEST(ConvolutionPaths, GradWeightSharesTheOutputGradReorder) {
  // Both backward passes on oneDNN's blocked layouts: a weight gradient
  // told it follows the input gradient of the same dy reuses that call's
  // reorder of dy, bitwise what reordering again gives; where another
  // call's dy was reordered in between, or dy's buffer differs, it
  // reorders its own.
  ScopedThreads threads(1);
  ConvCase cc{{2, 16, 9, 9},
              {24, 16, 3, 3},
              {2, 24, 9, 9},
              {1, 1},
              {1, 1, 1, 1},
              {1, 1},
              1};
  ASSERT_EQ(chosenPaths(cc, 1), (Paths{"blocked", "blocked", "blocked"}));
  auto x = randomVector(cc.x.numElements(), 91);
  auto w = randomVector(cc.w.numElements(), 92);
  auto dyA = randomVector(cc.y.numElements(), 93);
  auto dyB = randomVector(cc.y.numElements(), 94);
  std::vector<float> dx(x.size()), want(w.size()), got(w.size());
  auto gradInput = [&](const std::vector<float> &dy) {
    convGradInput(dy.data(), cc.y, w.data(), cc.w, cc.strides.data(),
                  cc.pads.data(), cc.dilations.data(), cc.group, dx.data(),
                  cc.x);
  };
  auto gradWeight = [&](const std::vector<float> &dy, bool after,
                        std::vector<float> &dw) {
    convGradWeight(dy.data(), cc.y, x.data(), cc.x, cc.strides.data(),
                   cc.pads.data(), cc.dilations.data(), cc.group, dw.data(),
                   cc.w, after);
  };
  for (const std::vector<float> *dy : {&dyA, &dyB}) {
    gradWeight(*dy, false, want);
    gradInput(*dy);
    gradWeight(*dy, true, got);
    EXPECT_EQ(got, want);
  }
  // dyB's reorder in between: dyA is reordered again.
  gradWeight(dyA, false, want);
  gradInput(dyA);
  gradInput(dyB);
  gradWeight(dyA, true, got);
  EXPECT_EQ(got, want);
  // A weight gradient without an input gradient before it.
  gradWeight(dyB, true, got);
  gradWeight(dyB, false, want);
  EXPECT_EQ(got, want);
}

TEST(ConvolutionPaths, WinogradWhereItIsFaster) {
  // 3x3 kernels at stride 1 over planes and channels large enough: all
  // three passes on oneDNN's Winograd kernels, on 1 and 2 threads, with
  // and without padding (Keras' MNIST convnet's second conv, 32 -> 64 on
  // 26x26; 64 -> 64 on 12x12, padded), as close to the definition as the
  // direct kernels.
  ConvCase keras{{2, 32, 26, 26},
                 {64, 32, 3, 3},
                 {2, 64, 24, 24},
                 {1, 1},
                 {0, 0, 0, 0},
                 {1, 1},
                 1};
  ConvCase padded{{2, 64, 12, 12},
                  {64, 64, 3, 3},
                  {2, 64, 12, 12},
                  {1, 1},
                  {1, 1, 1, 1},
                  {1, 1},
                  1};
  for (int t : {1, 2}) {
    ScopedThreads threads(t);
    for (const ConvCase &cc : {keras, padded}) {
      EXPECT_EQ(chosenPaths(cc, t),
                (Paths{"winograd", "winograd", "winograd"}));
      checkBothPaths(cc);
    }
  }
  // Not where its tiles outgrow the plane, with few channels, at stride 2
  // or on other kernels: the direct kernels.
  ConvCase smallPlane{{2, 64, 8, 8},
                      {64, 64, 3, 3},
                      {2, 64, 8, 8},
                      {1, 1},
                      {1, 1, 1, 1},
                      {1, 1},
                      1};
  ConvCase fewChannels{{2, 32, 16, 16},
                       {32, 32, 3, 3},
                       {2, 32, 16, 16},
                       {1, 1},
                       {1, 1, 1, 1},
                       {1, 1},
                       1};
  ConvCase strided{{2, 64, 32, 32},
                   {64, 64, 3, 3},
                   {2, 64, 16, 16},
                   {2, 2},
                   {1, 1, 1, 1},
                   {1, 1},
                   1};
  ConvCase fiveByFive{{2, 64, 20, 20},
                      {64, 64, 5, 5},
                      {2, 64, 16, 16},
                      {1, 1},
                      {0, 0, 0, 0},
                      {1, 1},
                      1};
  for (const ConvCase &cc : {smallPlane, fewChannels, strided, fiveByFive})
    EXPECT_EQ(chosenPaths(cc, 1), (Paths{"blocked", "blocked", "blocked"}));
  // oneDNN has these kernels for AVX-512 only; elsewhere the Winograd
  // layout runs the direct kernels (checked above all the same).
  if (!__builtin_cpu_supports("avx512f") ||
      !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512dq"))
    GTEST_SKIP() << "no AVX-512: oneDNN has no Winograd kernels here";
  for (ConvPass pass :
       {ConvPass::Forward, ConvPass::GradInput, ConvPass::GradWeight})
    EXPECT_NE(std::string(oneDnnImplementation(pass, keras.x, keras.w, keras.y,
                                               keras.strides.data(),
                                               keras.pads.data(),
                                               keras.dilations.data(), 1, false,
                                               OneDnnLayout::Winograd))
                  .find("wino"),
              std::string::npos);
}

TEST(ConvolutionPaths, DepthwiseOnOneDnn) {
  // One channel per group: oneDNN's depthwise kernels, on any thread count.
  ScopedThreads threads(2);
  ConvCase cc{{3, 32, 7, 7}, {32, 1, 3, 3}, {3, 32, 4, 4}, {2, 2},
              {1, 1, 1, 1},  {1, 1},        32};
  EXPECT_EQ(chosenPaths(cc, 2), (Paths{"blocked", "blocked", "blocked"}));
  checkBothPaths(cc);
}

TEST(ConvolutionPaths, DepthwiseOnImagesSmallerThanTheKernel) {
  // A 2x2 image under a 3x3 kernel: oneDNN has no depthwise kernel for the
  // weight gradient there (on AVX-512 it falls back to a GEMM), and the
  // dispatch computes it by direct loops. Stride 1 and 2, 1 and 2 threads.
  for (int t : {1, 2}) {
    ScopedThreads threads(t);
    checkBothPaths({{4, 24, 2, 2}, {24, 1, 3, 3}, {4, 24, 2, 2}, {1, 1},
                    {1, 1, 1, 1}, {1, 1}, 24});
    checkBothPaths({{3, 40, 2, 3}, {40, 1, 3, 3}, {3, 40, 1, 2}, {2, 2},
                    {1, 1, 1, 1}, {1, 1}, 40});
  }
}

TEST(ConvolutionPaths, SmallPointwisePlainOnTwoThreads) {
  // A pointwise conv of 48 channels and little work: oneDNN's plain layout
  // on 2 threads, its blocked one on 1.
  ScopedThreads threads(2);
  ConvCase cc{{4, 48, 3, 3}, {16, 48, 1, 1}, {4, 16, 3, 3}, {1, 1},
              {0, 0, 0, 0},  {1, 1},         1};
  EXPECT_EQ(chosenPaths(cc, 2), (Paths{"plain", "plain", "plain"}));
  EXPECT_EQ(chosenPaths(cc, 1), (Paths{"blocked", "blocked", "blocked"}));
  checkBothPaths(cc);
}

TEST(ConvolutionPaths, Im2colWhereItIsFaster) {
  // A first layer (3 channels, 5x5 taps): forward and weight gradient on
  // oneDNN, the input gradient on im2col.
  ScopedThreads threads(1);
  ConvCase first{{2, 3, 11, 11}, {8, 3, 5, 5}, {2, 8, 6, 6}, {2, 2},
                 {2, 2, 2, 2},   {1, 1},       1};
  EXPECT_EQ(chosenPaths(first, 1), (Paths{"blocked", "im2col", "blocked"}));
  checkBothPaths(first);
  // A GEMM depth under 16 (8 channels, 1x1) and a grouped conv that is not
  // depthwise: im2col throughout, though oneDNN computes them too.
  ConvCase shallow{{2, 8, 6, 6}, {12, 8, 1, 1}, {2, 12, 6, 6}, {1, 1},
                   {0, 0, 0, 0}, {1, 1},        1};
  EXPECT_EQ(chosenPaths(shallow, 1), (Paths{"im2col", "im2col", "im2col"}));
  checkBothPaths(shallow);
  ConvCase grouped{{2, 8, 6, 6}, {12, 4, 3, 3}, {2, 12, 6, 6}, {1, 1},
                   {1, 1, 1, 1}, {1, 1},        2};
  EXPECT_EQ(chosenPaths(grouped, 1), (Paths{"im2col", "im2col", "im2col"}));
  checkBothPaths(grouped);
  // A 1x1 output of a 3x3 kernel: every pass on im2col, whose samples sit
  // side by side in one GEMM (im2colChunk, col2imChunk), on any thread
  // count.
  ConvCase late{{2, 32, 2, 2}, {16, 32, 3, 3}, {2, 16, 1, 1}, {2, 2},
                {1, 1, 1, 1},  {1, 1},         1};
  EXPECT_EQ(chosenPaths(late, 1), (Paths{"im2col", "im2col", "im2col"}));
  EXPECT_EQ(chosenPaths(late, 2), (Paths{"im2col", "im2col", "im2col"}));
  checkBothPaths(late);
  // Pointwise on 2x2 planes: a linear layer over the samples, on im2col,
  // but for the forward pass of one with more than twice as many outputs
  // as inputs (oneDNN's, whose output needs no scatter).
  ConvCase narrow{{5, 48, 2, 2},
                  {16, 48, 1, 1},
                  {5, 16, 2, 2},
                  {1, 1},
                  {0, 0, 0, 0},
                  {1, 1},
                  1};
  EXPECT_EQ(chosenPaths(narrow, 1), (Paths{"im2col", "im2col", "im2col"}));
  checkBothPaths(narrow);
  ConvCase widening{{5, 24, 1, 1},
                    {144, 24, 1, 1},
                    {5, 144, 1, 1},
                    {1, 1},
                    {0, 0, 0, 0},
                    {1, 1},
                    1};
  EXPECT_EQ(chosenPaths(widening, 1), (Paths{"blocked", "im2col", "im2col"}));
  checkBothPaths(widening);
  // 2x2 outputs: the weight gradient on im2col, the input gradient not.
  ConvCase small{{3, 32, 4, 4},
                 {16, 32, 3, 3},
                 {3, 16, 2, 2},
                 {2, 2},
                 {1, 1, 1, 1},
                 {1, 1},
                 1};
  EXPECT_EQ(chosenPaths(small, 1), (Paths{"blocked", "blocked", "im2col"}));
  checkBothPaths(small);
}

//===----------------------------------------------------------------------===//
// Kernel taps that only read padding (ConvolutionCrop.h)
//===----------------------------------------------------------------------===//

std::vector<int64_t> dimsOf(const Shape &s) {
  return std::vector<int64_t>(s.dims, s.dims + s.rank);
}

TEST(ConvolutionPath, DirectConvWork) {
  // A 3x3 kernel, padding 1, on a 2x2 image: per dim, 4 of the 6 (output,
  // tap) pairs read the image, so 4/9 of the multiply-adds.
  const int64_t unit[] = {1, 1}, pads[] = {1, 1, 1, 1};
  Shape x{4, 8, 2, 2}, w{8, 8, 3, 3}, y{4, 8, 2, 2};
  cleave::body::Window3 window(x, y, w.dims + 2, unit, pads, unit);
  // The forward pass computes its 8 output channels as a block of 16, the
  // input gradient its 8 input channels so; the weight gradient neither.
  EXPECT_DOUBLE_EQ(
      directConvWork(ConvPass::Forward, w, OneDnnLayout::Blocked, window),
      8.0 / 9);
  EXPECT_DOUBLE_EQ(
      directConvWork(ConvPass::GradInput, w, OneDnnLayout::Blocked, window),
      8.0 / 9);
  EXPECT_DOUBLE_EQ(
      directConvWork(ConvPass::GradWeight, w, OneDnnLayout::Blocked, window),
      4.0 / 9);
  EXPECT_DOUBLE_EQ(
      directConvWork(ConvPass::Forward, w, OneDnnLayout::Plain, window),
      4.0 / 9);
  // 48 output channels are three whole blocks; a 1x1 kernel without
  // padding reads the image everywhere.
  Shape w1{48, 16, 1, 1}, y1{4, 48, 2, 2};
  cleave::body::Window3 pointwise(x, y1, w1.dims + 2, unit, nullptr, unit);
  EXPECT_DOUBLE_EQ(
      directConvWork(ConvPass::Forward, w1, OneDnnLayout::Blocked, pointwise),
      1.0);
}

TEST(ConvolutionCrop, DeadTapsFound) {
  ConvCrop crop;
  // ResNet-18's last stage at 32x32: a 1x1 image, 3x3 kernel, padding 1:
  // only the centre tap meets the image.
  ASSERT_TRUE(cropDeadTaps({2, 8, 1, 1}, {4, 8, 3, 3}, {2, 4, 1, 1},
                           std::vector<int64_t>{1, 1}.data(),
                           std::vector<int64_t>{1, 1, 1, 1}.data(),
                           std::vector<int64_t>{1, 1}.data(), crop));
  EXPECT_EQ(dimsOf(crop.wShape), (std::vector<int64_t>{4, 8, 1, 1}));
  EXPECT_EQ(std::vector<int64_t>(crop.pads, crop.pads + 4),
            (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(crop.lo[0], 1);
  EXPECT_EQ(crop.hi[1], 2);
  // 2x2 -> 1x1 at stride 2: taps 1 and 2 of each dim read the image.
  ASSERT_TRUE(cropDeadTaps({2, 8, 2, 2}, {4, 8, 3, 3}, {2, 4, 1, 1},
                           std::vector<int64_t>{2, 2}.data(),
                           std::vector<int64_t>{1, 1, 1, 1}.data(), nullptr,
                           crop));
  EXPECT_EQ(dimsOf(crop.wShape), (std::vector<int64_t>{4, 8, 2, 2}));
  EXPECT_EQ(std::vector<int64_t>(crop.pads, crop.pads + 4),
            (std::vector<int64_t>{0, 0, 0, 0}));
  // Every tap live (a 2x2 image at stride 1): nothing to crop.
  EXPECT_FALSE(cropDeadTaps({2, 8, 2, 2}, {4, 8, 3, 3}, {2, 4, 2, 2},
                            nullptr, std::vector<int64_t>{1, 1, 1, 1}.data(),
                            nullptr, crop));
  // A 1x1 image at stride 3, kernel 4, padding 3: output 0 meets it with
  // tap 3, output 1 with tap 0, and taps 1 and 2 never: not one run, left
  // alone.
  EXPECT_FALSE(cropDeadTaps({1, 1, 1, 1}, {1, 1, 4, 1}, {1, 1, 2, 1},
                            std::vector<int64_t>{3, 1}.data(),
                            std::vector<int64_t>{3, 0, 3, 0}.data(), nullptr,
                            crop));
}

TEST(ConvolutionCrop, CroppedPassesMatchTheDefinition) {
  // The dispatching kernels crop; im2col and oneDNN (in checkBothPaths)
  // compute the uncropped geometry: all against the definition.
  ScopedThreads threads(1);
  // 1x1 image, 3x3 kernel: a pointwise conv once cropped.
  checkBothPaths({{3, 32, 1, 1}, {24, 32, 3, 3}, {3, 24, 1, 1}, {1, 1},
                  {1, 1, 1, 1}, {1, 1}, 1});
  // 2x2 -> 1x1 at stride 2, and a 1x3 image padded 2 above and 0 below
  // (only the bottom row of taps meets it).
  checkBothPaths({{2, 32, 2, 2}, {16, 32, 3, 3}, {2, 16, 1, 1}, {2, 2},
                  {1, 1, 1, 1}, {1, 1}, 1});
  checkBothPaths({{2, 16, 1, 3}, {16, 16, 3, 3}, {2, 16, 1, 2}, {1, 2},
                  {2, 1, 0, 1}, {1, 1}, 1});
  // Depthwise on a 1x1 image (MobileNetV2's last stages).
  checkBothPaths({{4, 32, 1, 1}, {32, 1, 3, 3}, {4, 32, 1, 1}, {1, 1},
                  {1, 1, 1, 1}, {1, 1}, 32});
  // With a bias, and the gradients by finite differences.
  checkConv({{2, 4, 1, 1}, {3, 4, 3, 3}, {2, 3, 1, 1}, {1, 1}, {1, 1, 1, 1},
             {1, 1}, 1},
            true);
}

TEST(ConvolutionCrop, GradWeightSgdUpdatesInPlace) {
  // w + -lr * dw, dw by the definition: a cropped geometry (the dead taps
  // keep their values exactly), a plain one and a depthwise one.
  ScopedThreads threads(1);
  const float lr = 0.25f;
  for (const ConvCase &cc :
       {ConvCase{{3, 32, 1, 1}, {24, 32, 3, 3}, {3, 24, 1, 1}, {1, 1},
                 {1, 1, 1, 1}, {1, 1}, 1},
        ConvCase{{2, 16, 5, 5}, {8, 16, 3, 3}, {2, 8, 3, 3}, {2, 2},
                 {1, 1, 1, 1}, {1, 1}, 1},
        ConvCase{{4, 24, 2, 2}, {24, 1, 3, 3}, {4, 24, 2, 2}, {1, 1},
                 {1, 1, 1, 1}, {1, 1}, 24}}) {
    auto x = randomVector(cc.x.numElements(), 31);
    auto w = randomVector(cc.w.numElements(), 32);
    auto r = randomVector(cc.y.numElements(), 33);
    DirectResults want = directAll(cc, x, w, r);
    std::vector<float> updated = w;
    convGradWeightSgd(r.data(), cc.y, x.data(), cc.x, cc.strides.data(),
                      cc.pads.data(), cc.dilations.data(), cc.group, lr,
                      updated.data(), cc.w);
    for (size_t i = 0; i < w.size(); ++i) {
      if (want.dw[i] == 0.0f)
        ASSERT_EQ(updated[i], w[i]) << "at " << i;
      ASSERT_NEAR(updated[i], w[i] - lr * want.dw[i],
                  1e-4f + 1e-4f * std::fabs(want.dw[i]))
          << "at " << i;
    }
  }
}

TEST(ConvolutionCrop, LargeWeightsOnThreads) {
  // Weights of 2^20 floats or more are cropped, uncropped and updated on the
  // OpenMP threads: each live tap against its index, one tap per plane
  // (ResNet-18's 512x512x3x3 on a 1x1 image) and a 2x2 block of taps.
  ScopedThreads threads(2);
  for (const ConvCase &cc :
       {ConvCase{{1, 512, 1, 1}, {512, 512, 3, 3}, {1, 512, 1, 1}, {1, 1},
                 {1, 1, 1, 1}, {1, 1}, 1},
        ConvCase{{1, 256, 2, 2}, {512, 256, 3, 3}, {1, 512, 1, 1}, {2, 2},
                 {1, 1, 1, 1}, {1, 1}, 1}}) {
    ConvCrop crop;
    ASSERT_TRUE(cropDeadTaps(cc.x, cc.w, cc.y, cc.strides.data(),
                             cc.pads.data(), cc.dilations.data(), crop));
    ASSERT_GE(cc.w.numElements(), int64_t{1} << 20);
    int64_t planes = cc.w[0] * cc.w[1], kh = cc.w[2], kw = cc.w[3];
    int64_t ch = crop.wShape[2], cw = crop.wShape[3];
    auto live = [&](int64_t i) {
      int64_t r = i / kw % kh, c = i % kw;
      return r >= crop.lo[0] && r < crop.hi[0] && c >= crop.lo[1] &&
             c < crop.hi[1];
    };
    auto w = randomVector(cc.w.numElements(), 41);
    std::vector<float> wc(crop.wShape.numElements(), -1.0f);
    cropWeight(w.data(), cc.w, crop, wc.data());
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t r = 0; r < ch; ++r)
        for (int64_t c = 0; c < cw; ++c)
          ASSERT_EQ(wc[(p * ch + r) * cw + c],
                    w[(p * kh + crop.lo[0] + r) * kw + crop.lo[1] + c])
              << "plane " << p;
    std::vector<float> dw(w.size(), 7.0f);
    uncropWeight(wc.data(), crop, dw.data(), cc.w);
    std::vector<float> updated = w;
    addCroppedWeight(wc.data(), -0.5f, crop, updated.data(), cc.w);
    for (size_t i = 0; i < w.size(); ++i) {
      ASSERT_EQ(dw[i], live(i) ? w[i] : 0.0f) << "at " << i;
      ASSERT_EQ(updated[i], live(i) ? w[i] + -0.5f * w[i] : w[i]) << "at " << i;
    }
  }
}

/// The forward pass and the input gradient of `cc` on weight `plain`
/// without a copy of its live taps and on `cached` through `cache`:
/// bitwise equal results.
void expectSamePasses(const ConvCase &cc, const std::vector<float> &x,
                      const std::vector<float> &dy,
                      const std::vector<float> &plain,
                      const std::vector<float> &cached, CroppedWeight &cache,
                      int step) {
  std::vector<float> y0(cc.y.numElements()), y1(cc.y.numElements());
  std::vector<float> dx0(cc.x.numElements()), dx1(cc.x.numElements());
  conv(x.data(), cc.x, plain.data(), cc.w, nullptr, cc.strides.data(),
       cc.pads.data(), cc.dilations.data(), 1, y0.data(), cc.y);
  conv(x.data(), cc.x, cached.data(), cc.w, nullptr, cc.strides.data(),
       cc.pads.data(), cc.dilations.data(), 1, y1.data(), cc.y, cache);
  ASSERT_EQ(y0, y1) << "step " << step;
  convGradInput(dy.data(), cc.y, plain.data(), cc.w, cc.strides.data(),
                cc.pads.data(), cc.dilations.data(), 1, dx0.data(), cc.x);
  convGradInput(dy.data(), cc.y, cached.data(), cc.w, cc.strides.data(),
                cc.pads.data(), cc.dilations.data(), 1, dx1.data(), cc.x,
                cache);
  ASSERT_EQ(dx0, dx1) << "step " << step;
}

/// A 3x3 convolution of 32 -> 24 channels on 1x1 images: only the centre
/// tap is live.
const ConvCase kCentreTapOnly{{3, 32, 1, 1},
                              {24, 32, 3, 3},
                              {3, 24, 1, 1},
                              {1, 1},
                              {1, 1, 1, 1},
                              {1, 1},
                              1};

TEST(ConvolutionCrop, CachedLiveTapsStayTheWeights) {
  // Three steps of the forward pass, the input gradient and the fused SGD
  // update through a CroppedWeight, against the same calls without one:
  // every result bitwise equal; the weight itself lags until
  // syncCroppedWeights writes the updates back, and a weight written
  // outside the step (forgetCroppedWeights) is cropped again.
  ScopedThreads threads(1);
  const ConvCase &cc = kCentreTapOnly;
  auto x = randomVector(cc.x.numElements(), 51);
  auto dy = randomVector(cc.y.numElements(), 52);
  std::vector<float> plain = randomVector(cc.w.numElements(), 53);
  std::vector<float> cached = plain;
  CroppedWeight cache;
  for (int step = 0; step < 3; ++step) {
    ASSERT_NO_FATAL_FAILURE(
        expectSamePasses(cc, x, dy, plain, cached, cache, step));
    std::vector<float> before = cached;
    convGradWeightSgd(dy.data(), cc.y, x.data(), cc.x, cc.strides.data(),
                      cc.pads.data(), cc.dilations.data(), 1, 0.5f,
                      plain.data(), cc.w);
    convGradWeightSgd(dy.data(), cc.y, x.data(), cc.x, cc.strides.data(),
                      cc.pads.data(), cc.dilations.data(), 1, 0.5f,
                      cached.data(), cc.w, &cache);
    ASSERT_TRUE(cache.ahead);
    ASSERT_EQ(cached, before) << "the update went to the weight";
  }
  syncCroppedWeights();
  EXPECT_FALSE(cache.ahead);
  EXPECT_EQ(cached, plain);
  // Written outside the step: the next pass reads the new values.
  std::vector<float> y0(cc.y.numElements()), y1(cc.y.numElements());
  for (float &v : cached)
    v *= 2.0f;
  plain = cached;
  forgetCroppedWeights();
  conv(x.data(), cc.x, plain.data(), cc.w, nullptr, cc.strides.data(),
       cc.pads.data(), cc.dilations.data(), 1, y0.data(), cc.y);
  conv(x.data(), cc.x, cached.data(), cc.w, nullptr, cc.strides.data(),
       cc.pads.data(), cc.dilations.data(), 1, y1.data(), cc.y, cache);
  EXPECT_EQ(y0, y1);
}

TEST(ConvolutionCrop, LiveTapUpdateIsTheWholeUpdate) {
  // The update after a data-parallel sum of the live taps' gradient:
  // sgdLiveTaps against sliceGrad into the whole kernel and sgdUpdate,
  // bitwise, for the 2x2 live taps of a 3x3 kernel on a 2x2 image with
  // stride 2, with and without a copy of the live taps that the forward
  // pass made (the update then goes to the copy until the sync).
  ScopedThreads threads(1);
  const ConvCase cc{{2, 16, 2, 2},
                    {8, 16, 3, 3},
                    {2, 8, 1, 1},
                    {2, 2},
                    {1, 1, 1, 1},
                    {1, 1},
                    1};
  Shape tapsShape{8, 16, 2, 2};
  const int64_t offsets[] = {0, 0, 1, 1}, unit[] = {1, 1, 1, 1};
  auto x = randomVector(cc.x.numElements(), 71);
  auto taps = randomVector(tapsShape.numElements(), 72);
  std::vector<float> whole = randomVector(cc.w.numElements(), 73);
  std::vector<float> live = whole, cached = whole;
  std::vector<float> grad(cc.w.numElements()), y(cc.y.numElements());
  CroppedWeight cache;
  for (int step = 0; step < 2; ++step) {
    sliceGrad(taps.data(), tapsShape, offsets, unit, grad.data(), cc.w);
    sgdUpdate(whole.data(), grad.data(), nullptr, cc.w.numElements(), 0.25f,
              0.0f, 0.0f, false, 0.0f, step);
    sgdLiveTaps(taps.data(), tapsShape, offsets, 0.25f, live.data(), cc.w);
    EXPECT_EQ(live, whole) << "step " << step;
    conv(x.data(), cc.x, cached.data(), cc.w, nullptr, cc.strides.data(),
         cc.pads.data(), cc.dilations.data(), 1, y.data(), cc.y, cache);
    sgdLiveTaps(taps.data(), tapsShape, offsets, 0.25f, cached.data(), cc.w,
                &cache);
    EXPECT_TRUE(cache.ahead) << "step " << step;
  }
  syncCroppedWeights();
  EXPECT_EQ(cached, whole);
}

TEST(ConvolutionCrop, LiveTapUpdateWithMomentumAndDecayIsTheWholeUpdate) {
  // sgdUpdateLiveTaps against sliceGrad into the whole kernel and
  // sgdUpdate, bitwise, over three steps (the first sets the buffer), for
  // momentum with and without Nesterov and dampening, weight decay alone,
  // and both: decay and momentum step the dead taps too. The buffer starts
  // nonzero at the dead taps (a state loaded from another run).
  ScopedThreads threads(2);
  const Shape wShape{8, 16, 3, 3}, tapsShape{8, 16, 2, 2};
  const int64_t offsets[] = {0, 0, 1, 1}, unit[] = {1, 1, 1, 1};
  struct Options {
    float momentum, dampening, weightDecay;
    bool nesterov;
  };
  for (Options o :
       {Options{0.9f, 0.0f, 0.0f, false}, Options{0.9f, 0.0f, 1e-2f, true},
        Options{0.5f, 0.25f, 1e-2f, false},
        Options{0.0f, 0.0f, 1e-2f, false}}) {
    std::vector<float> whole = randomVector(wShape.numElements(), 81);
    std::vector<float> live = whole;
    std::vector<float> wholeBuffer = randomVector(wShape.numElements(), 82);
    std::vector<float> liveBuffer = wholeBuffer;
    std::vector<float> grad(wShape.numElements());
    float *wholeBuf = o.momentum != 0.0f ? wholeBuffer.data() : nullptr;
    float *liveBuf = o.momentum != 0.0f ? liveBuffer.data() : nullptr;
    for (int step = 0; step < 3; ++step) {
      auto taps = randomVector(tapsShape.numElements(), 83 + step);
      sliceGrad(taps.data(), tapsShape, offsets, unit, grad.data(), wShape);
      sgdUpdate(whole.data(), grad.data(), wholeBuf, wShape.numElements(),
                0.25f, o.momentum, o.dampening, o.nesterov, o.weightDecay,
                step);
      sgdUpdateLiveTaps(taps.data(), tapsShape, offsets, live.data(), wShape,
                        liveBuf, 0.25f, o.momentum, o.dampening, o.nesterov,
                        o.weightDecay, step);
      EXPECT_EQ(live, whole) << "momentum " << o.momentum << " step " << step;
      EXPECT_EQ(liveBuffer, wholeBuffer)
          << "momentum " << o.momentum << " step " << step;
    }
  }
}

TEST(ConvolutionCrop, StaleCopyIsCroppedAgain) {
  // A weight an unfused update writes (momentum, or after an all-reduce):
  // the forward pass and the input gradient of each step share one copy of
  // its live taps, which staleCroppedWeight drops at the step's end. Three
  // steps against the same calls without a copy: every result bitwise
  // equal, with the weight changed between steps.
  ScopedThreads threads(1);
  const ConvCase &cc = kCentreTapOnly;
  auto x = randomVector(cc.x.numElements(), 61);
  auto dy = randomVector(cc.y.numElements(), 62);
  std::vector<float> w = randomVector(cc.w.numElements(), 63);
  CroppedWeight cache;
  for (int step = 0; step < 3; ++step) {
    ASSERT_NO_FATAL_FAILURE(expectSamePasses(cc, x, dy, w, w, cache, step));
    EXPECT_FALSE(cache.ahead);
    // The update, in place, then the end of the step.
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = 0.9f * w[i] + 0.01f * float(i % 7);
    staleCroppedWeight(cache);
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  Shape x, y;
  std::vector<int64_t> kernel, strides, pads, dilations;
};

/// Max over in-bounds window positions.
std::vector<float> directMaxPool(const PoolCase &pc,
                                 const std::vector<float> &x) {
  int sp = pc.x.rank - 2;
  Shape xs = spatialOf(pc.x), ys = spatialOf(pc.y), ks;
  ks.rank = sp;
  for (int d = 0; d < sp; ++d)
    ks.dims[d] = pc.kernel[d];
  int64_t planes = pc.x[0] * pc.x[1];
  std::vector<float> y(pc.y.numElements());
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t of = 0; of < ys.numElements(); ++of) {
      int64_t o[3], k[3], in[3];
      unflatten(ys, of, o);
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t kf = 0; kf < ks.numElements(); ++kf) {
        unflatten(ks, kf, k);
        bool inside = true;
        for (int d = 0; d < sp; ++d) {
          in[d] = o[d] * pc.strides[d] - pc.pads[d] + k[d] * pc.dilations[d];
          inside = inside && in[d] >= 0 && in[d] < xs.dims[d];
        }
        if (inside)
          best = std::max(best, x[p * xs.numElements() + flatIndex(xs, in)]);
      }
      y[p * ys.numElements() + of] = best;
    }
  return y;
}

void runMaxPool(const PoolCase &pc, const std::vector<float> &x,
                std::vector<float> &y) {
  y.assign(pc.y.numElements(), -99.0f);
  maxPool(x.data(), pc.x, pc.kernel.data(), pc.strides.data(), pc.pads.data(),
          pc.dilations.data(), y.data(), pc.y);
}

void checkMaxPool(const PoolCase &pc) {
  auto x = distinctVector(pc.x.numElements(), 1);
  std::vector<float> y;
  runMaxPool(pc, x, y);
  EXPECT_EQ(y, directMaxPool(pc, x));
  auto r = randomVector(pc.y.numElements(), 2);
  std::vector<float> dx(x.size(), 7.0f);
  maxPoolGrad(r.data(), pc.y, x.data(), pc.x, pc.kernel.data(),
              pc.strides.data(), pc.pads.data(), pc.dilations.data(),
              dx.data());
  // Values are 0.1 apart, so the 0.01 steps never change an argmax.
  expectGradient(x, dx, [&] {
    std::vector<float> yy;
    runMaxPool(pc, x, yy);
    return dot(yy, r);
  });
}

TEST(Pooling, MaxPoolHandValues) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = static_cast<float>(i);
  PoolCase pc{{1, 1, 4, 4}, {1, 1, 2, 2}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}};
  std::vector<float> y;
  runMaxPool(pc, x, y);
  EXPECT_EQ(y, (std::vector<float>{5, 7, 13, 15}));
  // Padding never wins even when every input is negative.
  for (float &v : x)
    v = -v - 1.0f;
  PoolCase padded{{1, 1, 4, 4}, {1, 1, 3, 3}, {2, 2},
                  {2, 2},       {1, 1, 1, 1}, {1, 1}};
  runMaxPool(padded, x, y);
  EXPECT_EQ(y, (std::vector<float>{-1, -2, -4, -5, -6, -8, -13, -14, -16}));
}

TEST(Pooling, MaxPoolAgainstDirect) {
  // 2-d, overlapping windows, asymmetric padding, ceil-mode output size
  // ((7 + 1 + 0 - 3) / 2 = 2.5 -> 4 with ceil, the last window clipped).
  checkMaxPool(
      {{2, 3, 7, 6}, {2, 3, 4, 3}, {3, 2}, {2, 2}, {1, 0, 0, 1}, {1, 1}});
  // Dilation 2, stride 1.
  checkMaxPool(
      {{1, 2, 7, 7}, {1, 2, 5, 3}, {2, 3}, {1, 1}, {1, 0, 0, 0}, {2, 2}});
  // Rows exactly out * stride long (one loop over all rows per tap):
  // 2x2 stride 2, and 3x3 stride 2 with its first tap in the padding.
  checkMaxPool(
      {{2, 3, 8, 6}, {2, 3, 4, 3}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}});
  checkMaxPool(
      {{2, 3, 8, 6}, {2, 3, 4, 3}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}});
  // 1-d and 3-d.
  checkMaxPool({{2, 2, 9}, {2, 2, 4}, {3}, {2}, {0, 0}, {1}});
  checkMaxPool({{1, 2, 4, 5, 3},
                {1, 2, 2, 3, 2},
                {2, 2, 2},
                {2, 2, 1},
                {0, 0, 0, 0, 1, 0},
                {1, 1, 1}});
}

TEST(Pooling, MaxPoolGradRoutesToFirstArgmax) {
  // Ties: the whole window is equal; dy goes to its first element only.
  std::vector<float> x(4, 1.0f), dy = {2.0f}, dx(4);
  int64_t kernel[2] = {2, 2}, strides[2] = {2, 2}, pads[4] = {0, 0, 0, 0},
          dil[2] = {1, 1};
  maxPoolGrad(dy.data(), Shape{1, 1, 1, 1}, x.data(), Shape{1, 1, 2, 2}, kernel,
              strides, pads, dil, dx.data());
  EXPECT_EQ(dx, (std::vector<float>{2, 0, 0, 0}));
}

/// The row-major scan of each window, as PyTorch's CPU kernel makes it:
/// forward, the first largest value (-0 before +0 keeps -0) or a NaN;
/// backward, dy to the first largest value's position, or the first NaN's.
void scanMaxPool(const PoolCase &pc, const std::vector<float> &x,
                 const std::vector<float> &dy, std::vector<float> &y,
                 std::vector<float> &dx) {
  int sp = pc.x.rank - 2;
  Shape xs = spatialOf(pc.x), ys = spatialOf(pc.y), ks;
  ks.rank = sp;
  for (int d = 0; d < sp; ++d)
    ks.dims[d] = pc.kernel[d];
  int64_t planes = pc.x[0] * pc.x[1];
  y.assign(pc.y.numElements(), 0.0f);
  dx.assign(x.size(), 0.0f);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t of = 0; of < ys.numElements(); ++of) {
      int64_t o[3], k[3], in[3];
      unflatten(ys, of, o);
      float best = -std::numeric_limits<float>::infinity(), value = best;
      int64_t arg = -1;
      for (int64_t kf = 0; kf < ks.numElements(); ++kf) {
        unflatten(ks, kf, k);
        bool inside = true;
        for (int d = 0; d < sp; ++d) {
          in[d] = o[d] * pc.strides[d] - pc.pads[d] + k[d] * pc.dilations[d];
          inside = inside && in[d] >= 0 && in[d] < xs.dims[d];
        }
        if (!inside)
          continue;
        int64_t i = p * xs.numElements() + flatIndex(xs, in);
        float v = x[i];
        if (v > value || std::isnan(v))
          value = v;
        if (arg < 0 || (!std::isnan(best) && (std::isnan(v) || v > best))) {
          best = v;
          arg = i;
        }
      }
      y[p * ys.numElements() + of] = value;
      if (arg >= 0)
        dx[arg] += dy[p * ys.numElements() + of];
    }
}

TEST(Pooling, MaxPoolTiesZerosAndNaNs) {
  // Windows full of ties: inputs from {-1, -0, +0, 1}, and a NaN in some
  // planes, on shapes that take every path: one loop over all rows (2x2
  // stride 2; 3x3 stride 2 with a padded first tap), rows one at a time
  // (25 is not 12 * 2), stride 1, dilation, 1-d, on 1 and 2 threads. The
  // forward pass bitwise (the sign of each zero), the gradient exactly.
  const PoolCase cases[] = {
      {{2, 3, 24, 24}, {2, 3, 12, 12}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {{2, 3, 16, 16}, {2, 3, 8, 8}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {{1, 2, 25, 25}, {1, 2, 12, 12}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {{1, 2, 20, 20}, {1, 2, 20, 20}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{1, 2, 20, 21}, {1, 2, 18, 17}, {2, 3}, {1, 1}, {0, 0, 0, 0}, {2, 2}},
      {{2, 2, 50}, {2, 2, 25}, {3}, {2}, {1, 1}, {1}},
  };
  const float values[] = {-1.0f, -0.0f, 0.0f, 1.0f};
  for (int threads : {1, 2}) {
    ScopedThreads scoped(threads);
    for (const PoolCase &pc : cases) {
      std::vector<float> x(pc.x.numElements());
      uint32_t state = 12345;
      for (float &v : x) {
        state = state * 1664525u + 1013904223u;
        v = values[state >> 30];
      }
      int64_t plane = x.size() / (pc.x[0] * pc.x[1]);
      x[plane / 3] = std::numeric_limits<float>::quiet_NaN();
      x[plane + plane / 2] = std::numeric_limits<float>::quiet_NaN();
      x[plane + plane / 2 + 1] = std::numeric_limits<float>::quiet_NaN();
      auto dy = randomVector(pc.y.numElements(), 3);
      std::vector<float> y, dx(x.size(), 7.0f), wantY, wantDx;
      scanMaxPool(pc, x, dy, wantY, wantDx);
      runMaxPool(pc, x, y);
      maxPoolGrad(dy.data(), pc.y, x.data(), pc.x, pc.kernel.data(),
                  pc.strides.data(), pc.pads.data(), pc.dilations.data(),
                  dx.data());
      std::string where = std::to_string(&pc - cases) + "th case, " +
                          std::to_string(threads) + " thread(s)";
      int64_t wrong = 0;
      for (size_t i = 0; i < y.size(); ++i)
        wrong += std::isnan(wantY[i])
                     ? !std::isnan(y[i])
                     : std::memcmp(&y[i], &wantY[i], sizeof(float)) != 0;
      EXPECT_EQ(wrong, 0) << where;
      EXPECT_EQ(dx, wantDx) << where;
    }
  }
}

/// [1, 2, 3, 4, 5, 6] with kernel 3, stride 2, pads 1/1, ceil mode (4
/// outputs; the last window [5, 8) reaches past the padded extent [-1, 7)).
TEST(Pooling, AvgPoolDivisors) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(4);
  int64_t kernel[1] = {3}, strides[1] = {2}, pads[2] = {1, 1};
  avgPool(x.data(), Shape{1, 1, 6}, kernel, strides, pads, true, y.data(),
          Shape{1, 1, 4});
  // Divisors 3, 3, 3 and 2 (window clipped to the padded extent).
  EXPECT_EQ(y, (std::vector<float>{1, 3, 5, 3}));
  avgPool(x.data(), Shape{1, 1, 6}, kernel, strides, pads, false, y.data(),
          Shape{1, 1, 4});
  // Divisors 2, 3, 3 and 1 (in-bounds elements).
  EXPECT_EQ(y, (std::vector<float>{1.5f, 3, 5, 6}));
}

TEST(Pooling, AvgPool2dHandValues) {
  // 3x3 arange, kernel 2, stride 1, pad 1 at the end of both dims.
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 8}, y(9);
  int64_t kernel[2] = {2, 2}, strides[2] = {1, 1}, pads[4] = {0, 0, 1, 1};
  avgPool(x.data(), Shape{1, 1, 3, 3}, kernel, strides, pads, false, y.data(),
          Shape{1, 1, 3, 3});
  EXPECT_EQ(y, (std::vector<float>{2, 3, 3.5f, 5, 6, 6.5f, 6.5f, 7.5f, 8}));
  avgPool(x.data(), Shape{1, 1, 3, 3}, kernel, strides, pads, true, y.data(),
          Shape{1, 1, 3, 3});
  EXPECT_EQ(y, (std::vector<float>{2, 3, 1.75f, 5, 6, 3.25f, 3.25f, 3.75f, 2}));
}

TEST(Pooling, AvgPoolGradMatchesDifferences) {
  struct Case {
    Shape x, y;
    std::vector<int64_t> kernel, strides, pads;
  };
  std::vector<Case> cases = {
      {{2, 2, 6, 5}, {2, 2, 4, 3}, {3, 2}, {2, 2}, {1, 0, 1, 1}},
      {{1, 2, 6}, {1, 2, 4}, {3}, {2}, {1, 1}},
      {{1, 1, 3, 4, 3},
       {1, 1, 2, 3, 2},
       {2, 2, 2},
       {2, 1, 2},
       {0, 0, 1, 1, 0, 1}}};
  for (const Case &c : cases)
    for (bool includePad : {false, true}) {
      auto x = randomVector(c.x.numElements(), 8);
      auto r = randomVector(c.y.numElements(), 9);
      std::vector<float> dx(x.size(), 7.0f);
      avgPoolGrad(r.data(), c.y, c.kernel.data(), c.strides.data(),
                  c.pads.data(), includePad, dx.data(), c.x);
      expectGradient(x, dx, [&] {
        std::vector<float> y(c.y.numElements());
        avgPool(x.data(), c.x, c.kernel.data(), c.strides.data(), c.pads.data(),
                includePad, y.data(), c.y);
        return dot(y, r);
      });
    }
}

} // namespace
