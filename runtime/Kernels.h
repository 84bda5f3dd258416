//===- Kernels.h - the cpu target's tensor kernels --------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Generated training
// programs call these, one call per cleave op; the list (KernelApi.inc) is
// the cuda target's too. Elementwise math lives in ElementwiseBodies.h,
// shared with the cuda target.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_H
#define CLEAVE_RUNTIME_KERNELS_H

#include "runtime/CroppedWeight.h"
#include "runtime/KernelTypes.h"
#include "runtime/Shape.h"

#include <cstdint>

namespace cleave::rt {

#include "runtime/KernelApi.inc"

/// The cpu target only: a linear layer's input gradient and its plain-SGD
/// weight update, dx = dy w (w as on entry; dx [rows, k]; none when dx is
/// null) then
/// w += alpha * dy^T x, with dy [rows, n], w [n, k], x [rows, k]. The same
/// as gemm(false, false, rows, k, n, 1, dy, w, 0, dx) followed by
/// gemm(true, false, n, k, rows, alpha, dy, x, 1, w), in one pass over w
/// where that is faster.
void linearBackwardSgd(int64_t rows, int64_t n, int64_t k, const float *dy,
                       float *w, const float *x, float alpha, float *dx);

/// The cpu target only: a convolution's weight gradient and its plain-SGD
/// update, w += -lr * convGradWeight(dy, x), without storing the gradient;
/// the taps that only ever read padding (ConvolutionCrop.h), whose gradient
/// is zero, are not touched.
/// With `cache` (ConvolutionCrop.h), the weight's cached live taps take
/// the same update. afterGradInput: as for convGradWeight below.
void convGradWeightSgd(const float *dy, const Shape &yShape, const float *x,
                       const Shape &xShape, const int64_t *strides,
                       const int64_t *pads, const int64_t *dilations,
                       int64_t group, float lr, float *w, const Shape &wShape,
                       CroppedWeight *cache = nullptr,
                       bool afterGradInput = false);

/// The cpu target only: convGradWeight where the program has run the same
/// convolution's convGradInput on this dy (the same value, unchanged since)
/// before it, as the code generator knows: oneDNN's backward passes then
/// share dy's reorder into their layout where no other convolution ran in
/// between (OneDnnConvolution.h).
void convGradWeight(const float *dy, const Shape &yShape, const float *x,
                    const Shape &xShape, const int64_t *strides,
                    const int64_t *pads, const int64_t *dilations,
                    int64_t group, float *dw, const Shape &wShape,
                    bool afterGradInput);

/// The cpu target only: the plain-SGD update w += -lr * g of a 2-d
/// convolution kernel w whose gradient is zero outside one run of taps:
/// `taps`, the gradient of w's taps from `offsets` (w's rank; 0 for the
/// two channel dims) on, of shape `tapsShape`. The other taps are not
/// touched. With `cache` (ConvolutionCrop.h), its live taps take the
/// update when they are those taps.
void sgdLiveTaps(const float *taps, const Shape &tapsShape,
                 const int64_t *offsets, float lr, float *w,
                 const Shape &wShape, CroppedWeight *cache = nullptr);

/// The cpu target only: sgdUpdate of a 2-d convolution kernel w (and its
/// momentum buffer, when there is one) whose gradient is zero outside one
/// run of taps (`taps` from `offsets` on, as for sgdLiveTaps), without
/// that gradient written out whole: weight decay and momentum step the
/// other taps too, with a zero gradient. Bitwise what sgdUpdate does.
void sgdUpdateLiveTaps(const float *taps, const Shape &tapsShape,
                       const int64_t *offsets, float *w, const Shape &wShape,
                       float *buffer, float lr, float momentum, float dampening,
                       bool nesterov, float weightDecay, int64_t step);

/// The cpu target only: conv and convGradInput reading a cropped weight's
/// live taps from `cache` (ConvolutionCrop.h) instead of cropping w on
/// every call; the same as conv and convGradInput otherwise.
void conv(const float *x, const Shape &xShape, const float *w,
          const Shape &wShape, const float *bias, const int64_t *strides,
          const int64_t *pads, const int64_t *dilations, int64_t group,
          float *y, const Shape &yShape, CroppedWeight &cache);
void convGradInput(const float *dy, const Shape &yShape, const float *w,
                   const Shape &wShape, const int64_t *strides,
                   const int64_t *pads, const int64_t *dilations, int64_t group,
                   float *dx, const Shape &xShape, CroppedWeight &cache);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_KERNELS_H
