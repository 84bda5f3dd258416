//===- KernelsMaxPool.cpp - MaxPool forward and backward ------------------===//
//
// Part of the Cleave runtime. A window's max is taken one spatial axis at a
// time: the forward pass along dim 2 of every input row, then along dim 1
// of those, then dim 0; the backward pass's argmax along dims 0 and 1
// first (whole contiguous rows), then along dim 2 of the rows left. Passes
// along contiguous rows run in vector registers, where one loop over a
// window's taps per output ran short strided loops (ResNet-18's 3x3
// stride-2 pool and its gradient were 5% of its step). Where a window's
// taps along an axis are 2 or 3 consecutive elements, all of them are in
// one loop body (the compiler loads consecutive elements and permutes them
// where a loop per tap gathered strided ones one by one), and along the
// last axis that loop runs over all rows at once when rows are exactly
// out * stride long (a 2x2 stride-2 pool's rows are 12 outputs at 24x24,
// too short for vector loops): Keras' MNIST convnet's pool on [128, 64,
// 24, 24] took 7.8 ms forward and 9.9 backward on one thread, 2.7-4.0 and
// 6.7-9.5 after (bench/README.md).
//
// Both give what a row-major scan of each window gives. The forward pass
// keeps the first of equal values along each axis, last axis first, so the
// winner is the one with the smallest (k0, k1, k2) (which of +0 and -0),
// and NaN wins, the window's last one. The argmax is the largest value at
// the smallest plane index, or the NaN at the smallest index, in any order
// of the passes: the index of the first in a row-major scan.
//
//===----------------------------------------------------------------------===//

#include "runtime/ConvolutionShapes.h"
#include "runtime/Elementwise.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace cleave::rt {
namespace {

using detail::kParallelGrain;
using detail::validRange;
using detail::Window3;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// One tap of one axis: outputs [lo, hi) read input o * stride + off.
struct AxisTap {
  int64_t lo, hi, off;
};

/// One spatial axis of the window, and its taps that read inside the input.
struct Axis {
  int64_t in, out, stride;
  std::vector<AxisTap> taps;
  // The outputs [lo, hi) at which every tap reads inside the input, and
  // whether the taps are consecutive offsets (no dilation, none wholly in
  // the padding): there one loop with every tap in its body takes the max
  // (maxOfRuns below).
  int64_t lo = 0, hi = 0;
  bool consecutive = false;

  Axis(const Window3 &w, int d)
      : in(w.in[d]), out(w.out[d]), stride(w.stride[d]) {
    for (int64_t k = 0; k < w.kernel[d]; ++k) {
      AxisTap t;
      t.off = k * w.dilation[d] - w.padBegin[d];
      validRange(out, stride, t.off, in, t.lo, t.hi);
      if (t.lo < t.hi)
        taps.push_back(t);
    }
    if (taps.empty())
      return;
    lo = 0;
    hi = out;
    consecutive = int64_t(taps.size()) == w.kernel[d];
    for (const AxisTap &t : taps) {
      lo = std::max(lo, t.lo);
      hi = std::min(hi, t.hi);
      consecutive &= t.off == taps[0].off + (&t - taps.data());
    }
    hi = std::max(hi, lo);
  }

  /// The outputs [qlo, qhi) of the rows [outer, out] flattened at which
  /// one fused loop over all rows reads inside the input, where rows are
  /// exactly out * stride long and the taps consecutive (false otherwise):
  /// one long loop instead of one per row (a 2x2 stride-2 pool's rows are
  /// 12 outputs long at 24x24, too short for vector loops). Outputs at a
  /// row's ends read the next or last row there and are redone tap by tap.
  bool flatRange(int64_t outer, int64_t &qlo, int64_t &qhi) const {
    if (in != out * stride || !consecutive)
      return false;
    int64_t first = taps.front().off, last = taps.back().off;
    int64_t limit = outer * in - 1 - last; // q * stride + last < outer * in
    qlo = first < 0 ? (-first + stride - 1) / stride : 0;
    qhi = limit < 0 ? 0 : std::min(outer * out, limit / stride + 1);
    qhi = std::max(qhi, qlo);
    return true;
  }
};

/// The three axes and the extents of the two intermediate arrays.
struct Separable {
  Axis axes[3];
  int64_t inSize, outSize;
  // After the dim-2 pass: [in0, in1, out2]; after the dim-1 pass:
  // [in0, out1, out2].
  int64_t afterDim2, afterDim1;

  explicit Separable(const Window3 &w)
      : axes{Axis(w, 0), Axis(w, 1), Axis(w, 2)}, inSize(w.inSize()),
        outSize(w.outSize()), afterDim2(w.in[0] * w.in[1] * w.out[2]),
        afterDim1(w.in[0] * w.out[1] * w.out[2]) {}
};

/// The forward pass's select: the larger, or a NaN. Written NaN test first:
/// the form GCC vectorizes in every loop below and compiles to selects in
/// their scalar tails (`v > m || v != v` left a branch there, mispredicted
/// half the time on short rows).
inline float maxOrNan(float v, float m) { return v != v ? v : (m < v ? v : m); }

/// dst[q] = max over t < K of src[q * S + t], q < n, the taps in order (the
/// first of equal values stays): every tap in one loop body, whose loads
/// the compiler turns into vector loads and permutes, where a loop per tap
/// loaded its strided elements one by one.
template <int K, int S>
void maxOfRuns(const float *src, int64_t n, float *dst) {
  for (int64_t q = 0; q < n; ++q) {
    float m = src[q * S];
    for (int t = 1; t < K; ++t)
      m = maxOrNan(src[q * S + t], m);
    dst[q] = m;
  }
}

/// dst[j] = max over t < K of src[t * inner + j], j < inner: K consecutive
/// rows in one pass over the output row.
template <int K> void maxOfRows(const float *src, int64_t inner, float *dst) {
  CLEAVE_SIMD
  for (int64_t j = 0; j < inner; ++j) {
    float m = src[j];
    for (int t = 1; t < K; ++t)
      m = maxOrNan(src[t * inner + j], m);
    dst[j] = m;
  }
}

/// The number of taps the fused loops take (2 or 3, consecutive), or 0.
int fusedTaps(const Axis &a) {
  int k = int(a.taps.size());
  return a.consecutive && (k == 2 || k == 3) ? k : 0;
}

/// Calls f(o) for each output of a row along `a`: all of them, or those
/// outside [a.lo, a.hi) where a fused loop took the others.
template <typename F>
void forEachOutput(const Axis &a, bool skipInterior, F f) {
  int64_t end = skipInterior ? a.lo : a.out;
  for (int64_t o = 0; o < end; ++o)
    f(o);
  for (int64_t o = skipInterior ? a.hi : a.out; o < a.out; ++o)
    f(o);
}

/// dst[r, o, j] = max over taps of src[r, o * stride + off, j], for
/// src [outer, a.in, inner] and dst [outer, a.out, inner]. Taps in order,
/// so the first of equal values stays. Outputs where every tap reads
/// inside the input take the fused loops above where they apply; the
/// others, a tap at a time.
void maxAlong(const float *src, int64_t outer, const Axis &a, int64_t inner,
              float *dst) {
  int k = fusedTaps(a);
  int64_t off = a.taps.empty() ? 0 : a.taps[0].off;
  using Runs = void (*)(const float *, int64_t, float *);
  Runs runs = nullptr;
  if (inner == 1 && a.stride <= 2 && k)
    runs = a.stride == 1 ? (k == 2 ? maxOfRuns<2, 1> : maxOfRuns<3, 1>)
                         : (k == 2 ? maxOfRuns<2, 2> : maxOfRuns<3, 2>);
  int64_t qlo, qhi;
  bool flat = runs && a.flatRange(outer, qlo, qhi);
  if (flat)
    runs(src + qlo * a.stride + off, qhi - qlo, dst + qlo);
  for (int64_t r = 0; r < outer; ++r) {
    const float *s = src + r * a.in * inner;
    float *d = dst + r * a.out * inner;
    if (runs && !flat)
      runs(s + a.lo * a.stride + off, a.hi - a.lo, d + a.lo);
    forEachOutput(a, runs != nullptr, [&](int64_t o) {
      float *dr = d + o * inner;
      if (k && o >= a.lo && o < a.hi) {
        const float *first = s + (o * a.stride + off) * inner;
        (k == 2 ? maxOfRows<2> : maxOfRows<3>)(first, inner, dr);
        return;
      }
      std::fill(dr, dr + inner, kNegInf);
      for (const AxisTap &t : a.taps) {
        if (o < t.lo || o >= t.hi)
          continue;
        const float *sr = s + (o * a.stride + t.off) * inner;
        CLEAVE_SIMD
        for (int64_t j = 0; j < inner; ++j)
          dr[j] = maxOrNan(sr[j], dr[j]);
      }
    });
  }
}

/// The plane index of no element: a window wholly in the padding, or no
/// tap taken yet. The largest index, so that every real one is earlier.
template <typename Index>
constexpr Index kNone = std::numeric_limits<Index>::max();

/// The backward pass's select: whether the value v at plane index `from`
/// replaces the best so far, b at `arg` (kNone: none yet; `from` is kNone,
/// with v -inf, where a window lies wholly in the padding along an earlier
/// axis). The argmax is the row-major scan's: the largest value at the
/// smallest index, or the first NaN. Comparing indices makes the result
/// independent of the order of the axes' passes. Ordered: the caller knows
/// no value is a NaN, and the fewer comparisons let the compiler vectorize
/// the loops below (it gives up on the full expression). Non-short-circuit
/// operators, so that this compiles to selects.
template <bool Ordered, typename Index>
inline bool takes(float v, Index from, float b, Index arg) {
  bool earlier = from < arg;
  bool better = (v > b) | ((v == b) & earlier);
  if constexpr (Ordered)
    return better;
  else
    return better | ((v != v) & ((b == b) | earlier));
}

/// Where the argmax passes read: src and its plane indices srcArg, or
/// (srcArg null) the plane itself, whose indices are its positions.
template <typename Index> struct ArgSource {
  const float *src;
  const Index *srcArg;

  Index at(int64_t i) const { return srcArg ? srcArg[i] : Index(i); }
};

/// The best so far (b at arg) after the value v at index `from`.
template <bool Ordered, typename Index>
inline void select(float v, Index from, float &b, Index &arg) {
  bool take = takes<Ordered>(v, from, b, arg);
  b = take ? v : b;
  arg = take ? from : arg;
}

/// The argmax over taps T of src[q * S + T] for q < n: maxOfRuns,
/// carrying the indices srcArg holds.
template <bool Ordered, int S, typename Index, int... T>
void argmaxOfRuns(const float *src, const Index *srcArg, int64_t n, float *dst,
                  Index *dstArg, std::integer_sequence<int, T...>) {
  for (int64_t q = 0; q < n; ++q) {
    float b = kNegInf;
    Index arg = kNone<Index>;
    (select<Ordered>(src[q * S + T], srcArg[q * S + T], b, arg), ...);
    dst[q] = b;
    dstArg[q] = arg;
  }
}

/// The argmax over taps T of the rows src + T * inner, j < inner:
/// maxOfRows, carrying the indices srcArg holds (Indexed) or first + the
/// offset from src.
template <bool Ordered, bool Indexed, typename Index, int... T>
void argmaxOfRows(const float *src, const Index *srcArg, Index first,
                  int64_t inner, float *dst, Index *dstArg,
                  std::integer_sequence<int, T...>) {
  for (int64_t j = 0; j < inner; ++j) {
    float b = kNegInf;
    Index arg = kNone<Index>;
    (select<Ordered>(src[T * inner + j],
                     Indexed ? srcArg[T * inner + j]
                             : Index(first + T * inner + j),
                     b, arg),
     ...);
    dst[j] = b;
    dstArg[j] = arg;
  }
}

/// maxAlong, carrying each max's plane index. Index is int32_t where a
/// plane allows: as wide as a float, the selects stay in one vector width.
template <bool Ordered, typename Index>
void argmaxAlong(ArgSource<Index> from, int64_t outer, const Axis &a,
                 int64_t inner, float *dst, Index *dstArg) {
  using Runs2 = std::integer_sequence<int, 0, 1>;
  using Runs3 = std::integer_sequence<int, 0, 1, 2>;
  const float *src = from.src;
  const Index *srcArg = from.srcArg;
  int k = fusedTaps(a);
  int64_t off = a.taps.empty() ? 0 : a.taps[0].off;
  // The fused loop over n outputs of a row from element i on.
  bool fusedRuns = inner == 1 && srcArg && a.stride <= 2 && k;
  auto runs = [&](int64_t i, int64_t n, float *d, Index *dArg) {
    const float *s = src + i;
    const Index *sArg = srcArg + i;
    if (a.stride == 1)
      k == 2 ? argmaxOfRuns<Ordered, 1>(s, sArg, n, d, dArg, Runs2{})
             : argmaxOfRuns<Ordered, 1>(s, sArg, n, d, dArg, Runs3{});
    else
      k == 2 ? argmaxOfRuns<Ordered, 2>(s, sArg, n, d, dArg, Runs2{})
             : argmaxOfRuns<Ordered, 2>(s, sArg, n, d, dArg, Runs3{});
  };
  int64_t qlo, qhi;
  bool flat = fusedRuns && a.flatRange(outer, qlo, qhi);
  if (flat)
    runs(qlo * a.stride + off, qhi - qlo, dst + qlo, dstArg + qlo);
  for (int64_t r = 0; r < outer; ++r) {
    int64_t in = r * a.in * inner, out = r * a.out * inner;
    if (fusedRuns && !flat)
      runs(in + a.lo * a.stride + off, a.hi - a.lo, dst + out + a.lo,
           dstArg + out + a.lo);
    forEachOutput(a, fusedRuns, [&](int64_t o) {
      int64_t q = out + o * inner;
      if (k && o >= a.lo && o < a.hi) {
        int64_t i = in + (o * a.stride + off) * inner;
        const Index *sArg = srcArg ? srcArg + i : nullptr;
        auto rows = [&](auto taps) {
          if (srcArg)
            argmaxOfRows<Ordered, true>(src + i, sArg, Index(i), inner, dst + q,
                                        dstArg + q, taps);
          else
            argmaxOfRows<Ordered, false>(src + i, sArg, Index(i), inner,
                                         dst + q, dstArg + q, taps);
        };
        k == 2 ? rows(Runs2{}) : rows(Runs3{});
        return;
      }
      std::fill(dst + q, dst + q + inner, kNegInf);
      std::fill(dstArg + q, dstArg + q + inner, kNone<Index>);
      for (const AxisTap &t : a.taps) {
        if (o < t.lo || o >= t.hi)
          continue;
        int64_t i = in + (o * a.stride + t.off) * inner;
        CLEAVE_SIMD
        for (int64_t j = 0; j < inner; ++j)
          select<Ordered>(src[i + j], from.at(i + j), dst[q + j],
                          dstArg[q + j]);
      }
    });
  }
}

/// Whether a pass along `a` would copy its input: one tap reading each
/// output's own position.
bool isIdentity(const Axis &a) {
  return a.in == a.out && a.stride == 1 && a.taps.size() == 1 &&
         a.taps[0].off == 0 && a.taps[0].lo == 0 && a.taps[0].hi == a.out;
}

} // namespace

void maxPool(const float *x, const Shape &xShape, const int64_t *kernel,
             const int64_t *strides, const int64_t *pads,
             const int64_t *dilations, float *y, const Shape &yShape) {
  Window3 win(xShape, yShape, kernel, strides, pads, dilations);
  Separable sep(win);
  int64_t planes = xShape.dims[0] * xShape.dims[1];
  bool parallel = planes * sep.outSize * win.kernelSize() > kParallelGrain;
  // Dims 2, 1, 0 in turn (the first of equal values along the last axis
  // first: the row-major scan's winner); a pass along dim d runs over
  // outer[d] rows of inner[d] contiguous elements per position. Passes that
  // would copy their input are skipped.
  int64_t outer[3] = {1, win.in[0], win.in[0] * win.in[1]};
  int64_t inner[3] = {win.out[1] * win.out[2], win.out[2], 1};
  int passes[3], count = 0;
  for (int d = 2; d >= 0; --d)
    if (!isIdentity(sep.axes[d]))
      passes[count++] = d;
#pragma omp parallel if (parallel)
  {
    std::vector<float> t2(sep.afterDim2), t1(sep.afterDim1);
#pragma omp for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      const float *src = x + p * sep.inSize;
      float *out = y + p * sep.outSize;
      if (count == 0)
        std::copy(src, src + sep.inSize, out);
      for (int i = 0; i < count; ++i) {
        int d = passes[i];
        float *dst = i + 1 == count ? out : d == 2 ? t2.data() : t1.data();
        maxAlong(src, outer[d], sep.axes[d], inner[d], dst);
        src = dst;
      }
    }
  }
}

namespace {

/// maxPoolGrad with plane indices of type Index.
template <typename Index>
void maxPoolGradAs(const float *dy, const float *x, const Window3 &win,
                   const Separable &sep, int64_t planes, float *dx) {
  bool parallel = planes * sep.outSize * win.kernelSize() > kParallelGrain;
#pragma omp parallel if (parallel)
  {
    // The contiguous passes first (dims 0 and 1, along whole rows), then the
    // strided one along dim 2 over the fewer rows they leave; axes a pass
    // would copy are skipped.
    int64_t afterDim0 = win.out[0] * win.in[1] * win.in[2];
    int64_t afterDim1 = win.out[0] * win.out[1] * win.in[2];
    std::vector<float> v0(afterDim0), v1(afterDim1), best(sep.outSize);
    std::vector<Index> a0(afterDim0), a1(afterDim1), arg(sep.outSize);
    auto passes = [&](auto ordered, const float *plane) {
      constexpr bool kOrdered = decltype(ordered)::value;
      ArgSource<Index> from{plane, nullptr};
      if (!isIdentity(sep.axes[0])) {
        argmaxAlong<kOrdered>(from, 1, sep.axes[0], win.in[1] * win.in[2],
                              v0.data(), a0.data());
        from = {v0.data(), a0.data()};
      }
      if (!isIdentity(sep.axes[1])) {
        argmaxAlong<kOrdered>(from, win.out[0], sep.axes[1], win.in[2],
                              v1.data(), a1.data());
        from = {v1.data(), a1.data()};
      }
      argmaxAlong<kOrdered>(from, win.out[0] * win.out[1], sep.axes[2], 1,
                            best.data(), arg.data());
    };
#pragma omp for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      const float *plane = x + p * sep.inSize;
      int64_t nans = 0;
      CLEAVE_SIMD_SUM(nans)
      for (int64_t i = 0; i < sep.inSize; ++i)
        nans += plane[i] != plane[i];
      if (nans)
        passes(std::false_type{}, plane);
      else
        passes(std::true_type{}, plane);
      // Each dy element goes to its window's argmax (kNone: the window lies
      // in the padding), in output order as windows may share one.
      const float *dyp = dy + p * sep.outSize;
      float *dxp = dx + p * sep.inSize;
      std::fill(dxp, dxp + sep.inSize, 0.0f);
      for (int64_t o = 0; o < sep.outSize; ++o)
        if (arg[o] != kNone<Index>)
          dxp[arg[o]] += dyp[o];
    }
  }
}

} // namespace

void maxPoolGrad(const float *dy, const Shape &yShape, const float *x,
                 const Shape &xShape, const int64_t *kernel,
                 const int64_t *strides, const int64_t *pads,
                 const int64_t *dilations, float *dx) {
  Window3 win(xShape, yShape, kernel, strides, pads, dilations);
  Separable sep(win);
  int64_t planes = xShape.dims[0] * xShape.dims[1];
  if (sep.inSize <= std::numeric_limits<int32_t>::max())
    maxPoolGradAs<int32_t>(dy, x, win, sep, planes, dx);
  else
    maxPoolGradAs<int64_t>(dy, x, win, sep, planes, dx);
}

} // namespace cleave::rt
