//===- KernelsReduction.cpp - sum, mean and max over axes -----------------===//
//
// Part of the Cleave runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/Elementwise.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace cleave::rt {
namespace {

using detail::kParallelGrain;

/// Merged runs of dims that are all reduced or all kept, with their input
/// strides (size-1 dims dropped).
struct Groups {
  int count = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  bool reduced[kMaxRank] = {};
};

/// Sums in double and takes the max NaN-propagating, as torch does.
struct Acc {
  ReduceKind kind;
  double init() const {
    return kind == ReduceKind::Max ? -std::numeric_limits<double>::infinity()
                                   : 0.0;
  }
  void add(double &acc, float v) const {
    if (kind != ReduceKind::Max)
      acc += v;
    else if (v > acc || (std::isnan(v) && !std::isnan(acc)))
      acc = v;
  }
  void merge(double &acc, double v) const {
    if (kind != ReduceKind::Max)
      acc += v;
    else if (v > acc || (std::isnan(v) && !std::isnan(acc)))
      acc = v;
  }
  float finish(double acc, int64_t count) const {
    if (kind == ReduceKind::Mean)
      return static_cast<float>(acc / static_cast<double>(count));
    return static_cast<float>(acc);
  }
};

/// Iterates the reduced groups other than the innermost reduced one.
struct Odometer {
  int count = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  int64_t positions() const {
    int64_t n = 1;
    for (int i = 0; i < count; ++i)
      n *= size[i];
    return n;
  }
  int64_t offset(int64_t index) const {
    int64_t off = 0;
    for (int i = count - 1; i >= 0; --i) {
      off += index % size[i] * stride[i];
      index /= size[i];
    }
    return off;
  }
};

} // namespace

void reduce(ReduceKind kind, const float *in, const Shape &inShape,
            const int64_t *axes, int numAxes, float *out) {
  Acc acc{kind};
  bool isReduced[kMaxRank] = {};
  for (int i = 0; i < numAxes; ++i)
    isReduced[detail::normalizeAxis(static_cast<int>(axes[i]), inShape.rank)] =
        true;
  int64_t outCount = 1, redCount = 1;
  for (int i = 0; i < inShape.rank; ++i)
    (isReduced[i] ? redCount : outCount) *= inShape.dims[i];
  if (outCount == 0)
    return;
  if (redCount == 0) {
    // Empty reductions: 0 for sum, NaN for mean, -inf for max.
    std::fill(out, out + outCount, acc.finish(acc.init(), 0));
    return;
  }

  Groups g;
  int64_t stride = 1;
  int64_t strides[kMaxRank];
  for (int i = inShape.rank - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= inShape.dims[i];
  }
  for (int i = 0; i < inShape.rank; ++i) {
    if (inShape.dims[i] == 1)
      continue;
    if (g.count > 0 && g.reduced[g.count - 1] == isReduced[i]) {
      g.size[g.count - 1] *= inShape.dims[i];
      g.stride[g.count - 1] = strides[i];
      continue;
    }
    g.size[g.count] = inShape.dims[i];
    g.stride[g.count] = strides[i];
    g.reduced[g.count] = isReduced[i];
    ++g.count;
  }

  // Nothing reduced (or only size-1 dims): a copy, divided by 1 for mean.
  if (redCount == 1) {
    std::copy(in, in + outCount, out);
    return;
  }

  bool parallel = outCount * redCount > kParallelGrain;

  // Everything reduced: one parallel reduction over the flat input.
  if (outCount == 1) {
    int64_t n = redCount;
    // Per-thread partials merged in thread order keep sums deterministic.
    std::vector<double> partial(detail::maxThreads(), acc.init());
#pragma omp parallel if (n > kParallelGrain)
    {
      double local = acc.init();
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; ++i)
        acc.add(local, in[i]);
      partial[detail::threadNum()] = local;
    }
    double total = acc.init();
    for (double p : partial)
      acc.merge(total, p);
    out[0] = acc.finish(total, n);
    return;
  }

  // The kept groups give the output's (contiguous) order; the reduced
  // groups form the odometer.
  Odometer kept, red;
  for (int i = 0; i < g.count; ++i) {
    Odometer &o = g.reduced[i] ? red : kept;
    o.size[o.count] = g.size[i];
    o.stride[o.count] = g.stride[i];
    ++o.count;
  }

  if (g.reduced[g.count - 1]) {
    // The innermost run is reduced and contiguous: one dot-like loop per
    // output element.
    int64_t innerLen = red.size[red.count - 1];
    Odometer outerRed = red;
    --outerRed.count;
    int64_t outerPositions = outerRed.positions();
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < outCount; ++o) {
      const float *base = in + kept.offset(o);
      double a = acc.init();
      for (int64_t p = 0; p < outerPositions; ++p) {
        const float *row = base + outerRed.offset(p);
        for (int64_t i = 0; i < innerLen; ++i)
          acc.add(a, row[i]);
      }
      out[o] = acc.finish(a, redCount);
    }
    return;
  }

  // The innermost run is kept: accumulate contiguous rows of it. Threads
  // split output rows and chunks of the row, so that reducing [N, C] to [C]
  // still runs in parallel.
  int64_t rowLen = kept.size[kept.count - 1];
  Odometer outerKept = kept;
  --outerKept.count;
  int64_t outRows = outerKept.positions();
  int64_t positions = red.positions();
  constexpr int64_t kChunk = 256;
  int64_t chunks = (rowLen + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < outRows * chunks; ++t) {
    int64_t row = t / chunks;
    int64_t c0 = t % chunks * kChunk;
    int64_t len = std::min(kChunk, rowLen - c0);
    double buf[kChunk];
    std::fill(buf, buf + len, acc.init());
    const float *base = in + outerKept.offset(row) + c0;
    for (int64_t p = 0; p < positions; ++p) {
      const float *src = base + red.offset(p);
      if (kind == ReduceKind::Max) {
        for (int64_t i = 0; i < len; ++i)
          acc.add(buf[i], src[i]);
      } else {
        for (int64_t i = 0; i < len; ++i)
          buf[i] += src[i];
      }
    }
    float *dst = out + row * rowLen + c0;
    for (int64_t i = 0; i < len; ++i)
      dst[i] = acc.finish(buf[i], redCount);
  }
}

} // namespace cleave::rt
