//===- RowBodiesTest.cpp - row, reduction and training work items ---------===//
//
// Runs the work items of NormalizationBodies.h, ReductionBodies.h,
// LossBodies.h and TrainingBodies.h on the host, as the cuda kernels launch
// them (phase after phase), and compares the results with the cpu target's
// kernels on small random inputs. The cpu kernels run the same items, cut
// into other units (rows of 64 reduction outputs, planes, samples) and
// splits, so the two agree to rounding; the tolerance, 1e-5 relative plus
// 1e-6 absolute, leaves room for the cpu runtime being built with
// -march=native (fused multiply-adds) and this test not.
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernels.h"
#include "runtime/LossBodies.h"
#include "runtime/NormalizationBodies.h"
#include "runtime/ReductionBodies.h"
#include "runtime/TrainingBodies.h"

#include "test/unit/runtime/RuntimeTestUtil.h"
#include "test/unit/shared-bodies/HangGuard.h"
#include "test/unit/shared-bodies/RunOnHost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace cleave::rt::test {
namespace {

using namespace cleave::body;

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-6;

void expectClose(const std::vector<float> &got,
                 const std::vector<float> &want) {
  expectSame(got, want, kRtol, kAtol);
}

/// expectClose where NaN and infinities (a max over NaN, an empty max or
/// mean) must match exactly.
void expectCloseNonFinite(std::vector<float> got, std::vector<float> want,
                          const char *what = "") {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isfinite(want[i]))
      continue;
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i];
    else
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    got[i] = want[i] = 0.0f;
  }
  expectClose(got, want);
}

/// A tensor shape with the axis (or axes) a case works along.
struct AxisCase {
  Shape shape;
  int axis;
};

std::vector<AxisCase> softmaxCases() {
  // Last, middle, first and negative axes; a size-1 line; long lines of
  // 300, along the last axis and strided.
  return {{{5, 7}, -1},    {{2, 5, 3}, 1},   {{3, 4, 2, 2}, 0}, {{4, 1, 6}, 1},
          {{2, 3, 4}, -2}, {{2, 3, 300}, 1}, {{3, 300}, 1}};
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

TEST(RowBodies, SoftmaxLineMatchesCpu) {
  uint32_t seed = 1;
  for (const AxisCase &c : softmaxCases())
    for (bool log : {false, true}) {
      SCOPED_TRACE(testing::Message() << "axis " << c.axis << " log " << log);
      int64_t n = c.shape.numElements();
      // Wide enough that exp would overflow without the max shift.
      auto x = randomVector(n, seed++, -60.0f, 60.0f);
      std::vector<float> want(n), got(n);
      softmax(x.data(), c.shape, c.axis, log, want.data());
      AxisView view(c.shape, c.axis);
      runOnHost(view.lines(), SoftmaxLine{x.data(), got.data(), view, log});
      expectClose(got, want);
    }
}

TEST(RowBodies, SoftmaxGradLineMatchesCpu) {
  uint32_t seed = 20;
  for (const AxisCase &c : softmaxCases())
    for (bool log : {false, true}) {
      SCOPED_TRACE(testing::Message() << "axis " << c.axis << " log " << log);
      int64_t n = c.shape.numElements();
      auto x = randomVector(n, seed++, -3.0f, 3.0f);
      auto dy = randomVector(n, seed++);
      std::vector<float> y(n), want(n), got(n);
      softmax(x.data(), c.shape, c.axis, log, y.data());
      softmaxGrad(y.data(), dy.data(), c.shape, c.axis, log, want.data());
      AxisView view(c.shape, c.axis);
      runOnHost(view.lines(),
                SoftmaxGradLine{y.data(), dy.data(), got.data(), view, log});
      expectClose(got, want);
    }
}

/// Attention's masked softmax and its gradient as the cuda target launches
/// them (one MaskedSoftmaxLine per line) against the cpu kernels, which
/// take other paths for short lines: a causal where-mask with a -inf fill,
/// an additive padding mask with a division, a strided axis.
TEST(RowBodies, MaskedSoftmaxLinesMatchCpu) {
  struct Case {
    Shape shape;
    int axis;
    Shape maskShape;
    bool additive;
  };
  uint32_t seed = 30;
  for (const Case &c : std::vector<Case>{{{2, 3, 6, 6}, 3, {1, 1, 6, 6}, false},
                                         {{3, 5, 40}, -1, {3, 1, 40}, true},
                                         {{2, 4, 3}, 1, {2, 1, 3}, false}})
    for (bool log : {false, true}) {
      SCOPED_TRACE(testing::Message() << "axis " << c.axis << " log " << log);
      int64_t n = c.shape.numElements(), m = c.maskShape.numElements();
      auto x = randomVector(n, seed++, -5.0f, 5.0f);
      auto dy = randomVector(n, seed++);
      auto noise = randomVector(m, seed++);
      std::vector<float> additive(m);
      std::unique_ptr<bool[]> condition(new bool[m]);
      for (int64_t i = 0; i < m; ++i) {
        additive[i] = noise[i] > 0.4f ? -1e4f : noise[i];
        // Every line keeps its first element: no all-masked (NaN) line.
        condition[i] =
            noise[i] > -0.2f || i % c.maskShape.dims[c.maskShape.rank - 1] == 0;
      }
      const float scale = 0.4f, fill = -INFINITY, zero = 0.0f;
      SoftmaxMasking masking;
      masking.scale = &scale;
      masking.divide = c.additive;
      if (c.additive)
        masking.mask = additive.data();
      else
        masking.condition = condition.get();
      masking.fill = &fill;
      masking.maskShape = c.maskShape;
      std::vector<float> want(n), got(n);
      softmaxMasked(x.data(), c.shape, c.axis, log, masking, want.data());
      AxisView view(c.shape, c.axis);
      runOnHost(view.lines(),
                MaskedSoftmaxLine{x.data(), got.data(), view, log,
                                  LineMasking(masking, c.shape, c.axis)});
      expectCloseNonFinite(got, want);
      if (c.additive)
        continue;
      masking.fill = &zero;
      std::vector<float> y = want;
      softmaxGradMasked(y.data(), dy.data(), c.shape, c.axis, log, masking,
                        want.data());
      runOnHost(view.lines(),
                MaskedSoftmaxGradLine{y.data(), dy.data(), got.data(), view,
                                      log,
                                      LineMasking(masking, c.shape, c.axis)});
      expectCloseNonFinite(got, want);
    }
}

/// A masked softmax case against the naive reference below: the mask's (or
/// condition's) shape broadcasts to the scores' shape.
struct MaskedReferenceCase {
  Shape shape;
  int axis;
  Shape maskShape;
};

/// The flat offset in a tensor of shape `mask`, numpy-broadcast to `shape`,
/// of flat element i of `shape`: plain index arithmetic, dim by dim.
int64_t broadcastOffset(const Shape &shape, const Shape &mask, int64_t i) {
  int64_t index[kMaxRank] = {};
  for (int d = shape.rank - 1; d >= 0; --d) {
    index[d] = i % shape.dims[d];
    i /= shape.dims[d];
  }
  int64_t at = 0;
  for (int j = 0; j < mask.rank; ++j) {
    int d = j + shape.rank - mask.rank;
    at = at * mask.dims[j] + (mask.dims[j] == 1 ? 0 : index[d]);
  }
  return at;
}

/// The flat indices of each line along `axis`: all elements that differ
/// only in the axis' index, in order.
std::vector<std::vector<int64_t>> naiveLines(const Shape &shape, int axis) {
  if (axis < 0)
    axis += shape.rank;
  int64_t inner = 1;
  for (int d = axis + 1; d < shape.rank; ++d)
    inner *= shape.dims[d];
  std::vector<std::vector<int64_t>> lines;
  for (int64_t i = 0; i < shape.numElements(); ++i) {
    if (i / inner % shape.dims[axis] != 0)
      continue;
    std::vector<int64_t> line;
    for (int64_t k = 0; k < shape.dims[axis]; ++k)
      line.push_back(i + k * inner);
    lines.push_back(line);
  }
  return lines;
}

/// softmax(where(c == keepWhen, x * scale + mask, fill)) along `axis` (or
/// its log), each part only where `masking` has it, the softmax in double.
std::vector<float> naiveMaskedSoftmax(const std::vector<float> &x,
                                      const Shape &shape, int axis, bool log,
                                      const SoftmaxMasking &masking) {
  // The scale and the mask in float, as the unfused graph's Mul and Add
  // round them: a line masked by -1e4 throughout keeps only float's
  // resolution at 1e4 of its scores.
  std::vector<double> z(x.size());
  for (int64_t i = 0; i < shape.numElements(); ++i) {
    float v = x[i];
    if (masking.scale)
      v = masking.divide ? v / *masking.scale : v * *masking.scale;
    int64_t at = broadcastOffset(shape, masking.maskShape, i);
    if (masking.mask)
      v += masking.mask[at];
    if (masking.condition && masking.condition[at] != masking.keepWhen)
      v = *masking.fill;
    z[i] = v;
  }
  std::vector<float> y(x.size());
  for (const std::vector<int64_t> &line : naiveLines(shape, axis)) {
    double maxVal = -INFINITY, sum = 0.0;
    for (int64_t i : line)
      maxVal = std::max(maxVal, z[i]);
    for (int64_t i : line)
      sum += std::exp(z[i] - maxVal);
    for (int64_t i : line)
      y[i] = static_cast<float>(log ? z[i] - maxVal - std::log(sum)
                                    : std::exp(z[i] - maxVal) / sum);
  }
  return y;
}

/// softmaxGradMasked's dx: the softmax's gradient from y and dy, then
/// where(c == keepWhen, dx, fill), then the scale, in double.
std::vector<float> naiveMaskedSoftmaxGrad(const std::vector<float> &y,
                                          const std::vector<float> &dy,
                                          const Shape &shape, int axis,
                                          bool log,
                                          const SoftmaxMasking &masking) {
  std::vector<float> dx(y.size());
  for (const std::vector<int64_t> &line : naiveLines(shape, axis)) {
    double sum = 0.0;
    for (int64_t i : line)
      sum += log ? double(dy[i]) : double(dy[i]) * y[i];
    for (int64_t i : line) {
      double g = log ? dy[i] - std::exp(double(y[i])) * sum
                     : y[i] * (dy[i] - sum);
      int64_t at = broadcastOffset(shape, masking.maskShape, i);
      if (masking.condition && masking.condition[at] != masking.keepWhen)
        g = *masking.fill;
      if (masking.scale)
        g = masking.divide ? g / *masking.scale : g * *masking.scale;
      dx[i] = static_cast<float>(g);
    }
  }
  return dx;
}

/// softmaxMasked and softmaxGradMasked, the cpu kernels (line offsets
/// tabled, short lines in blocks) and the work items the cuda target
/// launches (offsets computed per line), against the naive reference, on
/// lines along inner axes (strided, the mask's step along the axis neither
/// 0 nor 1 in most) and the last: masks varying along the axis, repeated
/// along it, of lower rank, size 1 in various dims; a scale multiplied or
/// divided or none; an additive mask, a where-condition keeping on true or
/// on false with a -inf or finite fill, or both.
TEST(RowBodies, MaskedSoftmaxMatchesNaiveReference) {
  HangGuard guard("RowBodies.MaskedSoftmaxMatchesNaiveReference");
  std::vector<MaskedReferenceCase> cases = {
      {{2, 5, 3}, 1, {2, 5, 3}},       {{2, 5, 3}, 1, {5, 3}},
      {{2, 5, 3}, -2, {5, 1}},         {{2, 5, 3}, 1, {2, 1, 3}},
      {{4, 3, 2, 2}, 1, {4, 3, 2, 2}}, {{4, 3, 2, 2}, 1, {1, 3, 1, 2}},
      {{4, 3, 2, 2}, 1, {4, 1, 2, 1}}, {{4, 3, 2, 2}, 2, {3, 2, 2}},
      {{4, 3, 2, 2}, 2, {4, 1, 2, 1}}, {{4, 3, 2, 2}, 2, {1}},
      {{4, 3, 2, 2}, 0, {4, 3, 1, 2}}, {{8, 3, 2}, 1, {3, 2}},
      {{2, 40, 3}, 1, {40, 3}},        {{3, 5, 7}, -1, {5, 7}},
      {{2, 3, 40}, 2, {2, 1, 40}},     {{2, 3, 40}, 2, {3, 1}}};
  struct Variant {
    bool additive, condition, keepWhen, divide, scaled;
    float fill;
  };
  // Every combination: no scale, a product or a quotient; an additive mask
  // or not; no where, one keeping on true (a -inf fill) or on false (-3).
  std::vector<Variant> variants;
  for (int scaling = 0; scaling < 3; ++scaling)
    for (bool additive : {false, true})
      for (int select = 0; select < 3; ++select)
        variants.push_back({additive, select != 0, select != 2,
                            scaling == 2, scaling != 0,
                            select == 2 ? -3.0f : -INFINITY});
  uint32_t seed = 500;
  for (const MaskedReferenceCase &c : cases)
    for (const Variant &v : variants)
      for (bool log : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "shape rank " << c.shape.rank << " dim0 "
                     << c.shape.dims[0] << " axis " << c.axis << " mask rank "
                     << c.maskShape.rank << " additive " << v.additive
                     << " condition " << v.condition << " keepWhen "
                     << v.keepWhen << " divide " << v.divide << " scaled "
                     << v.scaled << " log " << log);
        int64_t n = c.shape.numElements(), m = c.maskShape.numElements();
        auto x = randomVector(n, seed++, -5.0f, 5.0f);
        auto dy = randomVector(n, seed++);
        auto noise = randomVector(m, seed++);
        std::vector<float> additive(m);
        std::unique_ptr<bool[]> condition(new bool[m]);
        for (int64_t i = 0; i < m; ++i) {
          additive[i] = noise[i] > 0.6f ? -1e4f : 3.0f * noise[i];
          condition[i] = (noise[i] > -0.3f) == v.keepWhen;
        }
        // Every line keeps an element: no all-masked (NaN) line. Keeping
        // more elements of the mask never drops one of another line.
        for (const std::vector<int64_t> &line : naiveLines(c.shape, c.axis)) {
          bool kept = false;
          for (int64_t i : line)
            kept |= condition[broadcastOffset(c.shape, c.maskShape, i)] ==
                    v.keepWhen;
          if (!kept)
            condition[broadcastOffset(c.shape, c.maskShape, line[0])] =
                v.keepWhen;
        }
        const float scale = 0.4f, fill = v.fill, zero = 0.0f;
        SoftmaxMasking masking;
        if (v.scaled)
          masking.scale = &scale;
        masking.divide = v.divide;
        if (v.additive)
          masking.mask = additive.data();
        if (v.condition) {
          masking.condition = condition.get();
          masking.keepWhen = v.keepWhen;
          masking.fill = &fill;
        }
        masking.maskShape = c.maskShape;
        std::vector<float> want =
            naiveMaskedSoftmax(x, c.shape, c.axis, log, masking);
        std::vector<float> cpu(n), items(n);
        softmaxMasked(x.data(), c.shape, c.axis, log, masking, cpu.data());
        expectCloseNonFinite(cpu, want, "forward, cpu kernel");
        AxisView view(c.shape, c.axis);
        runOnHost(view.lines(),
                  MaskedSoftmaxLine{x.data(), items.data(), view, log,
                                    LineMasking(masking, c.shape, c.axis)});
        expectCloseNonFinite(items, want, "forward, work items");

        // The backward has no additive mask; its fill is the gradient's 0.
        masking.mask = nullptr;
        if (v.condition)
          masking.fill = &zero;
        const std::vector<float> y = want;
        want = naiveMaskedSoftmaxGrad(y, dy, c.shape, c.axis, log, masking);
        softmaxGradMasked(y.data(), dy.data(), c.shape, c.axis, log, masking,
                          cpu.data());
        expectCloseNonFinite(cpu, want, "backward, cpu kernel");
        runOnHost(view.lines(),
                  MaskedSoftmaxGradLine{y.data(), dy.data(), items.data(),
                                        view, log,
                                        LineMasking(masking, c.shape,
                                                    c.axis)});
        expectCloseNonFinite(items, want, "backward, work items");
      }
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

std::vector<AxisCase> layerNormCases() {
  return {{{6, 10}, 1}, {{2, 3, 8}, 1}, {{2, 3, 8}, -1}, {{4, 5}, 0}};
}

TEST(RowBodies, LayerNormRowMatchesCpu) {
  uint32_t seed = 40;
  for (const AxisCase &c : layerNormCases())
    for (bool withBias : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "axis " << c.axis << " bias " << withBias);
      RowView view(c.shape, c.axis);
      int64_t n = c.shape.numElements();
      // An offset, so that the mean matters.
      auto x = randomVector(n, seed++, 2.0f, 5.0f);
      auto scale = randomVector(view.d, seed++, 0.5f, 1.5f);
      auto bias = randomVector(view.d, seed++);
      const float *b = withBias ? bias.data() : nullptr;
      std::vector<float> want(n), got(n), wantMean(view.rows),
          gotMean(view.rows), wantInv(view.rows), gotInv(view.rows);
      layerNorm(x.data(), c.shape, c.axis, scale.data(), b, 1e-5f, want.data(),
                wantMean.data(), wantInv.data());
      runOnHost(view.rows,
                LayerNormRow{x.data(), scale.data(), b, got.data(),
                             gotMean.data(), gotInv.data(), view.d, 1e-5f});
      expectClose(got, want);
      expectClose(gotMean, wantMean);
      expectClose(gotInv, wantInv);

      // mean and invStd are optional outputs.
      std::vector<float> gotNoStats(n);
      runOnHost(view.rows,
                LayerNormRow{x.data(), scale.data(), b, gotNoStats.data(),
                             nullptr, nullptr, view.d, 1e-5f});
      expectClose(gotNoStats, want);
    }
}

TEST(RowBodies, LayerNormGradRowAndColumnMatchCpu) {
  uint32_t seed = 60;
  for (const AxisCase &c : layerNormCases())
    for (bool withDBias : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "axis " << c.axis << " dBias " << withDBias);
      RowView view(c.shape, c.axis);
      int64_t n = c.shape.numElements();
      auto x = randomVector(n, seed++, -2.0f, 2.0f);
      auto dy = randomVector(n, seed++);
      auto scale = randomVector(view.d, seed++, 0.5f, 1.5f);
      std::vector<float> y(n), mean(view.rows), invStd(view.rows);
      layerNorm(x.data(), c.shape, c.axis, scale.data(), nullptr, 1e-5f,
                y.data(), mean.data(), invStd.data());
      std::vector<float> wantDx(n), wantDScale(view.d), wantDBias(view.d);
      std::vector<float> gotDx(n), gotDScale(view.d), gotDBias(view.d);
      layerNormGrad(dy.data(), x.data(), c.shape, c.axis, scale.data(),
                    mean.data(), invStd.data(), wantDx.data(),
                    wantDScale.data(), withDBias ? wantDBias.data() : nullptr);
      runOnHost(view.rows,
                LayerNormGradRow{dy.data(), x.data(), scale.data(), mean.data(),
                                 invStd.data(), gotDx.data(), view.d});
      runOnHost(view.d, LayerNormGradColumn{
                            dy.data(), x.data(), mean.data(), invStd.data(),
                            gotDScale.data(),
                            withDBias ? gotDBias.data() : nullptr, view});
      expectClose(gotDx, wantDx);
      expectClose(gotDScale, wantDScale);
      expectClose(gotDBias, wantDBias);
    }
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

std::vector<Shape> batchNormShapes() {
  return {{4, 3, 5}, {2, 3, 2, 2}, {6, 4}, {1, 2, 3, 1, 2}};
}

TEST(RowBodies, BatchNormChannelAndApplyMatchCpu) {
  uint32_t seed = 80;
  for (const Shape &shape : batchNormShapes())
    for (bool training : {false, true})
      for (bool withRunning : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "rank " << shape.rank << " training " << training
                     << " running outputs " << withRunning);
        ChannelView view(shape);
        int64_t n = shape.numElements(), ch = view.channels;
        auto x = randomVector(n, seed++, -1.0f, 3.0f);
        auto scale = randomVector(ch, seed++, 0.5f, 1.5f);
        auto bias = randomVector(ch, seed++);
        auto runMean = randomVector(ch, seed++);
        auto runVar = randomVector(ch, seed++, 0.5f, 2.0f);
        std::vector<float> want(n), wantMean(ch), wantVar(ch);
        std::vector<float> got(n), gotMean(ch), gotVar(ch), coef(2 * ch);
        batchNorm(x.data(), shape, scale.data(), bias.data(), runMean.data(),
                  runVar.data(), 1e-5f, 0.9f, training, want.data(),
                  withRunning ? wantMean.data() : nullptr,
                  withRunning ? wantVar.data() : nullptr);
        runOnHost(ch, BatchNormChannel{
                          x.data(), scale.data(), bias.data(), runMean.data(),
                          runVar.data(), withRunning ? gotMean.data() : nullptr,
                          withRunning ? gotVar.data() : nullptr, coef.data(),
                          view, 1e-5f, 0.9f, training});
        runOnHost(view.elements(),
                  BatchNormApply{x.data(), coef.data(), got.data(), view});
        expectClose(got, want);
        expectClose(gotMean, wantMean);
        expectClose(gotVar, wantVar);
      }
}

TEST(RowBodies, BatchNormGradChannelAndApplyMatchCpu) {
  uint32_t seed = 120;
  for (const Shape &shape : batchNormShapes())
    for (bool withDBias : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "rank " << shape.rank << " dBias " << withDBias);
      ChannelView view(shape);
      int64_t n = shape.numElements(), ch = view.channels;
      auto x = randomVector(n, seed++, -1.0f, 3.0f);
      auto dy = randomVector(n, seed++);
      auto scale = randomVector(ch, seed++, 0.5f, 1.5f);
      std::vector<float> wantDx(n), wantDScale(ch), wantDBias(ch);
      std::vector<float> gotDx(n), gotDScale(ch), gotDBias(ch),
          coef(kBatchNormGradCoefs * ch);
      batchNormGrad(dy.data(), x.data(), shape, scale.data(), 1e-5f,
                    wantDx.data(), wantDScale.data(),
                    withDBias ? wantDBias.data() : nullptr);
      runOnHost(ch, BatchNormGradChannel{dy.data(), x.data(), scale.data(),
                                         gotDScale.data(),
                                         withDBias ? gotDBias.data() : nullptr,
                                         coef.data(), view, 1e-5f});
      runOnHost(view.elements(),
                BatchNormGradApply{dy.data(), x.data(), coef.data(),
                                   gotDx.data(), view});
      expectClose(gotDx, wantDx);
      expectClose(gotDScale, wantDScale);
      expectClose(gotDBias, wantDBias);
    }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;
};

/// Runs ReduceOverAxes split into `parts` (ReduceMerge after it when the
/// split took), as cuda::reduce does.
std::vector<float> reduceOnHost(ReduceKind kind, const std::vector<float> &in,
                                const ReduceCase &c, int64_t parts) {
  auto f = ReduceOverAxes<>::make(kind, in.data(), c.shape, c.axes.data(),
                                  static_cast<int>(c.axes.size()), nullptr);
  std::vector<float> out(f.outCount);
  f.out = out.data();
  f.splitInto(parts);
  std::vector<double> partial(f.items());
  f.partial = partial.data();
  runOnHost(f.items(), f);
  if (f.parts > 1)
    runOnHost(f.outCount, ReduceMerge{partial.data(), out.data(), f.acc,
                                      f.parts, f.redCount});
  return out;
}

TEST(RowBodies, ReduceOverAxesMatchesCpu) {
  // Trailing, leading, middle, several and all axes; size-1 dims (what a
  // keep-dims reduction leaves) reduced and kept; nothing really reduced;
  // an empty reduced dim.
  std::vector<ReduceCase> cases = {
      {{4, 5, 6}, {2}},       {{4, 5, 6}, {0}},         {{4, 5, 6}, {1}},
      {{4, 5, 6}, {0, 2}},    {{4, 5, 6}, {0, 1, 2}},   {{4, 5, 6}, {1, 2}},
      {{2, 3, 4, 5}, {1, 3}}, {{3, 1, 4, 2}, {1, 3}},   {{2, 3, 1, 4}, {0, 2}},
      {{3, 1, 4}, {1}},       {{2, 3, 4, 5}, {-3, -1}}, {{5, 0, 3}, {1}},
      {{1000}, {0}},          {{7, 300}, {0}}};
  uint32_t seed = 200;
  for (const ReduceCase &c : cases)
    for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max})
      for (int64_t parts : {1, 3, 7, 1000}) {
        SCOPED_TRACE(testing::Message()
                     << "rank " << c.shape.rank << " axes " << c.axes.size()
                     << " first " << c.axes[0] << " kind "
                     << static_cast<int>(kind) << " parts " << parts);
        auto in = randomVector(c.shape.numElements(), seed++, -2.0f, 2.0f);
        auto got = reduceOnHost(kind, in, c, parts);
        std::vector<float> want(got.size());
        reduce(kind, in.data(), c.shape, c.axes.data(),
               static_cast<int>(c.axes.size()), want.data());
        expectCloseNonFinite(got, want);
      }
}

TEST(RowBodies, ReduceOverAxesPropagatesNaN) {
  ReduceCase c{{3, 8}, {1}};
  auto in = randomVector(24, 7);
  in[2] = NAN;  // first element of output 0's row
  in[15] = NAN; // last element of output 1's row
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Max})
    for (int64_t parts : {1, 3}) {
      auto got = reduceOnHost(kind, in, c, parts);
      std::vector<float> want(3);
      reduce(kind, in.data(), c.shape, c.axes.data(), 1, want.data());
      EXPECT_TRUE(std::isnan(want[0]) && std::isnan(want[1]));
      expectCloseNonFinite(got, want);
    }
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

template <typename I> class LossBodies : public testing::Test {};
using LabelTypes = testing::Types<int64_t, int32_t>;
TYPED_TEST_SUITE(LossBodies, LabelTypes);

/// One loss configuration: the label of every fourth sample is the ignore
/// index (in the class range or not) when there is one.
struct LossCase {
  Shape shape;
  bool withWeights;
  bool hasIgnoreIndex;
  int64_t ignoreIndex;
  Reduction reduction;
};

std::vector<LossCase> lossCases() {
  std::vector<LossCase> cases;
  for (Shape shape : {Shape{6, 5}, Shape{2, 4, 3}, Shape{2, 3, 2, 2}})
    for (bool withWeights : {false, true})
      for (int64_t ignore : {int64_t(-1), int64_t(2), int64_t(-100)})
        for (Reduction r : {Reduction::None, Reduction::Sum, Reduction::Mean})
          cases.push_back({shape, withWeights, ignore != -1, ignore, r});
  return cases;
}

template <typename I>
std::vector<I> randomLabels(const LossView &view, const LossCase &c,
                            uint32_t seed) {
  auto u = randomVector(view.samples(), seed, 0.0f, 1.0f);
  std::vector<I> labels(view.samples());
  for (int64_t i = 0; i < view.samples(); ++i)
    labels[i] = static_cast<I>(std::min<int64_t>(
        static_cast<int64_t>(u[i] * view.classes), view.classes - 1));
  if (c.hasIgnoreIndex)
    for (int64_t i = 0; i < view.samples(); i += 4)
      labels[i] = static_cast<I>(c.ignoreIndex);
  return labels;
}

/// The forward items of softmaxCrossEntropy and nllLoss, phase by phase.
template <typename I>
void runForward(const std::vector<float> &scores, const Shape &shape,
                const SampleWeights<I> &sw, Reduction reduction,
                std::vector<float> &sceLoss, std::vector<float> &logProb,
                std::vector<float> &nllLossOut) {
  AxisView classes(shape, 1);
  runOnHost(classes.lines(),
            SoftmaxLine{scores.data(), logProb.data(), classes, true});
  LossView view(shape);
  NllForward<I> sce{logProb.data(), sceLoss.data(), sw, view, reduction};
  runOnHost(sce.items(), sce);
  // nllLoss takes log-probabilities: the scores' own.
  NllForward<I> nll{logProb.data(), nllLossOut.data(), sw, view, reduction};
  runOnHost(nll.items(), nll);
}

/// The gradient items of both losses, phase by phase.
template <typename I>
void runBackward(const std::vector<float> &dLoss,
                 const std::vector<float> &logProb, const Shape &shape,
                 const SampleWeights<I> &sw, Reduction reduction,
                 std::vector<float> &dScores, std::vector<float> &dInput) {
  LossView view(shape);
  float scale = NAN;
  const float *mean = nullptr;
  if (reduction == Reduction::Mean) {
    runOnHost(1, LossMeanScale<I>{dLoss.data(), &scale, sw, view.samples()});
    mean = &scale;
  }
  runOnHost(view.elements(), SoftmaxCrossEntropyGradElement<I>{
                                 dLoss.data(), mean, logProb.data(),
                                 dScores.data(), sw, view, reduction});
  runOnHost(view.elements(),
            NllLossGradElement<I>{dLoss.data(), mean, dInput.data(), sw, view,
                                  reduction});
}

TYPED_TEST(LossBodies, MatchCpu) {
  using I = TypeParam;
  uint32_t seed = 300;
  for (const LossCase &c : lossCases()) {
    SCOPED_TRACE(testing::Message()
                 << "rank " << c.shape.rank << " weights " << c.withWeights
                 << " ignore " << (c.hasIgnoreIndex ? c.ignoreIndex : 0)
                 << " reduction " << static_cast<int>(c.reduction));
    LossView view(c.shape);
    int64_t n = c.shape.numElements();
    int64_t lossSize = c.reduction == Reduction::None ? view.samples() : 1;
    auto scores = randomVector(n, seed++, -3.0f, 3.0f);
    auto weights = randomVector(view.classes, seed++, 0.5f, 1.5f);
    auto dLoss = randomVector(lossSize, seed++);
    auto labels = randomLabels<I>(view, c, seed++);
    const float *w = c.withWeights ? weights.data() : nullptr;

    std::vector<float> wantLoss(lossSize), wantLogProb(n), wantNll(lossSize);
    softmaxCrossEntropy(scores.data(), c.shape, labels.data(), w, c.reduction,
                        c.hasIgnoreIndex, c.ignoreIndex, wantLoss.data(),
                        wantLogProb.data());
    nllLoss(wantLogProb.data(), c.shape, labels.data(), w, c.reduction,
            c.hasIgnoreIndex, c.ignoreIndex, wantNll.data());
    std::vector<float> wantDScores(n), wantDInput(n);
    softmaxCrossEntropyGrad(dLoss.data(), wantLogProb.data(), c.shape,
                            labels.data(), w, c.reduction, c.hasIgnoreIndex,
                            c.ignoreIndex, wantDScores.data());
    nllLossGrad(dLoss.data(), c.shape, labels.data(), w, c.reduction,
                c.hasIgnoreIndex, c.ignoreIndex, wantDInput.data());

    SampleWeights<I> sw{labels.data(), w, view.classes, c.hasIgnoreIndex,
                        c.ignoreIndex};
    std::vector<float> gotLoss(lossSize), gotLogProb(n), gotNll(lossSize);
    runForward(scores, c.shape, sw, c.reduction, gotLoss, gotLogProb, gotNll);
    std::vector<float> gotDScores(n, NAN), gotDInput(n, NAN);
    runBackward(dLoss, gotLogProb, c.shape, sw, c.reduction, gotDScores,
                gotDInput);

    expectClose(gotLogProb, wantLogProb);
    expectClose(gotLoss, wantLoss);
    expectClose(gotNll, wantNll);
    expectClose(gotDScores, wantDScores);
    expectClose(gotDInput, wantDInput);
  }
}

/// The cpu target exits on a label outside [0, C); the work items, which
/// cannot, treat it as ignored. Compared with the cpu kernels on the same
/// samples marked with an ignore index.
TYPED_TEST(LossBodies, OutOfRangeLabelCountsAsIgnored) {
  using I = TypeParam;
  Shape shape{2, 4, 3};
  LossView view(shape);
  int64_t n = shape.numElements();
  auto scores = randomVector(n, 400, -3.0f, 3.0f);
  auto weights = randomVector(view.classes, 401, 0.5f, 1.5f);
  std::vector<I> bad = {0, 4, 1, 2, -1, 3}, ignored = {0, -7, 1, 2, -7, 3};
  for (Reduction r : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
    SCOPED_TRACE(testing::Message() << "reduction " << static_cast<int>(r));
    int64_t lossSize = r == Reduction::None ? view.samples() : 1;
    auto dLoss = randomVector(lossSize, 402);
    std::vector<float> wantLoss(lossSize), wantLogProb(n), wantNll(lossSize),
        wantDScores(n), wantDInput(n);
    softmaxCrossEntropy(scores.data(), shape, ignored.data(), weights.data(), r,
                        true, -7, wantLoss.data(), wantLogProb.data());
    nllLoss(wantLogProb.data(), shape, ignored.data(), weights.data(), r, true,
            -7, wantNll.data());
    softmaxCrossEntropyGrad(dLoss.data(), wantLogProb.data(), shape,
                            ignored.data(), weights.data(), r, true, -7,
                            wantDScores.data());
    nllLossGrad(dLoss.data(), shape, ignored.data(), weights.data(), r, true,
                -7, wantDInput.data());

    SampleWeights<I> sw{bad.data(), weights.data(), view.classes, false, 0};
    std::vector<float> gotLoss(lossSize), gotLogProb(n), gotNll(lossSize),
        gotDScores(n), gotDInput(n);
    runForward(scores, shape, sw, r, gotLoss, gotLogProb, gotNll);
    runBackward(dLoss, gotLogProb, shape, sw, r, gotDScores, gotDInput);
    expectClose(gotLoss, wantLoss);
    expectClose(gotNll, wantNll);
    expectClose(gotDScores, wantDScores);
    expectClose(gotDInput, wantDInput);
  }
}

//===----------------------------------------------------------------------===//
// Dropout and optimizers
//===----------------------------------------------------------------------===//

TEST(RowBodies, DropoutElementMatchesCpu) {
  constexpr int64_t n = 1000;
  auto x = randomVector(n, 500);
  for (float ratio : {0.0f, 0.3f, 0.9f})
    for (bool withMask : {false, true}) {
      SCOPED_TRACE(testing::Message() << "ratio " << ratio);
      std::vector<float> want(n), got(n);
      std::unique_ptr<bool[]> wantMask(new bool[n]), gotMask(new bool[n]);
      // Strided rows: 40 elements each, 100 apart.
      int64_t offset = 40;
      dropout(x.data(), n, ratio, 1234, 5, 17, &offset, 40, 100, want.data(),
              withMask ? wantMask.get() : nullptr);
      runOnHost(n, DropoutElement::make(x.data(), ratio, 1234, 5, 17, &offset,
                                        40, 100, got.data(),
                                        withMask ? gotMask.get() : nullptr));
      expectSame(got, want, 0.0, 0.0);
      if (!withMask)
        continue;
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(gotMask[i], wantMask[i]) << "element " << i;
    }
}

TEST(RowBodies, RandomElementsMatchCpu) {
  constexpr int64_t n = 1000;
  std::vector<float> want(n), got(n);
  randomUniform(want.data(), n, -1.0f, 3.0f, 1234, 2, 9);
  runOnHost(n, RandomUniformElement{got.data(), rt::randomKey(1234, 2, 9),
                                    -1.0f, 3.0f});
  expectSame(got, want, 0.0, 0.0);
  randomNormal(want.data(), n, 1.0f, 0.5f, 1234, 2, 9);
  runOnHost(n, RandomNormalElement{got.data(), rt::randomKey(1234, 2, 9), 1.0f,
                                   0.5f});
  expectSame(got, want, 0.0, 0.0);
}

TEST(RowBodies, SgdElementMatchesCpu) {
  constexpr int64_t n = 50;
  struct Config {
    float momentum, dampening, weightDecay;
    bool nesterov, withBuffer;
  };
  std::vector<Config> configs = {
      {0.0f, 0.0f, 0.0f, false, false},
      {0.0f, 0.0f, 0.01f, false, false},
      {0.9f, 0.0f, 0.0f, false, true},
      {0.9f, 0.1f, 0.01f, false, true},
      {0.9f, 0.0f, 0.0f, true, true},
      {0.9f, 0.0f, 0.01f, true, true},
      // Momentum without a buffer: the cpu kernel then steps plainly.
      {0.9f, 0.0f, 0.01f, false, false}};
  uint32_t seed = 600;
  for (const Config &c : configs) {
    SCOPED_TRACE(testing::Message()
                 << "momentum " << c.momentum << " dampening " << c.dampening
                 << " decay " << c.weightDecay << " nesterov " << c.nesterov
                 << " buffer " << c.withBuffer);
    auto wantParam = randomVector(n, seed++);
    auto gotParam = wantParam;
    std::vector<float> wantBuf(n, 0.0f), gotBuf(n, 0.0f);
    // Step 0 initializes the buffer; later steps use it.
    for (int64_t step = 0; step < 3; ++step) {
      auto grad = randomVector(n, seed++);
      sgdUpdate(wantParam.data(), grad.data(),
                c.withBuffer ? wantBuf.data() : nullptr, n, 0.1f, c.momentum,
                c.dampening, c.nesterov, c.weightDecay, step);
      runOnHost(n, SgdElement::make(gotParam.data(), grad.data(),
                                    c.withBuffer ? gotBuf.data() : nullptr,
                                    0.1f, c.momentum, c.dampening, c.nesterov,
                                    c.weightDecay, step));
      expectClose(gotParam, wantParam);
      expectClose(gotBuf, wantBuf);
    }
  }
}

TEST(RowBodies, AdamwElementMatchesCpu) {
  constexpr int64_t n = 50;
  uint32_t seed = 700;
  for (float weightDecay : {0.0f, 0.01f}) {
    SCOPED_TRACE(testing::Message() << "decay " << weightDecay);
    auto wantParam = randomVector(n, seed++);
    auto gotParam = wantParam;
    std::vector<float> wantM(n, 0.0f), wantV(n, 0.0f), gotM(n, 0.0f),
        gotV(n, 0.0f);
    for (int64_t step = 0; step < 3; ++step) {
      auto grad = randomVector(n, seed++);
      adamwUpdate(wantParam.data(), grad.data(), wantM.data(), wantV.data(), n,
                  1e-3f, 0.9f, 0.999f, 1e-8f, weightDecay, step);
      runOnHost(n, AdamwElement{AdamwStep::make(1e-3f, 0.9f, 0.999f, 1e-8f,
                                                weightDecay, step),
                                gotParam.data(), grad.data(), gotM.data(),
                                gotV.data()});
      expectClose(gotParam, wantParam);
      expectClose(gotM, wantM);
      expectClose(gotV, wantV);
    }
  }
}

TEST(RowBodies, OnnxOptimizerElementsMatchCpu) {
  constexpr int64_t n = 50;
  uint32_t seed = 800;
  auto x = randomVector(n, seed++), g = randomVector(n, seed++),
       v = randomVector(n, seed++);
  auto h = randomVector(n, seed++, 0.0f, 1.0f);
  // Step 0 takes the special cases of the ONNX definitions.
  for (int64_t step : {0, 3}) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    for (bool nesterov : {false, true}) {
      std::vector<float> wantX(n), wantV(n), gotX(n), gotV(n);
      onnxMomentumUpdate(x.data(), g.data(), v.data(), n, 0.1f, step, 0.9f,
                         0.8f, 0.01f, nesterov, wantX.data(), wantV.data());
      OnnxMomentumStep body{0.1f, 0.9f, 0.8f, 0.01f, nesterov, step};
      runOnHost(n, OnnxMomentumElement{body, x.data(), g.data(), v.data(),
                                       gotX.data(), gotV.data()});
      expectClose(gotX, wantX);
      expectClose(gotV, wantV);
    }
    {
      std::vector<float> wantX(n), wantV(n), wantH(n), gotX(n), gotV(n),
          gotH(n);
      onnxAdamUpdate(x.data(), g.data(), v.data(), h.data(), n, 0.1f, step,
                     0.9f, 0.999f, 1e-6f, 0.01f, 0.001f, wantX.data(),
                     wantV.data(), wantH.data());
      OnnxAdamStep body{0.1f, 0.9f, 0.999f, 1e-6f, 0.01f, 0.001f, step};
      runOnHost(n, OnnxAdamElement{body, x.data(), g.data(), v.data(), h.data(),
                                   gotX.data(), gotV.data(), gotH.data()});
      expectClose(gotX, wantX);
      expectClose(gotV, wantV);
      expectClose(gotH, wantH);
    }
    {
      std::vector<float> wantX(n), wantH(n), gotX(n), gotH(n);
      onnxAdagradUpdate(x.data(), g.data(), h.data(), n, 0.1f, step, 0.01f,
                        1e-6f, 0.01f, wantX.data(), wantH.data());
      OnnxAdagradStep body{0.1f, 0.01f, 1e-6f, 0.01f, step};
      runOnHost(n, OnnxAdagradElement{body, x.data(), g.data(), h.data(),
                                      gotX.data(), gotH.data()});
      expectClose(gotX, wantX);
      expectClose(gotH, wantH);
    }
  }
}

} // namespace
} // namespace cleave::rt::test
