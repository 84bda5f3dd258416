//===- ConvolutionCrop.h - kernel taps that only ever see padding -*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Where a convolution's
// output is small against its kernel (a 3x3 kernel with padding 1 on a 1x1
// image: the late layers of a CNN on small images), some kernel taps read
// padding at every output position. They add nothing to y or dx and their
// part of dw is zero, yet im2col and oneDNN compute them all (8 of 9 taps
// for ResNet-18's last stage at 32x32). The same convolution with its
// kernel cropped to the live taps, and its pads shifted to match, computes
// the same sums without them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CONVOLUTIONCROP_H
#define CLEAVE_RUNTIME_CONVOLUTIONCROP_H

#include "runtime/ConvolutionLiveTaps.h"

#include <cstdint>

namespace cleave::rt {

struct CroppedWeight;

/// w's live taps for `crop`: `cache`'s, cropped again when stale or cut
/// for another crop or weight.
const float *liveTaps(const float *w, const Shape &wShape, const ConvCrop &crop,
                      CroppedWeight &cache);

/// wc = w's live taps ([O, I, kh, kw] -> the crop's [O, I, kh', kw']).
void cropWeight(const float *w, const Shape &wShape, const ConvCrop &crop,
                float *wc);

/// dw = the cropped gradient dwc at the live taps, 0 at the dead ones.
void uncropWeight(const float *dwc, const ConvCrop &crop, float *dw,
                  const Shape &wShape);

/// w += alpha * dwc at the live taps (an SGD step with alpha = -lr); the
/// dead taps, whose gradient is zero, are not touched.
void addCroppedWeight(const float *dwc, float alpha, const ConvCrop &crop,
                      float *w, const Shape &wShape);

/// w += alpha * dwc at the live taps, into `cache` alone when it holds w's
/// live taps for `crop` (it is then ahead of w), else into w.
void addCroppedWeight(const float *dwc, float alpha, const ConvCrop &crop,
                      float *w, const Shape &wShape, CroppedWeight &cache);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CONVOLUTIONCROP_H
