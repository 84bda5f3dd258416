//===- KernelsMaxPool.cpp - MaxPool forward and backward ------------------===//
//
// Part of the Cleave runtime. A window's max is taken one spatial axis at a
// time: the forward pass along dim 2 of every input row, then along dim 1
// of those, then dim 0; the backward pass's argmax along dims 0 and 1
// first (whole contiguous rows), then along dim 2 of the rows left. Passes
// along contiguous rows run in vector registers, where one loop over a
// window's taps per output ran short strided loops (ResNet-18's 3x3
// stride-2 pool and its gradient were 5% of its step).
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

  Axis(const Window3 &w, int d)
      : in(w.in[d]), out(w.out[d]), stride(w.stride[d]) {
    for (int64_t k = 0; k < w.kernel[d]; ++k) {
      AxisTap t;
      t.off = k * w.dilation[d] - w.padBegin[d];
      validRange(out, stride, t.off, in, t.lo, t.hi);
      if (t.lo < t.hi)
        taps.push_back(t);
    }
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

/// The forward pass's select: the larger, or a NaN.
inline float maxOrNan(float v, float m) { return v > m || v != v ? v : m; }

/// Whether tap t of a strided pass (inner 1) reads every output of every
/// row, and rows are exactly out * stride long: then output q of the
/// flattened [outer, out] reads input q * stride + off, one long loop over
/// all rows instead of one short loop per row (a 2x2 stride-2 pool's rows
/// are 14 outputs long at 28x28, where a loop's start-up outweighed it).
bool spansRows(const Axis &a, const AxisTap &t) {
  return t.lo == 0 && t.hi == a.out && a.in == a.out * a.stride;
}

/// dst[r, o, j] = max over taps of src[r, o * stride + off, j], for
/// src [outer, a.in, inner] and dst [outer, a.out, inner]. Taps in order,
/// so the first of equal values stays.
void maxAlong(const float *src, int64_t outer, const Axis &a, int64_t inner,
              float *dst) {
  std::fill(dst, dst + outer * a.out * inner, kNegInf);
  for (const AxisTap &t : a.taps) {
    if (inner == 1 && spansRows(a, t)) {
      CLEAVE_SIMD
      for (int64_t q = 0; q < outer * a.out; ++q)
        dst[q] = maxOrNan(src[q * a.stride + t.off], dst[q]);
      continue;
    }
    for (int64_t r = 0; r < outer; ++r) {
      const float *s = src + r * a.in * inner;
      float *d = dst + r * a.out * inner;
      if (inner == 1) {
        CLEAVE_SIMD
        for (int64_t o = t.lo; o < t.hi; ++o)
          d[o] = maxOrNan(s[o * a.stride + t.off], d[o]);
        continue;
      }
      for (int64_t o = t.lo; o < t.hi; ++o) {
        const float *sr = s + (o * a.stride + t.off) * inner;
        float *dr = d + o * inner;
        CLEAVE_SIMD
        for (int64_t j = 0; j < inner; ++j)
          dr[j] = maxOrNan(sr[j], dr[j]);
      }
    }
  }
}

/// The backward pass's select: whether the value v at plane index `from`
/// replaces the best so far, b at `arg` (-1: none yet; `from` is -1 where
/// a window lies wholly in the padding along an earlier axis). The argmax
/// is the row-major scan's: the largest value at the smallest index, or
/// the first NaN. Comparing indices makes the result independent of the
/// order of the axes' passes. Non-short-circuit operators, so that this
/// compiles to selects.
template <typename Index>
inline bool takes(float v, Index from, float b, Index arg) {
  bool earlier = (arg < 0) | (from < arg);
  bool better = (v > b) | ((v == b) & earlier) |
                ((v != v) & ((b == b) | earlier));
  return (from >= 0) & ((arg < 0) | better);
}

/// maxAlong, carrying each max's plane index; srcArg null: src is the plane
/// itself, whose indices are its positions. Index is int32_t where a plane
/// allows: as wide as a float, the selects stay in one vector width.
template <typename Index>
void argmaxAlong(const float *src, const Index *srcArg, int64_t outer,
                 const Axis &a, int64_t inner, float *dst, Index *dstArg) {
  int64_t outputs = outer * a.out * inner;
  std::fill(dst, dst + outputs, kNegInf);
  std::fill(dstArg, dstArg + outputs, Index(-1));
  // dst[q] against src[i]: the one select of every loop below.
  auto select = [&](int64_t q, int64_t i) {
    float v = src[i], b = dst[q];
    Index from = srcArg ? srcArg[i] : Index(i), arg = dstArg[q];
    bool take = takes(v, from, b, arg);
    dst[q] = take ? v : b;
    dstArg[q] = take ? from : arg;
  };
  for (const AxisTap &t : a.taps) {
    if (inner == 1 && spansRows(a, t)) {
      CLEAVE_SIMD
      for (int64_t q = 0; q < outputs; ++q)
        select(q, q * a.stride + t.off);
      continue;
    }
    for (int64_t r = 0; r < outer; ++r) {
      int64_t in = r * a.in * inner, out = r * a.out * inner;
      if (inner == 1) {
        CLEAVE_SIMD
        for (int64_t o = t.lo; o < t.hi; ++o)
          select(out + o, in + o * a.stride + t.off);
        continue;
      }
      for (int64_t o = t.lo; o < t.hi; ++o) {
        int64_t i = in + (o * a.stride + t.off) * inner, q = out + o * inner;
        CLEAVE_SIMD
        for (int64_t j = 0; j < inner; ++j)
          select(q + j, i + j);
      }
    }
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
#pragma omp for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      const float *v = x + p * sep.inSize;
      const Index *a = nullptr;
      if (!isIdentity(sep.axes[0])) {
        argmaxAlong(v, a, 1, sep.axes[0], win.in[1] * win.in[2], v0.data(),
                    a0.data());
        v = v0.data();
        a = a0.data();
      }
      if (!isIdentity(sep.axes[1])) {
        argmaxAlong(v, a, win.out[0], sep.axes[1], win.in[2], v1.data(),
                    a1.data());
        v = v1.data();
        a = a1.data();
      }
      argmaxAlong(v, a, win.out[0] * win.out[1], sep.axes[2], 1, best.data(),
                  arg.data());
      // Each dy element goes to its window's argmax (-1: the window lies
      // in the padding), in output order as windows may share one.
      const float *dyp = dy + p * sep.outSize;
      float *dxp = dx + p * sep.inSize;
      std::fill(dxp, dxp + sep.inSize, 0.0f);
      for (int64_t o = 0; o < sep.outSize; ++o)
        if (arg[o] >= 0)
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
