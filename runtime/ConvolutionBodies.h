//===- ConvolutionBodies.h - convolution and pooling work items -*- C++ -*-===//
//
// Part of the Cleave runtime. The element-wise phases of the cuda target's
// convolutions (im2col, col2im, the bias; the products are cuBLAS calls)
// and its pooling kernels (cuda/KernelsConvolution.cu). Like the cpu kernels
// (KernelsConvolution.cpp) they treat 1-, 2- and 3-d ops as 3-d ones,
// padded at the front with size-1 dims. Free of anything device code cannot
// call.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CONVOLUTIONBODIES_H
#define CLEAVE_RUNTIME_CONVOLUTIONBODIES_H

#include "runtime/DataMovementBodies.h"
#include "runtime/HostDevice.h"
#include "runtime/Shape.h"

#include <cmath>
#include <cstdint>

namespace cleave::body {

/// The spatial geometry of a convolution or pooling window, padded at the
/// front to 3 spatial dims (size 1, kernel 1, stride 1, no padding): the
/// cpu kernels' detail::Window3, which is host-only, as a value the work
/// items carry.
struct Window3 {
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t padBegin[3] = {0, 0, 0};
  int64_t padEnd[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};

  /// `kernelDims` may come from a weight shape (dims 2..) or an attribute.
  /// Null strides/dilations mean 1; null pads mean 0. The shapes have 1 to
  /// 3 spatial dims (the verifier's guarantee).
  Window3(const rt::Shape &xShape, const rt::Shape &yShape,
          const int64_t *kernelDims, const int64_t *strides,
          const int64_t *pads, const int64_t *dilations) {
    int spatial = xShape.rank - 2;
    int shift = 3 - spatial;
    for (int i = 0; i < spatial; ++i) {
      in[shift + i] = xShape.dims[2 + i];
      out[shift + i] = yShape.dims[2 + i];
      kernel[shift + i] = kernelDims[i];
      if (strides)
        stride[shift + i] = strides[i];
      if (pads) {
        padBegin[shift + i] = pads[i];
        padEnd[shift + i] = pads[spatial + i];
      }
      if (dilations)
        dilation[shift + i] = dilations[i];
    }
  }

  CLEAVE_HD int64_t inSize() const { return in[0] * in[1] * in[2]; }
  CLEAVE_HD int64_t outSize() const { return out[0] * out[1] * out[2]; }
  CLEAVE_HD int64_t kernelSize() const {
    return kernel[0] * kernel[1] * kernel[2];
  }
};

/// The three indices of flat index f in the row-major extent `dims`.
CLEAVE_HD inline void unflatten3(int64_t f, const int64_t dims[3],
                                 int64_t idx[3]) {
  idx[2] = f % dims[2];
  idx[1] = f / dims[2] % dims[1];
  idx[0] = f / (dims[2] * dims[1]);
}

/// The output position along one dim whose window puts kernel tap k on
/// input position p, or -1 when there is none.
CLEAVE_HD inline int64_t outputForTap(const Window3 &w, int d, int64_t p,
                                      int64_t k) {
  int64_t t = p + w.padBegin[d] - k * w.dilation[d];
  if (t < 0 || t % w.stride[d] != 0)
    return -1;
  int64_t o = t / w.stride[d];
  return o < w.out[d] ? o : -1;
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// col[(c, k), o] = x[c, o * stride - padBegin + k * dilation], 0 in the
/// padding; col is [channels * kernelSize, outSize] and x one sample's
/// group of `channels` planes. One work item per col element.
struct Im2col {
  const float *x;
  float *col;
  int64_t channels;
  Window3 w;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t oSize = w.outSize(), kSize = w.kernelSize();
    int64_t row = i / oSize;
    int64_t o[3], k[3];
    unflatten3(i % oSize, w.out, o);
    unflatten3(row % kSize, w.kernel, k);
    int64_t offset = 0;
    for (int d = 0; d < 3; ++d) {
      int64_t p = o[d] * w.stride[d] - w.padBegin[d] + k[d] * w.dilation[d];
      if (p < 0 || p >= w.in[d]) {
        col[i] = 0.0f;
        return;
      }
      offset = offset * w.in[d] + p;
    }
    col[i] = x[row / kSize * w.inSize() + offset];
  }

  int64_t numItems() const { return channels * w.kernelSize() * w.outSize(); }
};

/// The adjoint of im2col, as a gather: x[c, p] = sum of col[(c, k), o] over
/// the taps k and outputs o that read input position p. One work item per x
/// element, so no atomics; the sum runs over k ascending from 0.0f, the
/// order in which the cpu's col2im adds into its zeroed dx, so the two agree
/// bit for bit. Overwrites x (no zero-fill needed).
struct Col2im {
  const float *col;
  float *x;
  int64_t channels;
  Window3 w;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t inSize = w.inSize(), oSize = w.outSize(), kSize = w.kernelSize();
    int64_t p[3];
    unflatten3(i % inSize, w.in, p);
    const float *colC = col + i / inSize * kSize * oSize;
    float sum = 0.0f;
    for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
      int64_t o0 = outputForTap(w, 0, p[0], k0);
      if (o0 < 0)
        continue;
      for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
        int64_t o1 = outputForTap(w, 1, p[1], k1);
        if (o1 < 0)
          continue;
        for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
          int64_t o2 = outputForTap(w, 2, p[2], k2);
          if (o2 < 0)
            continue;
          int64_t k = (k0 * w.kernel[1] + k1) * w.kernel[2] + k2;
          int64_t o = (o0 * w.out[1] + o1) * w.out[2] + o2;
          sum += colC[k * oSize + o];
        }
      }
    }
    x[i] = sum;
  }

  int64_t numItems() const { return channels * w.inSize(); }
};

/// y[n, c, ...] += bias[c] over a [N, C, planeSize] output.
struct AddChannelBias {
  float *y;
  const float *bias;
  int64_t channels;
  int64_t planeSize;

  CLEAVE_HD void operator()(int64_t i) const {
    y[i] += bias[i / planeSize % channels];
  }
};

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Written out rather than std::isnan, which device code may not call.
CLEAVE_HD inline bool isNan(float v) { return v != v; }

/// The first argmax (plane-relative input index) of output `o`'s window in
/// plane `xp`, scanning in-bounds positions in row-major order, or -1 when
/// the window lies in the padding; `best` gets the max (-inf when none).
/// NaN wins, as in torch and numpy, and the cpu maxPool/maxPoolGrad.
CLEAVE_HD inline int64_t windowArgmax(const float *xp, const Window3 &w,
                                      int64_t o, float &best) {
  int64_t oi[3], start[3];
  unflatten3(o, w.out, oi);
  for (int d = 0; d < 3; ++d)
    start[d] = oi[d] * w.stride[d] - w.padBegin[d];
  best = -INFINITY;
  int64_t arg = -1;
  for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
    int64_t i0 = start[0] + k0 * w.dilation[0];
    if (i0 < 0 || i0 >= w.in[0])
      continue;
    for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
      int64_t i1 = start[1] + k1 * w.dilation[1];
      if (i1 < 0 || i1 >= w.in[1])
        continue;
      for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
        int64_t i2 = start[2] + k2 * w.dilation[2];
        if (i2 < 0 || i2 >= w.in[2])
          continue;
        int64_t idx = (i0 * w.in[1] + i1) * w.in[2] + i2;
        float v = xp[idx];
        if (arg < 0 || v > best || (isNan(v) && !isNan(best))) {
          best = v;
          arg = idx;
        }
      }
    }
  }
  return arg;
}

/// The AveragePool divisor of output `o`: the in-bounds count, or with
/// countIncludePad the window clipped to the padded extent [-padBegin, in +
/// padEnd) (a ceil-mode window may reach beyond it).
CLEAVE_HD inline int64_t avgDivisor(const Window3 &w, int64_t o,
                                    bool countIncludePad) {
  int64_t oi[3];
  unflatten3(o, w.out, oi);
  int64_t count = 1;
  for (int d = 0; d < 3; ++d) {
    int64_t start = oi[d] * w.stride[d] - w.padBegin[d];
    int64_t end = start + w.kernel[d];
    int64_t lo = countIncludePad ? -w.padBegin[d] : 0;
    int64_t hi = countIncludePad ? w.in[d] + w.padEnd[d] : w.in[d];
    int64_t extent = (end < hi ? end : hi) - (start > lo ? start : lo);
    count *= extent > 0 ? extent : 0;
  }
  return count;
}

/// y = ONNX MaxPool(x) over [N * C] planes, one work item per y element.
struct MaxPool {
  const float *x;
  float *y;
  Window3 w;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t oSize = w.outSize();
    float best;
    windowArgmax(x + i / oSize * w.inSize(), w, i % oSize, best);
    y[i] = best;
  }
};

/// The second phase of maxPoolGrad, after FillZero on dx: each dy element
/// goes to the first argmax of its window. Overlapping windows may share an
/// argmax, hence the atomic add.
struct MaxPoolGradAdd {
  const float *dy;
  const float *x;
  float *dx;
  Window3 w;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t oSize = w.outSize(), plane = i / oSize * w.inSize();
    float best;
    int64_t arg = windowArgmax(x + plane, w, i % oSize, best);
    if (arg >= 0)
      atomicAccumulate(dx + plane + arg, dy[i]);
  }
};

/// y = ONNX AveragePool(x), one work item per y element; dilations are
/// always 1 (the Window3 is built without them).
struct AvgPool {
  const float *x;
  float *y;
  Window3 w;
  bool countIncludePad;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t oSize = w.outSize(), o = i % oSize;
    const float *xp = x + i / oSize * w.inSize();
    int64_t oi[3], start[3];
    unflatten3(o, w.out, oi);
    for (int d = 0; d < 3; ++d)
      start[d] = oi[d] * w.stride[d] - w.padBegin[d];
    float sum = 0.0f;
    for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
      int64_t i0 = start[0] + k0;
      if (i0 < 0 || i0 >= w.in[0])
        continue;
      for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
        int64_t i1 = start[1] + k1;
        if (i1 < 0 || i1 >= w.in[1])
          continue;
        for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
          int64_t i2 = start[2] + k2;
          if (i2 >= 0 && i2 < w.in[2])
            sum += xp[(i0 * w.in[1] + i1) * w.in[2] + i2];
        }
      }
    }
    y[i] = sum / static_cast<float>(avgDivisor(w, o, countIncludePad));
  }
};

/// The adjoint of AvgPool as a gather: dx[p] = sum of dy[o] / divisor(o)
/// over the windows o that cover p. One work item per dx element, so no
/// atomics and no zero-fill. Taps run from the first to the last, the
/// order in which the cpu kernel (tap after tap) adds them, so the two
/// agree bit for bit.
struct AvgPoolGrad {
  const float *dy;
  float *dx;
  Window3 w;
  bool countIncludePad;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t inSize = w.inSize();
    const float *dyp = dy + i / inSize * w.outSize();
    int64_t p[3];
    unflatten3(i % inSize, w.in, p);
    float sum = 0.0f;
    for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
      int64_t o0 = outputForTap(w, 0, p[0], k0);
      if (o0 < 0)
        continue;
      for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
        int64_t o1 = outputForTap(w, 1, p[1], k1);
        if (o1 < 0)
          continue;
        for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
          int64_t o2 = outputForTap(w, 2, p[2], k2);
          if (o2 < 0)
            continue;
          int64_t o = (o0 * w.out[1] + o1) * w.out[2] + o2;
          sum += dyp[o] / static_cast<float>(avgDivisor(w, o, countIncludePad));
        }
      }
    }
    dx[i] = sum;
  }
};

} // namespace cleave::body

#endif // CLEAVE_RUNTIME_CONVOLUTIONBODIES_H
