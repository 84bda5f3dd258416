//===- KernelsNormalization.cpp - softmax and layer norm ------------------===//
//
// Part of the Cleave runtime. The work items of NormalizationBodies.h, the
// same ones the cuda target launches, run on the OpenMP threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/NormalizationBodies.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace cleave::rt {

using namespace cleave::body;
using detail::runItems;

namespace {

/// Lines shorter than this take softmaxShortLines (measured on AVX-512,
/// 768 lines, 1 thread: 6.6x faster at 8, 4.7x at 12, 1.3x at 16, 3.9x at
/// 24; line by line is 8% faster at 32, two full vectors).
constexpr int64_t kShortLine = 32;

/// Softmax along contiguous lines shorter than two vector registers (a
/// short sequence's attention scores, a few classes). Run line by
/// line (SoftmaxLine), most lanes of each vector exp stay idle and the
/// line's tail goes through the scalar expf; here a block of lines is
/// shifted by its maxima first and all its exps run in one flat loop. The
/// arithmetic per element is SoftmaxLine's: the clamp at kExpFloor, the
/// sum in double, the flush below kExpFlush. With `masked`, each line is
/// first scaled and masked into y (MaskedSoftmaxLine::load), and the block
/// runs in place there.
void softmaxShortLines(const float *x, const AxisView &view, bool log, float *y,
                       const MaskedSoftmaxLine *masked = nullptr) {
  constexpr int64_t kBlock = 64;
  const int64_t d = view.d, lines = view.lines();
  runItems((lines + kBlock - 1) / kBlock, lines * d, [&](int64_t block) {
    const int64_t first = block * kBlock;
    const int64_t n = std::min(kBlock, lines - first);
    float *yb = y + first * d;
    const float *xb = x + first * d;
    if (masked) {
      const LineMasking &lm = masked->masking;
      const SoftmaxMasking &m = lm.masking;
      if (!m.condition && lm.maskStep <= 1) {
        // The block's lines are contiguous: scale them in one flat loop
        // (full vectors, where line by line a line of 12 paid a loop's
        // setup and tail each: 2x the softmax), then add each line's mask.
        lm.scale(xb, yb, n * d, std::integral_constant<int64_t, 1>());
        if (m.mask)
          for (int64_t i = first; i < first + n; ++i)
            lm.mask(y + i * d, d, std::integral_constant<int64_t, 1>(), i,
                    i * d);
      } else {
        for (int64_t i = 0; i < n; ++i)
          masked->load(first + i, std::integral_constant<int64_t, 1>());
      }
      xb = yb;
    }
    float maxima[kBlock], e[kBlock * kShortLine];
    for (int64_t i = 0; i < n; ++i) {
      const float *xl = xb + i * d;
      float maxVal = -HUGE_VALF;
      for (int64_t k = 0; k < d; ++k)
        maxVal = maxVal < xl[k] ? xl[k] : maxVal;
      // As SoftmaxLine's floor: NaN or infinite maxima make it NaN.
      const float floor = kExpFloor + 0.0f * maxVal;
      for (int64_t k = 0; k < d; ++k) {
        float t = xl[k] - maxVal;
        e[i * d + k] = t < floor ? floor : t;
      }
      maxima[i] = maxVal;
    }
    CLEAVE_SIMD
    for (int64_t j = 0; j < n * d; ++j)
      e[j] = std::exp(e[j]);
    for (int64_t i = 0; i < n; ++i) {
      const float *el = e + i * d, *xl = xb + i * d;
      float *yl = yb + i * d;
      double sum = 0.0;
      for (int64_t k = 0; k < d; ++k)
        sum += el[k];
      if (log) {
        float logSum = static_cast<float>(std::log(sum));
        for (int64_t k = 0; k < d; ++k)
          yl[k] = (xl[k] - maxima[i]) - logSum;
        continue;
      }
      float scale = static_cast<float>(1.0 / sum);
      for (int64_t k = 0; k < d; ++k)
        yl[k] = el[k] < kExpFlush ? 0.0f : el[k] * scale;
    }
  });
}

/// The mask's offset of every line of a softmax along `axis` (LineMasking's
/// lineOffsets), walked as an odometer over the other dims: no division
/// per line, which cost as much as the masking itself on lines of 64.
std::vector<int64_t> maskLineOffsets(const LineMasking &masking,
                                     const Shape &shape, int axis) {
  if (axis < 0)
    axis += shape.rank;
  BroadcastIndex index(masking.masking.maskShape, shape);
  AxisView view(shape, axis);
  std::vector<int64_t> offsets(view.lines());
  int64_t counter[kMaxRank] = {}, at = 0;
  for (int64_t &offset : offsets) {
    offset = at;
    for (int d = shape.rank - 1; d >= 0; --d) {
      if (d == axis)
        continue;
      at += index.strides[d];
      if (++counter[d] < shape.dims[d])
        break;
      at -= counter[d] * index.strides[d];
      counter[d] = 0;
    }
  }
  return offsets;
}

} // namespace

void softmax(const float *x, const Shape &shape, int axis, bool log, float *y) {
  AxisView view(shape, axis);
  if (view.inner == 1 && view.d < kShortLine)
    softmaxShortLines(x, view, log, y);
  else
    runItems(view.lines(), shape.numElements(), SoftmaxLine{x, y, view, log});
}

void softmaxMasked(const float *x, const Shape &shape, int axis, bool log,
                   const SoftmaxMasking &masking, float *y) {
  AxisView view(shape, axis);
  MaskedSoftmaxLine line{x, y, view, log, LineMasking(masking, shape, axis)};
  std::vector<int64_t> offsets;
  if (masking.mask || masking.condition) {
    offsets = maskLineOffsets(line.masking, shape, axis);
    line.masking.lineOffsets = offsets.data();
  }
  if (view.inner == 1 && view.d < kShortLine)
    softmaxShortLines(x, view, log, y, &line);
  else
    runItems(view.lines(), shape.numElements(), line);
}

void softmaxGrad(const float *y, const float *dy, const Shape &shape, int axis,
                 bool log, float *dx) {
  AxisView view(shape, axis);
  runItems(view.lines(), shape.numElements(),
           SoftmaxGradLine{y, dy, dx, view, log});
}

void softmaxGradMasked(const float *y, const float *dy, const Shape &shape,
                       int axis, bool log, const SoftmaxMasking &masking,
                       float *dx) {
  AxisView view(shape, axis);
  if (!masking.mask && !masking.condition && view.inner == 1 &&
      view.d < kShortLine) {
    // A scale alone over short contiguous lines: the gradients, then the
    // scale in one flat loop (line by line, a line of 12 paid a loop's
    // setup and tail for it). The same operations in the same order.
    softmaxGrad(y, dy, shape, axis, log, dx);
    LineMasking scaling(masking, shape, axis);
    constexpr int64_t kChunk = 4096;
    const int64_t n = shape.numElements();
    runItems((n + kChunk - 1) / kChunk, n, [&](int64_t chunk) {
      float *at = dx + chunk * kChunk;
      scaling.scale(at, at, std::min(kChunk, n - chunk * kChunk),
                    std::integral_constant<int64_t, 1>());
    });
    return;
  }
  MaskedSoftmaxGradLine line{y, dy, dx, view, log,
                             LineMasking(masking, shape, axis)};
  std::vector<int64_t> offsets;
  if (masking.condition) {
    offsets = maskLineOffsets(line.masking, shape, axis);
    line.masking.lineOffsets = offsets.data();
  }
  runItems(view.lines(), shape.numElements(), line);
}

void layerNorm(const float *x, const Shape &shape, int axis, const float *scale,
               const float *bias, float epsilon, float *y, float *mean,
               float *invStd) {
  RowView view(shape, axis);
  runItems(view.rows, shape.numElements(),
           LayerNormRow{x, scale, bias, y, mean, invStd, view.d, epsilon});
}

void layerNormGrad(const float *dy, const float *x, const Shape &shape,
                   int axis, const float *scale, const float *mean,
                   const float *invStd, float *dx, float *dScale,
                   float *dBias) {
  RowView view(shape, axis);
  runItems(view.rows, shape.numElements(),
           LayerNormGradRow{dy, x, scale, mean, invStd, dx, view.d});
  LayerNormGradColumn columns{dy, x, mean, invStd, dScale, dBias, view};
  int64_t blocks = (view.d + LayerNormGradColumn::kBlock - 1) /
                   LayerNormGradColumn::kBlock;
  runItems(blocks, shape.numElements(),
           [&](int64_t block) { columns.columns(block); });
}

// batchNorm and batchNormGrad: KernelsBatchNorm.cpp.

} // namespace cleave::rt
