//===- ConvolutionLiveTaps.h - which kernel taps meet the input -*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR), header only. The rule
// by which the cpu runtime crops a convolution's kernel to the taps that
// read the input at some output position (ConvolutionCrop.h), here so that
// the planner's cost model counts the work the runtime does
// (planner/OpCost.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CONVOLUTIONLIVETAPS_H
#define CLEAVE_RUNTIME_CONVOLUTIONLIVETAPS_H

#include "runtime/Shape.h"

#include <algorithm>
#include <cstdint>

namespace cleave::rt {

/// A 2-d convolution's kernel cropped to the taps that meet the input: the
/// cropped weight shape, the pads that keep every live tap on the input
/// positions it read before, and the taps kept per spatial dim, [lo, hi).
struct ConvCrop {
  Shape wShape;
  int64_t pads[4] = {0, 0, 0, 0};
  int64_t lo[2] = {0, 0};
  int64_t hi[2] = {0, 0};

  /// Whether `other` keeps the same taps of the same kernel (its pads,
  /// which say where the taps then sit on the input, may differ).
  bool sameTaps(const ConvCrop &other) const;
  bool operator==(const ConvCrop &other) const;
};

inline bool ConvCrop::sameTaps(const ConvCrop &other) const {
  return std::equal(wShape.dims, wShape.dims + wShape.rank, other.wShape.dims,
                    other.wShape.dims + other.wShape.rank) &&
         std::equal(lo, lo + 2, other.lo) && std::equal(hi, hi + 2, other.hi);
}

inline bool ConvCrop::operator==(const ConvCrop &other) const {
  return sameTaps(other) && std::equal(pads, pads + 4, other.pads);
}

/// Whether the 2-d convolution (NCHW x, OIHW w) has dead taps to crop, and
/// then its crop. No crop where no tap is dead, where the live taps of a
/// dim are not one run, or where the shifted pads would be negative.
inline bool cropDeadTaps(const Shape &xShape, const Shape &wShape,
                         const Shape &yShape, const int64_t *strides,
                         const int64_t *pads, const int64_t *dilations,
                         ConvCrop &crop) {
  if (xShape.rank != 4 || wShape.rank != 4 || yShape.rank != 4)
    return false;
  bool dead = false;
  crop.wShape = wShape;
  for (int d = 0; d < 2; ++d) {
    int64_t in = xShape.dims[2 + d], out = yShape.dims[2 + d],
            kernel = wShape.dims[2 + d];
    int64_t stride = strides ? strides[d] : 1;
    int64_t dilation = dilations ? dilations[d] : 1;
    int64_t padBegin = pads ? pads[d] : 0, padEnd = pads ? pads[2 + d] : 0;
    // Tap k is live when some output position puts it on the input.
    int64_t lo = -1, hi = -1;
    for (int64_t k = 0; k < kernel; ++k) {
      bool live = false;
      for (int64_t o = 0; o < out && !live; ++o) {
        int64_t i = o * stride + k * dilation - padBegin;
        live = i >= 0 && i < in;
      }
      if (!live)
        continue;
      if (lo < 0)
        lo = k;
      else if (hi != k)
        return false; // a dead tap between live ones
      hi = k + 1;
    }
    if (lo < 0)
      return false; // nothing live: leave the degenerate case alone
    int64_t newBegin = padBegin - lo * dilation;
    // The end pad that keeps `out` positions: the last window's extent.
    int64_t newEnd =
        (out - 1) * stride + (hi - lo - 1) * dilation + 1 - in - newBegin;
    if (newBegin < 0 || newEnd < 0 || newEnd > padEnd)
      return false;
    dead |= lo > 0 || hi < kernel;
    crop.lo[d] = lo;
    crop.hi[d] = hi;
    crop.pads[d] = newBegin;
    crop.pads[2 + d] = newEnd;
    crop.wShape.dims[2 + d] = hi - lo;
  }
  return dead;
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CONVOLUTIONLIVETAPS_H
