//===- NormalizationBodies.h - softmax and norm work items ------*- C++ -*-===//
//
// Part of the Cleave runtime. The work items of the softmax, layer-norm and
// batch-norm kernels of both targets: the cuda target launches them
// (cuda/KernelsNormalization.cu), the cpu target runs them in OpenMP loops
// (KernelsNormalization.cpp). An item is a line of a softmax, a row of a
// layer norm, a channel of a batch norm; sums accumulate in double. Column
// sums are their own items, each summing its column over all rows in order,
// so that no atomics (and no run-to-run differences) are needed.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_NORMALIZATIONBODIES_H
#define CLEAVE_RUNTIME_NORMALIZATIONBODIES_H

#include "runtime/BroadcastBodies.h"
#include "runtime/HostDevice.h"
#include "runtime/KernelTypes.h"
#include "runtime/Shape.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace cleave::body {

//===----------------------------------------------------------------------===//
// Softmax along an axis
//===----------------------------------------------------------------------===//

/// A tensor seen as [outer, d, inner] around one axis. Its lines along the
/// axis (outer * inner of them, d elements `inner` apart) are the work items
/// of the softmax kernels.
struct AxisView {
  int64_t outer = 1;
  int64_t d = 1;
  int64_t inner = 1;

  AxisView() = default;
  /// `axis` may be negative (counted from the end), as the kernels take it.
  AxisView(const rt::Shape &shape, int axis) {
    if (axis < 0)
      axis += shape.rank;
    outer = shape.product(0, axis);
    d = shape.dims[axis];
    inner = shape.product(axis + 1, shape.rank);
  }

  CLEAVE_HD int64_t lines() const { return outer * inner; }
  /// Flat index of the first element of line `line`.
  CLEAVE_HD int64_t start(int64_t line) const {
    return line / inner * d * inner + line % inner;
  }
};

/// exp's argument in softmax is clamped here: exp stays a normal float
/// (and libmvec's vector expf on its fast path: below -87.33 it redoes each
/// such lane with the scalar expf, and a causal mask sends half of the
/// scores there). The sum, at least 1, does not see the difference;
/// softmax writes 0 where exp gave less than kExpFlush = 2^-125 (exp's true
/// value there is no more than that, flushed to zero).
constexpr float kExpFloor = -87.0f;
constexpr float kExpFlush = 0x1p-125f;

/// Softmax (or log-softmax) of one line: y = exp(x - max) / sum, or
/// (x - max) - log(sum), with the sum in double. The line's elements are
/// `step` apart; the loops are written for a constant step of 1 too, the
/// common last-axis case, which then runs in vector registers. (exp and
/// the sum in double are separate loops: g++ vectorizes neither when they
/// share one with the clamp.) x and y may be the same buffer.
struct SoftmaxLine {
  const float *x;
  float *y;
  AxisView view;
  bool log;

  /// For the log-softmax's exps, which y cannot hold while x is still read.
  static constexpr int64_t kChunk = 64;

  template <typename Step>
  CLEAVE_HD static float lineMax(const float *xl, int64_t d, Step step) {
    // Written as std::max(maxVal, v) is. (A NaN makes the whole line NaN
    // through the sum, wherever the maximum lands.)
    float maxVal = -HUGE_VALF;
    CLEAVE_SIMD_MAX(maxVal)
    for (int64_t i = 0; i < d; ++i)
      maxVal = maxVal < xl[i * step] ? xl[i * step] : maxVal;
    return maxVal;
  }

  /// The softmax of a line whose maximum is known.
  template <typename Step>
  CLEAVE_HD static void finish(const float *xl, float *yl, int64_t d, Step step,
                               bool log, float maxVal) {
    // The floor as a value g++ cannot fold: with the constant, it rewrites
    // exp(t < floor ? floor : t) as t < floor ? exp(floor) : exp(t) and
    // calls exp on the unclamped t. (NaN stays NaN through the clamp: NaN <
    // floor is false. An infinite or NaN maximum makes the floor NaN, and
    // the line is NaN anyway.)
    const float floor = kExpFloor + 0.0f * maxVal;
    auto shiftedExp = [&](int64_t i) {
      float t = xl[i * step] - maxVal;
      return std::exp(t < floor ? floor : t);
    };
    double sum = 0.0;
    if (log) {
      float e[kChunk];
      for (int64_t first = 0; first < d; first += kChunk) {
        int64_t n = d - first < kChunk ? d - first : kChunk;
        CLEAVE_SIMD
        for (int64_t j = 0; j < n; ++j)
          e[j] = shiftedExp(first + j);
        CLEAVE_SIMD_SUM(sum)
        for (int64_t j = 0; j < n; ++j)
          sum += e[j];
      }
      // (x - max) - log(sum): folding max into the shift first would round
      // at the magnitude of x.
      float logSum = static_cast<float>(std::log(sum));
      CLEAVE_SIMD
      for (int64_t i = 0; i < d; ++i)
        yl[i * step] = (xl[i * step] - maxVal) - logSum;
      return;
    }
    CLEAVE_SIMD
    for (int64_t i = 0; i < d; ++i)
      yl[i * step] = shiftedExp(i);
    CLEAVE_SIMD_SUM(sum)
    for (int64_t i = 0; i < d; ++i)
      sum += yl[i * step];
    float scale = static_cast<float>(1.0 / sum);
    CLEAVE_SIMD
    for (int64_t i = 0; i < d; ++i)
      yl[i * step] = yl[i * step] < kExpFlush ? 0.0f : yl[i * step] * scale;
  }

  template <typename Step>
  CLEAVE_HD void run(const float *xl, float *yl, Step step) const {
    finish(xl, yl, view.d, step, log, lineMax(xl, view.d, step));
  }

  CLEAVE_HD void operator()(int64_t line) const {
    const float *xl = x + view.start(line);
    float *yl = y + view.start(line);
    if (view.inner == 1)
      run(xl, yl, std::integral_constant<int64_t, 1>());
    else
      run(xl, yl, view.inner);
  }
};

/// Attention's scale and mask (rt::SoftmaxMasking) on one line of a softmax
/// or its gradient, in place in that line: each part is its own loop over
/// the line, which is in cache by then (vector code for each, where one
/// loop of optional parts would branch per element); a contiguous line's
/// forward takes all parts in one loop instantiated per combination
/// (scaleMaskMax).
struct LineMasking {
  rt::SoftmaxMasking masking;
  /// Where the mask of element i of the softmax's tensor is: the mask's
  /// broadcast strides with adjacent dims merged where they index alike
  /// (a causal [1, 1, S, S] mask is one dim of S * S, repeated), so that a
  /// line's offset costs a division or two, not two per dim.
  int rank = 0;
  int64_t dims[rt::kMaxRank] = {};
  int64_t strides[rt::kMaxRank] = {};
  /// The mask's step along the axis.
  int64_t maskStep = 0;
  /// The mask's offset of each line, when the caller tabled them (the cpu
  /// kernels: without a division per line); else computed by offset().
  const int64_t *lineOffsets = nullptr;

  LineMasking(const rt::SoftmaxMasking &masking, const rt::Shape &shape,
              int axis)
      : masking(masking) {
    BroadcastIndex index(masking.maskShape, shape);
    maskStep = index.strides[axis < 0 ? axis + shape.rank : axis];
    for (int d = 0; d < index.rank; ++d) {
      if (index.dims[d] == 1)
        continue;
      bool merges = rank > 0 && (strides[rank - 1] == 0
                                     ? index.strides[d] == 0
                                     : strides[rank - 1] ==
                                           index.strides[d] * index.dims[d]);
      if (merges) {
        dims[rank - 1] *= index.dims[d];
        strides[rank - 1] = index.strides[d];
      } else {
        dims[rank] = index.dims[d];
        strides[rank] = index.strides[d];
        ++rank;
      }
    }
  }

  /// The mask's offset of line `line`, which starts at flat index `start`.
  CLEAVE_HD int64_t lineOffset(int64_t line, int64_t start) const {
    return lineOffsets ? lineOffsets[line] : offset(start);
  }

  /// The mask's offset for flat element i.
  CLEAVE_HD int64_t offset(int64_t i) const {
    int64_t at = 0;
    for (int d = rank - 1; d >= 0 && i > 0; --d) {
      at += (i % dims[d]) * strides[d];
      i /= dims[d];
    }
    return at;
  }

  /// z = x * scale (or x / scale); z = x without a scale. z may be x.
  template <typename Step>
  CLEAVE_HD void scale(const float *xl, float *zl, int64_t d,
                       Step step) const {
    if (!masking.scale) {
      if (xl != zl) {
        CLEAVE_SIMD
        for (int64_t i = 0; i < d; ++i)
          zl[i * step] = xl[i * step];
      }
      return;
    }
    const float s = *masking.scale;
    if (masking.divide) {
      CLEAVE_SIMD
      for (int64_t i = 0; i < d; ++i)
        zl[i * step] = xl[i * step] / s;
    } else {
      CLEAVE_SIMD
      for (int64_t i = 0; i < d; ++i)
        zl[i * step] = xl[i * step] * s;
    }
  }

  /// z += mask, then z = where(condition == keepWhen, z, fill), for the line
  /// whose mask starts at offset `at`. (Not an overload of mask(): with
  /// MaskStep = int64_t, mask(zl, d, step, at, maskStep) chose that more
  /// specialized overload, itself, and never returned.)
  template <typename Step, typename MaskStep>
  CLEAVE_HD void maskAt(float *zl, int64_t d, Step step, int64_t at,
                        MaskStep maskStep) const {
    if (masking.mask) {
      const float *ml = masking.mask + at;
      CLEAVE_SIMD
      for (int64_t i = 0; i < d; ++i)
        zl[i * step] = zl[i * step] + ml[i * maskStep];
    }
    if (masking.condition) {
      const bool *cl = masking.condition + at;
      const float fill = *masking.fill;
      // As mapTernary's Where: a select of two values loaded whatever the
      // byte (g++ vectorizes no load under a condition, nor a comparison
      // of the byte with a variable).
      if (masking.keepWhen) {
        CLEAVE_SIMD
        for (int64_t i = 0; i < d; ++i) {
          const float z = zl[i * step];
          zl[i * step] = loadElement(cl, i * maskStep) ? z : fill;
        }
      } else {
        CLEAVE_SIMD
        for (int64_t i = 0; i < d; ++i) {
          const float z = zl[i * step];
          zl[i * step] = loadElement(cl, i * maskStep) ? fill : z;
        }
      }
    }
  }

  /// scale(), then mask(), then the maximum, as one loop over a contiguous
  /// line (z may be x): on lines of 64 the three loops' setup and the
  /// passes over z cost as much as the softmax after them (measured:
  /// [8,4,64,64] causal, 1 thread, 143 us as three loops, 102 us as one,
  /// 105 us unfused). `at` is the line's mask offset, whose step along the
  /// line is 0 or 1.
  template <typename MaskStep>
  CLEAVE_HD float scaleMaskMax(const float *xl, float *zl, int64_t d,
                               int64_t at, MaskStep maskStep) const {
    const int scaling = !masking.scale   ? kNoScale
                        : masking.divide ? kDivide
                                         : kMultiply;
    if (masking.mask)
      return scaleMaskMaxScaled<true>(scaling, xl, zl, d, at, maskStep);
    return scaleMaskMaxScaled<false>(scaling, xl, zl, d, at, maskStep);
  }

  /// mask() with the mask's step a constant where it is 1 or 0 (a mask
  /// along the last axis, or repeated along it), so that it vectorizes.
  template <typename Step>
  CLEAVE_HD void mask(float *zl, int64_t d, Step step, int64_t line,
                      int64_t start) const {
    if (!masking.mask && !masking.condition)
      return;
    const int64_t at = lineOffset(line, start);
    if (maskStep == 1)
      maskAt(zl, d, step, at, std::integral_constant<int64_t, 1>());
    else if (maskStep == 0)
      maskAt(zl, d, step, at, std::integral_constant<int64_t, 0>());
    else
      maskAt(zl, d, step, at, maskStep);
  }

private:
  enum Scaling { kNoScale, kMultiply, kDivide };
  enum Selecting { kNoSelect, kKeepWhenTrue, kKeepWhenFalse };

  /// Reads one float of each 64-byte cache line of p[0, d) (host only).
  /// With a select, g++ folds it into the load of x (a multiply or move
  /// from memory under the condition's mask), and such masked loads from
  /// lines not yet in cache ran far slower: [4,12,256,256] causal, 1
  /// thread, 4.5-7.5 ms against 1.6 ms with the lines read first (2.0 ms
  /// before the one loop). The plain loads here bring them in.
  CLEAVE_HD static void touchLines(const float *p, int64_t d) {
#ifndef __CUDA_ARCH__
    float sum = 0.0f;
    for (int64_t i = 0; i < d; i += 16)
      sum += p[i];
    volatile float sink = sum;
    (void)sink;
#endif
  }

  /// scaleMaskMax's loop, one instantiation per combination of parts: a
  /// part chosen per element would branch in the loop.
  template <int Scale, bool Add, int Select, typename MaskStep>
  CLEAVE_HD static float scaleMaskMaxLoop(const float *xl, float *zl, int64_t d,
                                          float s, const float *ml,
                                          const bool *cl, float fill,
                                          MaskStep maskStep) {
    if constexpr (Select != kNoSelect)
      touchLines(xl, d);
    float maxVal = -HUGE_VALF;
    CLEAVE_SIMD_MAX(maxVal)
    for (int64_t i = 0; i < d; ++i) {
      float z = xl[i];
      if constexpr (Scale == kMultiply)
        z = z * s;
      if constexpr (Scale == kDivide)
        z = z / s;
      if constexpr (Add)
        z = z + ml[i * maskStep];
      if constexpr (Select == kKeepWhenTrue)
        z = loadElement(cl, i * maskStep) ? z : fill;
      if constexpr (Select == kKeepWhenFalse)
        z = loadElement(cl, i * maskStep) ? fill : z;
      zl[i] = z;
      maxVal = maxVal < z ? z : maxVal;
    }
    return maxVal;
  }

  template <bool Add, int Scale, typename MaskStep>
  CLEAVE_HD float scaleMaskMaxSelected(const float *xl, float *zl, int64_t d,
                                       int64_t at, MaskStep maskStep) const {
    const float s = masking.scale ? *masking.scale : 1.0f;
    const float *ml = Add ? masking.mask + at : nullptr;
    if (!masking.condition)
      return scaleMaskMaxLoop<Scale, Add, kNoSelect>(xl, zl, d, s, ml, nullptr,
                                                     0.0f, maskStep);
    const bool *cl = masking.condition + at;
    if (masking.keepWhen)
      return scaleMaskMaxLoop<Scale, Add, kKeepWhenTrue>(
          xl, zl, d, s, ml, cl, *masking.fill, maskStep);
    return scaleMaskMaxLoop<Scale, Add, kKeepWhenFalse>(
        xl, zl, d, s, ml, cl, *masking.fill, maskStep);
  }

  template <bool Add, typename MaskStep>
  CLEAVE_HD float scaleMaskMaxScaled(int scaling, const float *xl, float *zl,
                                     int64_t d, int64_t at,
                                     MaskStep maskStep) const {
    if (scaling == kMultiply)
      return scaleMaskMaxSelected<Add, kMultiply>(xl, zl, d, at, maskStep);
    if (scaling == kDivide)
      return scaleMaskMaxSelected<Add, kDivide>(xl, zl, d, at, maskStep);
    return scaleMaskMaxSelected<Add, kNoScale>(xl, zl, d, at, maskStep);
  }
};

/// softmaxMasked's line: y = softmax(where(c, x * scale + mask, fill)).
/// The masked scores are written to y's line, whose softmax then runs in
/// place (SoftmaxLine::finish). x and y may be the same buffer.
struct MaskedSoftmaxLine {
  const float *x;
  float *y;
  AxisView view;
  bool log;
  LineMasking masking;

  /// Writes the line's masked scores to y and returns their maximum.
  template <typename Step>
  CLEAVE_HD float load(int64_t line, Step step) const {
    const int64_t start = view.start(line), d = view.d;
    float *yl = y + start;
    if constexpr (std::is_same_v<Step, std::integral_constant<int64_t, 1>>) {
      const rt::SoftmaxMasking &m = masking.masking;
      const int64_t at =
          m.mask || m.condition ? masking.lineOffset(line, start) : 0;
      if (masking.maskStep == 1)
        return masking.scaleMaskMax(x + start, yl, d, at,
                                    std::integral_constant<int64_t, 1>());
      if (masking.maskStep == 0)
        return masking.scaleMaskMax(x + start, yl, d, at,
                                    std::integral_constant<int64_t, 0>());
    }
    masking.scale(x + start, yl, d, step);
    masking.mask(yl, d, step, line, start);
    return SoftmaxLine::lineMax(yl, d, step);
  }

  template <typename Step>
  CLEAVE_HD void run(int64_t line, Step step) const {
    float *yl = y + view.start(line);
    float maxVal = load(line, step);
    SoftmaxLine::finish(yl, yl, view.d, step, log, maxVal);
  }

  CLEAVE_HD void operator()(int64_t line) const {
    if (view.inner == 1)
      run(line, std::integral_constant<int64_t, 1>());
    else
      run(line, view.inner);
  }
};

/// dx of one line from y = softmax(x) and dy: y * (dy - sum(dy * y)), or for
/// log-softmax dy - exp(y) * sum(dy). Strided as SoftmaxLine.
struct SoftmaxGradLine {
  const float *y;
  const float *dy;
  float *dx;
  AxisView view;
  bool log;

  template <typename Step>
  CLEAVE_HD static void run(const float *yl, const float *dyl, float *dxl,
                            int64_t d, Step step, bool log) {
    double sum = 0.0;
    if (log) {
      CLEAVE_SIMD_SUM(sum)
      for (int64_t i = 0; i < d; ++i)
        sum += dyl[i * step];
      float s = static_cast<float>(sum);
      CLEAVE_SIMD
      for (int64_t i = 0; i < d; ++i)
        dxl[i * step] = dyl[i * step] - std::exp(yl[i * step]) * s;
      return;
    }
    CLEAVE_SIMD_SUM(sum)
    for (int64_t i = 0; i < d; ++i)
      sum += dyl[i * step] * yl[i * step];
    float s = static_cast<float>(sum);
    CLEAVE_SIMD
    for (int64_t i = 0; i < d; ++i)
      dxl[i * step] = yl[i * step] * (dyl[i * step] - s);
  }

  CLEAVE_HD void operator()(int64_t line) const {
    int64_t base = view.start(line);
    if (view.inner == 1)
      run(y + base, dy + base, dx + base, view.d,
          std::integral_constant<int64_t, 1>(), log);
    else
      run(y + base, dy + base, dx + base, view.d, view.inner, log);
  }
};

/// softmaxGradMasked's line: SoftmaxGradLine's dx, then where(c, dx, fill)
/// and the scale, in place in dx's line.
struct MaskedSoftmaxGradLine {
  const float *y;
  const float *dy;
  float *dx;
  AxisView view;
  bool log;
  LineMasking masking;

  template <typename Step>
  CLEAVE_HD void run(int64_t line, Step step) const {
    const int64_t start = view.start(line);
    float *dxl = dx + start;
    SoftmaxGradLine::run(y + start, dy + start, dxl, view.d, step, log);
    masking.mask(dxl, view.d, step, line, start);
    masking.scale(dxl, dxl, view.d, step);
  }

  CLEAVE_HD void operator()(int64_t line) const {
    if (view.inner == 1)
      run(line, std::integral_constant<int64_t, 1>());
    else
      run(line, view.inner);
  }
};

//===----------------------------------------------------------------------===//
// Layer normalization over the trailing dims
//===----------------------------------------------------------------------===//

/// A tensor seen as [rows, d], normalized over d (dims [axis, rank)).
struct RowView {
  int64_t rows = 0;
  int64_t d = 0;

  RowView() = default;
  RowView(const rt::Shape &shape, int axis) {
    if (axis < 0)
      axis += shape.rank;
    rows = shape.product(0, axis);
    d = shape.product(axis, shape.rank);
  }
};

/// One row of ONNX LayerNormalization: y = (x - mean) * invStd * scale
/// (+ bias, which may be null); mean and invStd (each may be null) get the
/// row's statistics. The variance is biased, as ONNX and torch use.
struct LayerNormRow {
  const float *x;
  const float *scale;
  const float *bias;
  float *y;
  float *mean;
  float *invStd;
  int64_t d;
  float epsilon;

  CLEAVE_HD void operator()(int64_t r) const {
    const float *xr = x + r * d;
    float *yr = y + r * d;
    double sum = 0.0;
    CLEAVE_SIMD_SUM(sum)
    for (int64_t i = 0; i < d; ++i)
      sum += xr[i];
    double mu = sum / d;
    double sq = 0.0;
    CLEAVE_SIMD_SUM(sq)
    for (int64_t i = 0; i < d; ++i) {
      double c = xr[i] - mu;
      sq += c * c;
    }
    float rstd = static_cast<float>(1.0 / std::sqrt(sq / d + epsilon));
    float m = static_cast<float>(mu);
    if (bias) {
      CLEAVE_SIMD
      for (int64_t i = 0; i < d; ++i)
        yr[i] = (xr[i] - m) * rstd * scale[i] + bias[i];
    } else {
      CLEAVE_SIMD
      for (int64_t i = 0; i < d; ++i)
        yr[i] = (xr[i] - m) * rstd * scale[i];
    }
    if (mean)
      mean[r] = m;
    if (invStd)
      invStd[r] = rstd;
  }
};

/// dx of one row of layerNorm: invStd * (g - mean(g) - xhat * mean(g *
/// xhat)) with g = dy * scale and xhat the normalized x.
struct LayerNormGradRow {
  const float *dy;
  const float *x;
  const float *scale;
  const float *mean;
  const float *invStd;
  float *dx;
  int64_t d;

  CLEAVE_HD void operator()(int64_t r) const {
    const float *xr = x + r * d;
    const float *dyr = dy + r * d;
    float *dxr = dx + r * d;
    float m = mean[r], rstd = invStd[r];
    double sumG = 0.0, sumGX = 0.0;
    CLEAVE_SIMD_SUM(sumG, sumGX)
    for (int64_t i = 0; i < d; ++i) {
      float xhat = (xr[i] - m) * rstd;
      float g = dyr[i] * scale[i];
      sumG += g;
      sumGX += static_cast<double>(g) * xhat;
    }
    float meanG = static_cast<float>(sumG / d);
    float meanGX = static_cast<float>(sumGX / d);
    CLEAVE_SIMD
    for (int64_t i = 0; i < d; ++i) {
      float xhat = (xr[i] - m) * rstd;
      dxr[i] = rstd * (dyr[i] * scale[i] - meanG - xhat * meanGX);
    }
  }
};

/// dScale and dBias (which may be null) of one column of layerNorm, summed
/// over all rows in row order: sum(dy * xhat) and sum(dy).
struct LayerNormGradColumn {
  const float *dy;
  const float *x;
  const float *mean;
  const float *invStd;
  float *dScale;
  float *dBias;
  RowView view;

  /// How many columns the cpu target's work item sums side by side.
  static constexpr int64_t kBlock = 64;

  CLEAVE_HD void operator()(int64_t i) const {
    double s = 0.0, b = 0.0;
    for (int64_t r = 0; r < view.rows; ++r) {
      int64_t k = r * view.d + i;
      float xhat = (x[k] - mean[r]) * invStd[r];
      s += static_cast<double>(dy[k]) * xhat;
      b += dy[k];
    }
    dScale[i] = static_cast<float>(s);
    if (dBias)
      dBias[i] = static_cast<float>(b);
  }

  /// Columns [kBlock * block, ...) at once, walking the rows in order (each
  /// column's sum in the same order as operator() takes it) along
  /// contiguous memory, in vector registers.
  void columns(int64_t block) const {
    int64_t first = block * kBlock;
    int64_t width = view.d - first < kBlock ? view.d - first : kBlock;
    double s[kBlock] = {}, b[kBlock] = {};
    for (int64_t r = 0; r < view.rows; ++r) {
      const float *xr = x + r * view.d + first;
      const float *dyr = dy + r * view.d + first;
      float m = mean[r], rstd = invStd[r];
      CLEAVE_SIMD
      for (int64_t j = 0; j < width; ++j) {
        float xhat = (xr[j] - m) * rstd;
        s[j] += static_cast<double>(dyr[j]) * xhat;
        b[j] += dyr[j];
      }
    }
    for (int64_t j = 0; j < width; ++j) {
      dScale[first + j] = static_cast<float>(s[j]);
      if (dBias)
        dBias[first + j] = static_cast<float>(b[j]);
    }
  }
};

//===----------------------------------------------------------------------===//
// Batch normalization over dim 1
//===----------------------------------------------------------------------===//

/// The sum of f(i) for i in [0, n), in double, as four interleaved partial
/// sums added as (s0 + s1) + (s2 + s3): a single chain of dependent
/// additions, not the loads, is what limits a long sum on a CPU core.
template <typename F> CLEAVE_HD double interleavedSum(int64_t n, const F &f) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += f(i);
    s1 += f(i + 1);
    s2 += f(i + 2);
    s3 += f(i + 3);
  }
  for (; i < n; ++i)
    s0 += f(i);
  return (s0 + s1) + (s2 + s3);
}

/// A tensor [N, C, ...] seen as [n, channels, s].
struct ChannelView {
  int64_t n = 0;
  int64_t channels = 0;
  int64_t s = 0;

  ChannelView() = default;
  explicit ChannelView(const rt::Shape &shape)
      : n(shape.dims[0]), channels(shape.dims[1]),
        s(shape.product(2, shape.rank)) {}

  CLEAVE_HD int64_t elements() const { return n * channels * s; }
  CLEAVE_HD int64_t planes() const { return n * channels; }
  /// The channel of flat element e.
  CLEAVE_HD int64_t channelOf(int64_t e) const { return e / s % channels; }

  /// The sum of x over channel c's elements, in double.
  CLEAVE_HD double sum(const float *x, int64_t c) const {
    double total = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      const float *p = x + (b * channels + c) * s;
      total += interleavedSum(s, [&](int64_t i) { return double(p[i]); });
    }
    return total;
  }

  /// The sum of (x - mean)^2 over channel c's elements, in double.
  CLEAVE_HD double squaredDeviations(const float *x, int64_t c,
                                     double mean) const {
    double total = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      const float *p = x + (b * channels + c) * s;
      total += interleavedSum(s, [&](int64_t i) {
        double dv = p[i] - mean;
        return dv * dv;
      });
    }
    return total;
  }

  /// Biased mean and variance of channel c, in double, two passes.
  CLEAVE_HD void stats(const float *x, int64_t c, double &mean,
                       double &var) const {
    int64_t count = n * s;
    mean = sum(x, c) / count;
    var = squaredDeviations(x, c, mean) / count;
  }
};

/// Phase 1 of batchNorm, one item per channel: the channel's statistics
/// (in training mode the given batchMean/batchVar, else the batch's when it
/// is not empty; the running ones otherwise), the new running statistics
/// (either output may be null), and the affine map y = x * a + b of phase
/// 2 in coef[2c], coef[2c + 1].
struct BatchNormChannel {
  const float *x;
  const float *scale;
  const float *bias;
  const float *runningMean;
  const float *runningVar;
  float *newRunningMean;
  float *newRunningVar;
  float *coef;
  ChannelView view;
  float epsilon;
  float momentum;
  bool training;
  /// The whole batch's statistics, or null (see batchNorm).
  const float *batchMean = nullptr;
  const float *batchVar = nullptr;

  CLEAVE_HD void operator()(int64_t c) const {
    float m, var;
    if (training && (batchMean || view.n * view.s > 0)) {
      if (batchMean) {
        m = batchMean[c];
        var = batchVar[c];
      } else {
        double dm, dv;
        view.stats(x, c, dm, dv);
        m = static_cast<float>(dm);
        var = static_cast<float>(dv);
      }
      if (newRunningMean)
        newRunningMean[c] = momentum * runningMean[c] + (1.0f - momentum) * m;
      if (newRunningVar)
        newRunningVar[c] = momentum * runningVar[c] + (1.0f - momentum) * var;
    } else {
      m = runningMean[c];
      var = runningVar[c];
      if (newRunningMean)
        newRunningMean[c] = runningMean[c];
      if (newRunningVar)
        newRunningVar[c] = runningVar[c];
    }
    float rstd = 1.0f / std::sqrt(var + epsilon);
    float a = scale[c] * rstd;
    coef[2 * c] = a;
    coef[2 * c + 1] = bias[c] - m * a;
  }
};

/// Phase 2 of batchNorm, one item per element: y = x * a + b of its channel.
/// Separate from phase 1 so that the writes of y are spread over all
/// threads rather than one per channel.
struct BatchNormApply {
  const float *x;
  const float *coef;
  float *y;
  ChannelView view;

  CLEAVE_HD void apply(int64_t e, int64_t c) const {
    y[e] = x[e] * coef[2 * c] + coef[2 * c + 1];
  }
  CLEAVE_HD void operator()(int64_t e) const { apply(e, view.channelOf(e)); }
  /// The items of plane p (sample p / channels, channel p % channels): the
  /// cpu target's unit, which spares each element a division.
  CLEAVE_HD void plane(int64_t p) const {
    for (int64_t e = p * view.s, end = e + view.s; e < end; ++e)
      apply(e, p % view.channels);
  }
};

/// A split batch's sums (batchNormSum, batchNormSquaredDeviationSum), one
/// item per channel: out[c] = sum(x) / divisor, or with mean given
/// sum((x - mean[c])^2) / divisor.
struct BatchNormSumChannel {
  const float *x;
  /// Null: the plain sum.
  const float *mean;
  float *out;
  ChannelView view;
  double divisor;

  CLEAVE_HD void operator()(int64_t c) const {
    double sum = mean ? view.squaredDeviations(x, c, mean[c]) : view.sum(x, c);
    out[c] = static_cast<float>(sum / divisor);
  }
};

/// A split batch's gradient sums (batchNormGradSums), one item per channel:
/// sumDy[c] = sum(dy), sumDyCentered[c] = sum(dy * (x - mean[c])).
struct BatchNormGradSumsChannel {
  const float *dy;
  const float *x;
  const float *mean;
  float *sumDy;
  float *sumDyCentered;
  ChannelView view;

  CLEAVE_HD void operator()(int64_t c) const {
    double m = mean[c];
    double total = 0.0, centered = 0.0;
    for (int64_t b = 0; b < view.n; ++b) {
      const float *xp = x + (b * view.channels + c) * view.s;
      const float *dyp = dy + (b * view.channels + c) * view.s;
      total +=
          interleavedSum(view.s, [&](int64_t i) { return double(dyp[i]); });
      centered += interleavedSum(view.s, [&](int64_t i) {
        return static_cast<double>(dyp[i]) * (xp[i] - m);
      });
    }
    sumDy[c] = static_cast<float>(total);
    sumDyCentered[c] = static_cast<float>(centered);
  }
};

/// Values per channel that BatchNormGradChannel hands to BatchNormGradApply.
constexpr int kBatchNormGradCoefs = 5;

/// Phase 1 of batchNormGrad, one item per channel: recomputes the batch
/// statistics (or takes the whole batch's, batchNormGradFromSums), writes
/// dScale = sum(dy * xhat) and dBias = sum(dy) (dBias may be null), and
/// leaves mean, invStd, scale * invStd, mean(dy) and mean(dy * xhat) in
/// coef[kBatchNormGradCoefs * c ...] for phase 2.
struct BatchNormGradChannel {
  const float *dy;
  const float *x;
  const float *scale;
  float *dScale;
  float *dBias;
  float *coef;
  ChannelView view;
  float epsilon;
  /// The whole batch's mean, biased variance, sum(dy) and
  /// sum(dy * (x - mean)) per channel and its elements per channel, of a
  /// batch split over ranks; null: this input's.
  const float *batchMean = nullptr;
  const float *batchVar = nullptr;
  const float *batchSumDy = nullptr;
  const float *batchSumDyCentered = nullptr;
  double batchCount = 0.0;

  CLEAVE_HD void operator()(int64_t c) const {
    double count = static_cast<double>(view.n * view.s);
    float m, rstd;
    double sumDy = 0.0, sumDyXhat = 0.0;
    if (batchMean) {
      // As batchNormGradFromSums on the cpu target.
      count = batchCount;
      m = batchMean[c];
      rstd = static_cast<float>(
          1.0 / std::sqrt(static_cast<double>(batchVar[c]) + epsilon));
      sumDy = batchSumDy[c];
      sumDyXhat = static_cast<double>(batchSumDyCentered[c]) * rstd;
    } else if (count == 0) {
      // No elements, so phase 2 has no items: only the sums are due.
      dScale[c] = 0.0f;
      if (dBias)
        dBias[c] = 0.0f;
      return;
    } else {
      double dm, dv;
      view.stats(x, c, dm, dv);
      m = static_cast<float>(dm);
      rstd = static_cast<float>(1.0 / std::sqrt(dv + epsilon));
      for (int64_t b = 0; b < view.n; ++b) {
        const float *xp = x + (b * view.channels + c) * view.s;
        const float *dyp = dy + (b * view.channels + c) * view.s;
        sumDy +=
            interleavedSum(view.s, [&](int64_t i) { return double(dyp[i]); });
        sumDyXhat += interleavedSum(view.s, [&](int64_t i) {
          return static_cast<double>(dyp[i]) * ((xp[i] - m) * rstd);
        });
      }
    }
    dScale[c] = static_cast<float>(sumDyXhat);
    if (dBias)
      dBias[c] = static_cast<float>(sumDy);
    float *k = coef + kBatchNormGradCoefs * c;
    k[0] = m;
    k[1] = rstd;
    k[2] = scale[c] * rstd;
    k[3] = static_cast<float>(sumDy / count);
    k[4] = static_cast<float>(sumDyXhat / count);
  }
};

/// Phase 2 of batchNormGrad, one item per element:
/// dx = scale * invStd * (dy - mean(dy) - xhat * mean(dy * xhat)).
struct BatchNormGradApply {
  const float *dy;
  const float *x;
  const float *coef;
  float *dx;
  ChannelView view;

  CLEAVE_HD void apply(int64_t e, int64_t c) const {
    const float *k = coef + kBatchNormGradCoefs * c;
    float xhat = (x[e] - k[0]) * k[1];
    dx[e] = k[2] * (dy[e] - k[3] - xhat * k[4]);
  }
  CLEAVE_HD void operator()(int64_t e) const { apply(e, view.channelOf(e)); }
  /// The items of plane p, as BatchNormApply::plane.
  CLEAVE_HD void plane(int64_t p) const {
    for (int64_t e = p * view.s, end = e + view.s; e < end; ++e)
      apply(e, p % view.channels);
  }
};

} // namespace cleave::body

#endif // CLEAVE_RUNTIME_NORMALIZATIONBODIES_H
