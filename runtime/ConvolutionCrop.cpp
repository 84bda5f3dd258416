//===- ConvolutionCrop.cpp - kernel taps that only ever see padding -------===//

#include "runtime/ConvolutionCrop.h"
#include "runtime/CroppedWeight.h"
#include "runtime/Elementwise.h"

#include <algorithm>

namespace cleave::rt {
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
         cache.crop.sameTaps(crop);
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
  // Contiguous, unlike the visits of w's live taps above: worth the
  // threads from an elementwise op's grain (4 weights of 262144 floats a
  // step in ResNet-18 at 32x32, 1.9% of a 2-thread step on one).
  float *taps = cache.taps.data();
  int64_t n = crop.wShape.numElements();
#pragma omp parallel for simd schedule(static) if (n > detail::kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    taps[i] = taps[i] + alpha * dwc[i];
  cache.ahead = true;
}

} // namespace cleave::rt
