//===- ConvolutionCrop.cpp - kernel taps that only ever see padding -------===//

#include "runtime/ConvolutionCrop.h"
#include "runtime/CroppedWeight.h"

#include <algorithm>

namespace cleave::rt {

bool ConvCrop::operator==(const ConvCrop &other) const {
  return std::equal(wShape.dims, wShape.dims + wShape.rank, other.wShape.dims,
                    other.wShape.dims + other.wShape.rank) &&
         std::equal(pads, pads + 4, other.pads) &&
         std::equal(lo, lo + 2, other.lo) && std::equal(hi, hi + 2, other.hi);
}

bool cropDeadTaps(const Shape &xShape, const Shape &wShape,
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
    int64_t newEnd = (out - 1) * stride + (hi - lo - 1) * dilation + 1 - in -
                     newBegin;
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

namespace {

/// Weights of at least this many floats (4 MiB) are visited on the OpenMP
/// threads. Each visit reads every cache line of w for the few live taps
/// in it (one of nine for ResNet-18's last stage at 32x32, whose 512x512x3x3
/// weights are 9.4 MB): memory-bound, and two cores draw more bandwidth
/// than one, enough to pay for the parallel region.
constexpr int64_t kParallelWeight = int64_t{1} << 20;

/// Calls f(wIndex, cIndex) for every live tap: w's element wIndex is the
/// cropped weight's element cIndex. A single live tap per plane (the
/// common case: a 3x3 kernel on a 1x1 image) is one strided loop; nested
/// loops of one trip each ran 3x slower than that (590 against 200 us for
/// a 512x512x3x3 weight).
template <typename F>
void forEachLiveTap(const Shape &wShape, const ConvCrop &crop, const F &f) {
  int64_t planes = wShape.dims[0] * wShape.dims[1];
  int64_t kh = wShape.dims[2], kw = wShape.dims[3];
  int64_t ch = crop.wShape.dims[2], cw = crop.wShape.dims[3];
  int64_t first = crop.lo[0] * kw + crop.lo[1];
  bool parallel = planes * kh * kw >= kParallelWeight;
  if (ch == 1 && cw == 1) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t p = 0; p < planes; ++p)
      f(p * kh * kw + first, p);
    return;
  }
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < ch; ++r)
      for (int64_t c = 0; c < cw; ++c)
        f(p * kh * kw + first + r * kw + c, (p * ch + r) * cw + c);
}

} // namespace

void cropWeight(const float *w, const Shape &wShape, const ConvCrop &crop,
                float *wc) {
  forEachLiveTap(wShape, crop,
                 [&](int64_t wi, int64_t ci) { wc[ci] = w[wi]; });
}

void uncropWeight(const float *dwc, const ConvCrop &crop, float *dw,
                  const Shape &wShape) {
  // Zeros by memset (streaming stores for a large dw), then the live taps:
  // a per-element choice between the two ran 3x slower.
  std::fill(dw, dw + wShape.numElements(), 0.0f);
  forEachLiveTap(wShape, crop,
                 [&](int64_t wi, int64_t ci) { dw[wi] = dwc[ci]; });
}

void addCroppedWeight(const float *dwc, float alpha, const ConvCrop &crop,
                      float *w, const Shape &wShape) {
  forEachLiveTap(wShape, crop, [&](int64_t wi, int64_t ci) {
    w[wi] = w[wi] + alpha * dwc[ci];
  });
}

namespace {

bool holdsTapsOf(const CroppedWeight &cache, const float *w,
                 const ConvCrop &crop) {
  return cache.generation == tensorsGeneration() && cache.weight == w &&
         cache.crop == crop;
}

} // namespace

const float *liveTaps(const float *w, const Shape &wShape, const ConvCrop &crop,
                      CroppedWeight &cache) {
  if (!holdsTapsOf(cache, w, crop)) {
    syncCroppedWeight(cache);
    listCroppedWeight(cache);
    cache.taps.resize(crop.wShape.numElements());
    cropWeight(w, wShape, crop, cache.taps.data());
    cache.crop = crop;
    cache.generation = tensorsGeneration();
    // The step writes w only through the cache (CroppedWeight).
    cache.weight = const_cast<float *>(w);
    cache.wShape = wShape;
  }
  return cache.taps.data();
}

void addCroppedWeight(const float *dwc, float alpha, const ConvCrop &crop,
                      float *w, const Shape &wShape, CroppedWeight &cache) {
  if (!holdsTapsOf(cache, w, crop)) {
    syncCroppedWeight(cache);
    cache.generation = 0;
    addCroppedWeight(dwc, alpha, crop, w, wShape);
    return;
  }
  float *taps = cache.taps.data();
  int64_t n = crop.wShape.numElements();
#pragma omp parallel for simd schedule(static) if (n >= kParallelWeight)
  for (int64_t i = 0; i < n; ++i)
    taps[i] = taps[i] + alpha * dwc[i];
  cache.ahead = true;
}

} // namespace cleave::rt
