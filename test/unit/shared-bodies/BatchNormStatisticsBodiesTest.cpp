//===- BatchNormStatisticsBodiesTest.cpp - a split batch's BatchNorm sums -===//
//
// The kernels of a BatchNorm whose batch is split over ranks
// (batchNormSum, batchNormSquaredDeviationSum, batchNormGradSums,
// batchNormGradFromSums): the cpu target's against sums taken in long
// double, the cuda target's work items (NormalizationBodies.h, run on the
// host) against the cpu target's, and the whole chain on a batch cut into
// parts (each part a rank, their sums added as the all-reduce adds them)
// against batchNorm and batchNormGrad of the whole batch. Tolerances: 1e-6
// relative for sums in double rounded once to float; 1e-5 relative plus
// 1e-6 absolute elsewhere, as RowBodiesTest (float rounding of the
// statistics, fused multiply-adds in the -march=native runtime).
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernels.h"
#include "runtime/NormalizationBodies.h"

#include "test/unit/runtime/RuntimeTestUtil.h"
#include "test/unit/shared-bodies/RunOnHost.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace cleave::rt::test {
namespace {

using namespace cleave::body;

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-6;

std::vector<Shape> shapes() {
  // Planes of 5, 4, 1 and 6 elements; a row longer than the cpu kernel's
  // block of 512 positions (20 channels of 64); planes of 300, which the
  // cpu kernels walk plane by plane (kPlanePositions).
  return {{4, 3, 5},       {2, 3, 2, 2},  {6, 4},
          {1, 2, 3, 1, 2}, {3, 20, 8, 8}, {3, 5, 15, 20}};
}

/// Per channel: sum of f(element index, channel) over the channel's
/// elements, in long double.
template <typename F>
std::vector<long double> channelSums(const Shape &shape, F f) {
  ChannelView view(shape);
  std::vector<long double> sums(view.channels, 0.0L);
  for (int64_t e = 0; e < view.elements(); ++e)
    sums[view.channelOf(e)] += f(e, view.channelOf(e));
  return sums;
}

void expectSums(const std::vector<float> &got,
                const std::vector<long double> &want, double rtol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t c = 0; c < got.size(); ++c)
    EXPECT_NEAR(got[c], static_cast<double>(want[c]),
                1e-7 + rtol * std::fabs(static_cast<double>(want[c])))
        << "channel " << c;
}

TEST(BatchNormStatisticsBodies, SumsMatchFormulasAndCpu) {
  uint32_t seed = 300;
  for (const Shape &shape : shapes()) {
    SCOPED_TRACE(testing::Message() << "rank " << shape.rank << " elements "
                                    << shape.numElements());
    ChannelView view(shape);
    int64_t n = shape.numElements(), ch = view.channels;
    // An offset mean, where a one-pass sum of squares would cancel.
    auto x = randomVector(n, seed++, 99.0f, 101.0f);
    auto dy = randomVector(n, seed++);
    auto mean = randomVector(ch, seed++, 99.5f, 100.5f);
    double divisor = 3.0 * view.n * view.s;

    std::vector<float> sum(ch), dev(ch), sumDy(ch), sumDyC(ch);
    batchNormSum(x.data(), shape, divisor, sum.data());
    batchNormSquaredDeviationSum(x.data(), shape, mean.data(), divisor,
                                 dev.data());
    batchNormGradSums(dy.data(), x.data(), shape, mean.data(), sumDy.data(),
                      sumDyC.data());
    auto over = [&](std::vector<long double> v) {
      for (long double &s : v)
        s /= divisor;
      return v;
    };
    expectSums(
        sum,
        over(channelSums(
            shape, [&](int64_t e, int64_t) { return (long double)x[e]; })),
        1e-6);
    expectSums(dev,
               over(channelSums(shape,
                                [&](int64_t e, int64_t c) {
                                  long double d = (long double)x[e] - mean[c];
                                  return d * d;
                                })),
               1e-6);
    expectSums(sumDy,
               channelSums(shape, [&](int64_t e,
                                      int64_t) { return (long double)dy[e]; }),
               1e-6);
    // The sum of dy * (x - mean) cancels (dy has either sign): its bound
    // is relative to the sum of the absolute terms.
    auto scaleOf = channelSums(shape, [&](int64_t e, int64_t c) {
      return std::fabs((long double)dy[e] * ((long double)x[e] - mean[c]));
    });
    auto centered = channelSums(shape, [&](int64_t e, int64_t c) {
      return (long double)dy[e] * ((long double)x[e] - mean[c]);
    });
    for (int64_t c = 0; c < ch; ++c)
      EXPECT_NEAR(sumDyC[c], static_cast<double>(centered[c]),
                  1e-6 * static_cast<double>(scaleOf[c]) + 1e-7)
          << "channel " << c;

    // The cuda target's items give the cpu kernels' sums.
    std::vector<float> gotSum(ch), gotDev(ch), gotDy(ch), gotDyC(ch);
    runOnHost(ch, BatchNormSumChannel{x.data(), nullptr, gotSum.data(), view,
                                      divisor});
    runOnHost(ch, BatchNormSumChannel{x.data(), mean.data(), gotDev.data(),
                                      view, divisor});
    runOnHost(ch, BatchNormGradSumsChannel{dy.data(), x.data(), mean.data(),
                                           gotDy.data(), gotDyC.data(), view});
    expectSame(gotSum, sum, 1e-6, 0.0);
    expectSame(gotDev, dev, 1e-6, 0.0);
    expectSame(gotDy, sumDy, 1e-6, 1e-7);
    expectSame(gotDyC, sumDyC, 1e-6, 1e-6);
  }
}

/// Rows [first, first + count) of a [N, ...] tensor of `shape`.
std::vector<float> rowsOf(const std::vector<float> &t, const Shape &shape,
                          int64_t first, int64_t count) {
  int64_t row = shape.numElements() / shape.dims[0];
  return std::vector<float>(t.begin() + first * row,
                            t.begin() + (first + count) * row);
}

TEST(BatchNormStatisticsBodies, SplitBatchMatchesWholeBatch) {
  uint32_t seed = 400;
  for (int parts : {2, 3}) {
    for (Shape shape : shapes()) {
      shape.dims[0] = 2 * parts;
      SCOPED_TRACE(testing::Message() << parts << " parts of " << shape.rank
                                      << "-d " << shape.numElements());
      ChannelView view(shape);
      int64_t n = shape.numElements(), ch = view.channels;
      auto x = randomVector(n, seed++, -1.0f, 3.0f);
      auto dy = randomVector(n, seed++);
      auto scale = randomVector(ch, seed++, 0.5f, 1.5f);
      auto bias = randomVector(ch, seed++);
      auto runMean = randomVector(ch, seed++);
      auto runVar = randomVector(ch, seed++, 0.5f, 2.0f);
      const float eps = 1e-5f, momentum = 0.9f;

      std::vector<float> wantY(n), wantMean(ch), wantVar(ch), wantDx(n),
          wantDScale(ch), wantDBias(ch);
      batchNorm(x.data(), shape, scale.data(), bias.data(), runMean.data(),
                runVar.data(), eps, momentum, true, wantY.data(),
                wantMean.data(), wantVar.data());
      batchNormGrad(dy.data(), x.data(), shape, scale.data(), eps,
                    wantDx.data(), wantDScale.data(), wantDBias.data());

      // Each part's sums, added in float as the all-reduce adds them.
      Shape part = shape;
      part.dims[0] = 2;
      double count = static_cast<double>(view.n * view.s);
      std::vector<std::vector<float>> xs, dys;
      for (int p = 0; p < parts; ++p) {
        xs.push_back(rowsOf(x, shape, 2 * p, 2));
        dys.push_back(rowsOf(dy, shape, 2 * p, 2));
      }
      auto allReduce = [&](auto each) {
        std::vector<float> total(ch, 0.0f), one(ch);
        for (int p = 0; p < parts; ++p) {
          each(p, one.data());
          for (int64_t c = 0; c < ch; ++c)
            total[c] += one[c];
        }
        return total;
      };
      auto mean = allReduce([&](int p, float *out) {
        batchNormSum(xs[p].data(), part, count, out);
      });
      auto var = allReduce([&](int p, float *out) {
        batchNormSquaredDeviationSum(xs[p].data(), part, mean.data(), count,
                                     out);
      });
      std::vector<float> partCentered(ch);
      auto sumDy = allReduce([&](int p, float *out) {
        batchNormGradSums(dys[p].data(), xs[p].data(), part, mean.data(), out,
                          partCentered.data());
      });
      auto sumDyC = allReduce([&](int p, float *out) {
        std::vector<float> partDy(ch);
        batchNormGradSums(dys[p].data(), xs[p].data(), part, mean.data(),
                          partDy.data(), out);
      });

      std::vector<float> gotY, gotDx, gotMean(ch), gotVar(ch), gotDScale(ch),
          gotDBias(ch), itemDx, itemDScale(ch), itemDBias(ch);
      ChannelView partView(part);
      for (int p = 0; p < parts; ++p) {
        int64_t m = part.numElements();
        std::vector<float> y(m), dx(m), dxItems(m);
        batchNorm(xs[p].data(), part, scale.data(), bias.data(), runMean.data(),
                  runVar.data(), eps, momentum, true, y.data(), gotMean.data(),
                  gotVar.data(), mean.data(), var.data());
        batchNormGradFromSums(dys[p].data(), xs[p].data(), part, scale.data(),
                              mean.data(), var.data(), sumDy.data(),
                              sumDyC.data(), count, eps, dx.data(),
                              gotDScale.data(), gotDBias.data());
        gotY.insert(gotY.end(), y.begin(), y.end());
        gotDx.insert(gotDx.end(), dx.begin(), dx.end());
        // The cuda target's items on the same sums.
        std::vector<float> coef(kBatchNormGradCoefs * ch);
        BatchNormGradChannel channel{
            dys[p].data(),    xs[p].data(), scale.data(), itemDScale.data(),
            itemDBias.data(), coef.data(),  partView,     eps};
        channel.batchMean = mean.data();
        channel.batchVar = var.data();
        channel.batchSumDy = sumDy.data();
        channel.batchSumDyCentered = sumDyC.data();
        channel.batchCount = count;
        runOnHost(ch, channel);
        runOnHost(partView.elements(),
                  BatchNormGradApply{dys[p].data(), xs[p].data(), coef.data(),
                                     dxItems.data(), partView});
        itemDx.insert(itemDx.end(), dxItems.begin(), dxItems.end());
      }
      expectSame(gotY, wantY, kRtol, kAtol);
      expectSame(gotMean, wantMean, kRtol, kAtol);
      expectSame(gotVar, wantVar, kRtol, kAtol);
      expectSame(gotDx, wantDx, kRtol, kAtol);
      expectSame(gotDScale, wantDScale, kRtol, kAtol);
      expectSame(gotDBias, wantDBias, kRtol, kAtol);
      expectSame(itemDx, gotDx, kRtol, kAtol);
      expectSame(itemDScale, gotDScale, kRtol, kAtol);
      expectSame(itemDBias, gotDBias, kRtol, kAtol);
    }
  }
}

} // namespace
} // namespace cleave::rt::test
