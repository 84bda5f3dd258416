//===- ReductionBodies.h - sum, mean and max work items ---------*- C++ -*-===//
//
// Part of the Cleave runtime. The work items of reduce on both targets: the
// cuda target launches them (cuda/KernelsReduction.cu), the cpu target runs
// them in OpenMP loops (KernelsReduction.cpp). An item reduces, for one
// output element, a range of the reduced sub-space in row-major order, in
// double accumulators with torch's NaN rule (interleaved along contiguous
// runs, ReduceOverAxes::contiguousRun). A reduction to few outputs (a
// whole tensor to a scalar) would leave the threads idle; it is split into
// parts, reduced into partial accumulators, then merged in part order, which
// keeps it deterministic.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_REDUCTIONBODIES_H
#define CLEAVE_RUNTIME_REDUCTIONBODIES_H

#include "runtime/HostDevice.h"
#include "runtime/KernelTypes.h"
#include "runtime/Shape.h"

#include <cmath>
#include <cstdint>

namespace cleave::body {

/// The accumulator of reduce: sums in double, and a max that propagates
/// NaN, as torch does.
struct ReduceAcc {
  rt::ReduceKind kind;

  CLEAVE_HD double init() const {
    return kind == rt::ReduceKind::Max ? -HUGE_VAL : 0.0;
  }
  /// Adds a value or merges another accumulator (the same rule).
  CLEAVE_HD void add(double &acc, double v) const {
    if (kind != rt::ReduceKind::Max)
      acc += v;
    else if (v > acc || (v != v && acc == acc)) // v is NaN, acc is not
      acc = v;
  }
  /// An empty reduction gives 0 for sum, NaN for mean, -inf for max.
  CLEAVE_HD float finish(double acc, int64_t count) const {
    if (kind == rt::ReduceKind::Mean)
      return static_cast<float>(acc / static_cast<double>(count));
    return static_cast<float>(acc);
  }
};

/// Runs of adjacent dims that are all kept or all reduced, merged (size-1
/// dims dropped), with their strides in the input: index -> input offset.
struct DimGroups {
  int count = 0;
  int64_t size[rt::kMaxRank] = {};
  int64_t stride[rt::kMaxRank] = {};

  /// The input offset of row-major position `index` over groups [0, n).
  CLEAVE_HD int64_t offset(int64_t index, int n) const {
    int64_t off = 0;
    for (int i = n - 1; i >= 0; --i) {
      off += index % size[i] * stride[i];
      index /= size[i];
    }
    return off;
  }
};

/// Item j reduces part j % parts of the reduced sub-space of output element
/// j / parts. With one part it writes out[] directly; with more, the raw
/// accumulator goes to partial[j] and ReduceMerge finishes. After
/// tileOutputs(), an item instead reduces up to Lanes adjacent outputs along
/// the input's innermost dim (kept), whose inputs are adjacent too: the cpu
/// target's form, where the loop over the lanes runs over contiguous memory
/// and one item's index arithmetic serves Lanes outputs. Each output's sum
/// runs in the same order either way.
template <int Lanes = 1> struct ReduceOverAxes {
  const float *in = nullptr;
  float *out = nullptr;
  double *partial = nullptr;
  ReduceAcc acc{rt::ReduceKind::Sum};
  /// The kept groups, in output order, and the reduced ones; the last
  /// reduced group is walked by the inner loop.
  DimGroups kept, red;
  int64_t outCount = 0;
  int64_t redCount = 0;
  int64_t parts = 1;
  /// Reduced positions per part.
  int64_t chunk = 0;
  /// After tileOutputs(): the innermost kept dim's size and the tiles of
  /// Lanes outputs it is cut into (0 when not tiled).
  int64_t rowLength = 0;
  int64_t tilesPerRow = 0;

  /// The single-part plan for reducing `in` over the ascending `axes`
  /// (negative ones count from the end).
  static ReduceOverAxes make(rt::ReduceKind kind, const float *in,
                             const rt::Shape &shape, const int64_t *axes,
                             int numAxes, float *out) {
    ReduceOverAxes f;
    f.in = in;
    f.out = out;
    f.acc = ReduceAcc{kind};
    bool isReduced[rt::kMaxRank] = {};
    for (int i = 0; i < numAxes; ++i)
      isReduced[axes[i] < 0 ? axes[i] + shape.rank : axes[i]] = true;
    f.outCount = f.redCount = 1;
    int64_t strides[rt::kMaxRank];
    int64_t stride = 1;
    for (int i = shape.rank - 1; i >= 0; --i) {
      strides[i] = stride;
      stride *= shape.dims[i];
      (isReduced[i] ? f.redCount : f.outCount) *= shape.dims[i];
    }
    // Whether the previous dim of size > 1 was reduced, -1 before the
    // first: size-1 dims do not interrupt a run.
    int last = -1;
    for (int i = 0; i < shape.rank; ++i) {
      if (shape.dims[i] == 1)
        continue;
      DimGroups &g = isReduced[i] ? f.red : f.kept;
      if (last == static_cast<int>(isReduced[i])) {
        g.size[g.count - 1] *= shape.dims[i];
        g.stride[g.count - 1] = strides[i];
      } else {
        g.size[g.count] = shape.dims[i];
        g.stride[g.count] = strides[i];
        ++g.count;
      }
      last = static_cast<int>(isReduced[i]);
    }
    // Nothing (or only size-1 dims) reduced: one position at offset 0.
    if (f.red.count == 0) {
      f.red.size[0] = 1;
      f.red.stride[0] = 0;
      f.red.count = 1;
    }
    f.chunk = f.redCount;
    return f;
  }

  /// Splits each output's reduction into at most `want` parts (none
  /// empty).
  void splitInto(int64_t want) {
    if (want < 1 || redCount == 0)
      want = 1;
    chunk = (redCount + want - 1) / want;
    parts = chunk == 0 ? 1 : (redCount + chunk - 1) / chunk;
  }

  /// Gives each item Lanes adjacent outputs, if the input's innermost dim
  /// is kept and the reductions are not split.
  void tileOutputs() {
    if (Lanes == 1 || parts != 1 || kept.count == 0 ||
        kept.stride[kept.count - 1] != 1)
      return;
    rowLength = kept.size[kept.count - 1];
    tilesPerRow = (rowLength + Lanes - 1) / Lanes;
  }

  int64_t items() const {
    return tilesPerRow ? outCount / rowLength * tilesPerRow : outCount * parts;
  }

  /// src[begin, end) reduced in kChains interleaved accumulators, merged
  /// pairwise: one chain of dependent double adds would take an add's
  /// latency per element (the bias gradient of a convolution, a sum over
  /// its planes, ran at 0.85 ns an element). Only runs along the input's
  /// innermost dim take this order, which the cpu target's tiles never
  /// reduce, so both targets still sum every output alike.
  CLEAVE_HD double contiguousRun(const float *src, int64_t begin,
                                 int64_t end) const {
    constexpr int kChains = 16;
    double s[kChains];
    for (int k = 0; k < kChains; ++k)
      s[k] = acc.init();
    int64_t c = begin;
    if (acc.kind == rt::ReduceKind::Max) {
      for (; c + kChains <= end; c += kChains)
        for (int k = 0; k < kChains; ++k)
          acc.add(s[k], src[c + k]);
    } else {
      for (; c + kChains <= end; c += kChains)
        for (int k = 0; k < kChains; ++k)
          s[k] += src[c + k];
    }
    for (int k = 0; c < end; ++c, ++k)
      acc.add(s[k], src[c]);
    for (int width = kChains / 2; width >= 1; width /= 2)
      for (int k = 0; k < width; ++k)
        acc.add(s[k], s[k + width]);
    return s[0];
  }

  /// Adds the inputs at reduced positions [p, end) of the `lanes` outputs
  /// from o on (adjacent in the input when lanes > 1) to a[0, lanes).
  CLEAVE_HD void accumulate(int64_t o, int64_t lanes, int64_t p, int64_t end,
                            double *a) const {
    if (p >= end)
      return;
    const float *base = in + kept.offset(o, kept.count);
    int64_t innerLen = red.size[red.count - 1];
    int64_t innerStride = red.stride[red.count - 1];
    int64_t row = p / innerLen, col = p % innerLen;
    while (p < end) {
      const float *src = base + red.offset(row, red.count - 1);
      int64_t stop = innerLen < col + (end - p) ? innerLen : col + (end - p);
      if (lanes == 1 && innerStride == 1) {
        acc.add(a[0], contiguousRun(src, col, stop));
      } else if (lanes == 1) {
        // One output: its sum stays in a register.
        double sum = a[0];
        for (int64_t c = col; c < stop; ++c)
          acc.add(sum, src[c * innerStride]);
        a[0] = sum;
      } else {
        for (int64_t c = col; c < stop; ++c)
          for (int64_t l = 0; l < lanes; ++l)
            acc.add(a[l], src[c * innerStride + l]);
      }
      p += stop - col;
      ++row;
      col = 0;
    }
  }

  CLEAVE_HD void operator()(int64_t j) const {
    int64_t o, lanes = 1, p = 0, end = redCount;
    if (tilesPerRow) {
      int64_t tile = j % tilesPerRow * Lanes;
      o = j / tilesPerRow * rowLength + tile;
      lanes = rowLength - tile < Lanes ? rowLength - tile : Lanes;
    } else {
      o = j / parts;
      p = j % parts * chunk;
      end = p + chunk < redCount ? p + chunk : redCount;
    }
    double a[Lanes];
    for (int64_t l = 0; l < lanes; ++l)
      a[l] = acc.init();
    accumulate(o, lanes, p, end, a);
    if (parts > 1) {
      partial[j] = a[0];
      return;
    }
    for (int64_t l = 0; l < lanes; ++l)
      out[o + l] = acc.finish(a[l], redCount);
  }
};

/// Merges the parts of one output element in order and finishes it.
struct ReduceMerge {
  const double *partial;
  float *out;
  ReduceAcc acc;
  int64_t parts;
  int64_t redCount;

  CLEAVE_HD void operator()(int64_t o) const {
    double a = acc.init();
    for (int64_t part = 0; part < parts; ++part)
      acc.add(a, partial[o * parts + part]);
    out[o] = acc.finish(a, redCount);
  }
};

} // namespace cleave::body

#endif // CLEAVE_RUNTIME_REDUCTIONBODIES_H
