//===- CroppedWeight.cpp - a weight's live taps kept between calls --------===//

#include "runtime/CroppedWeight.h"

#include <algorithm>

namespace cleave::rt {

namespace {

uint64_t generation = 1;

/// Every CroppedWeight that has held taps. Never destroyed: the programs'
/// static CroppedWeights leave it as they are destroyed.
std::vector<CroppedWeight *> &listed() {
  static auto *all = new std::vector<CroppedWeight *>;
  return *all;
}

} // namespace

CroppedWeight::~CroppedWeight() {
  std::vector<CroppedWeight *> &all = listed();
  all.erase(std::remove(all.begin(), all.end(), this), all.end());
}

uint64_t tensorsGeneration() { return generation; }

void listCroppedWeight(CroppedWeight &cache) {
  if (!cache.weight)
    listed().push_back(&cache);
}

void forgetCroppedWeights() {
  // What the copies held is overwritten with the tensors.
  for (CroppedWeight *cache : listed())
    cache->ahead = false;
  ++generation;
}

void syncCroppedWeight(CroppedWeight &cache) {
  if (!cache.ahead)
    return;
  cache.ahead = false;
  if (cache.generation != generation)
    return;
  // Plane by plane, the live block of taps of each (ConvCrop's lo..hi).
  const Shape &w = cache.wShape;
  const ConvCrop &crop = cache.crop;
  int64_t planes = w.dims[0] * w.dims[1], kh = w.dims[2], kw = w.dims[3];
  int64_t ch = crop.wShape.dims[2], cw = crop.wShape.dims[3];
  const float *taps = cache.taps.data();
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < ch; ++r)
      std::copy_n(taps + (p * ch + r) * cw, cw,
                  cache.weight + (p * kh + crop.lo[0] + r) * kw + crop.lo[1]);
}

void staleCroppedWeight(CroppedWeight &cache) {
  syncCroppedWeight(cache);
  cache.generation = 0;
}

void syncCroppedWeights() {
  for (CroppedWeight *cache : listed())
    syncCroppedWeight(*cache);
}

} // namespace cleave::rt
