//===- Rng.h - counter-based random numbers ---------------------*- C++ -*-===//
//
// Part of the Cleave runtime, shared by every target. Dropout draws its mask,
// and RandomUniform/RandomNormal their numbers, from a hash of (seed, node,
// step, element) instead of a stateful generator,
// so that any element can be computed independently (on any device, in any
// order) and a Python reference (test/reference/torch_train.py) reproduces
// it bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_RNG_H
#define CLEAVE_RUNTIME_RNG_H

#include "runtime/ElementwiseBodies.h"

#include <cstdint>

namespace cleave::rt {

/// Sebastiano Vigna's splitmix64 finalizer; arithmetic wraps modulo 2^64.
CLEAVE_HD inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The per-(node, step) key; hoist it out of loops over elements.
CLEAVE_HD inline uint64_t dropoutKey(uint64_t seed, int64_t node,
                                     int64_t step) {
  return splitmix64(seed ^
                    splitmix64(static_cast<uint64_t>(node) * 0x100000001B3ull +
                               static_cast<uint64_t>(step)));
}

/// Uniform in [0, 1) from the top 24 bits of the hash (exact in float).
CLEAVE_HD inline float dropoutUniformFromKey(uint64_t key, int64_t index) {
  uint64_t u = splitmix64(key + static_cast<uint64_t>(index));
  return static_cast<float>(u >> 40) * (1.0f / 16777216.0f);
}

/// The uniform that decides whether element `index` of the input of dropout
/// node `node` survives at training step `step`.
CLEAVE_HD inline float dropoutUniform(uint64_t seed, int64_t node, int64_t step,
                                      int64_t index) {
  return dropoutUniformFromKey(dropoutKey(seed, node, step), index);
}

/// The per-(node, step) key of random op `node` (RandomUniform,
/// RandomNormal): dropout's mixing on a different seed, so that random op
/// k and dropout k draw different streams.
CLEAVE_HD inline uint64_t randomKey(uint64_t seed, int64_t node, int64_t step) {
  return dropoutKey(splitmix64(seed ^ 0x52414E444F4D5331ull), node, step);
}

/// Uniform in (0, 1), never 0: what a logarithm may take.
CLEAVE_HD inline float openUniformFromKey(uint64_t key, int64_t index) {
  uint64_t u = splitmix64(key + static_cast<uint64_t>(index));
  return (static_cast<float>(u >> 40) + 0.5f) * (1.0f / 16777216.0f);
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_RNG_H
