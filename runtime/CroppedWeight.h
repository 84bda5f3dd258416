//===- CroppedWeight.h - a weight's live taps kept between calls -*- C++
//-*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR, no OpenMP: the driver's
// tensor store, which every target links, syncs and forgets them).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CROPPEDWEIGHT_H
#define CLEAVE_RUNTIME_CROPPEDWEIGHT_H

#include "runtime/ConvolutionCrop.h"

#include <cstdint>
#include <vector>

namespace cleave::rt {

/// A weight's live taps kept from one call to the next, so that a step
/// reads and writes a large weight's live taps only (ResNet-18's
/// 512x512x3x3 on a 1x1 image: 1 MB of its 9.4 MB) instead of every cache
/// line of it in each pass and update. The compiler gives one to a weight
/// that only convolutions read and only their fused SGD update writes
/// (codegen/FusionPlan.h): the update then goes to the copy alone, which
/// is ahead of the weight until syncCroppedWeights writes it back (before
/// anything outside the step reads the tensors). A weight that convolutions
/// read more than once in a step and an update (of any optimizer) writes
/// after them gets one too: cropped at its first pass, stale at the end of
/// the step (staleCroppedWeight). Anything that writes the
/// tensors outside the step (initial values, loaded files) makes every
/// copy stale (forgetCroppedWeights).
struct CroppedWeight {
  std::vector<float> taps;
  ConvCrop crop;
  /// The generation of the tensors `taps` were cropped in; 0: none.
  uint64_t generation = 0;
  /// The weight the taps are of, and whether they hold updates it lacks.
  float *weight = nullptr;
  Shape wShape;
  bool ahead = false;

  CroppedWeight() = default;
  CroppedWeight(const CroppedWeight &) = delete;
  CroppedWeight &operator=(const CroppedWeight &) = delete;
  ~CroppedWeight();
};

/// Marks every CroppedWeight stale: the next pass crops its weight again.
void forgetCroppedWeights();

/// Marks `cache` stale, its weight having been written in the step (by an
/// update that does not go through the copy): the next pass crops it
/// again. Updates the copy holds are written back first.
void staleCroppedWeight(CroppedWeight &cache);

/// Writes the updates every CroppedWeight holds back into its weight.
void syncCroppedWeights();

/// The generation of the tensors: forgetCroppedWeights starts a new one.
uint64_t tensorsGeneration();

/// Lists `cache` for syncCroppedWeights (once, when it first holds taps).
void listCroppedWeight(CroppedWeight &cache);

/// Writes `cache`'s updates back into its weight.
void syncCroppedWeight(CroppedWeight &cache);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CROPPEDWEIGHT_H
