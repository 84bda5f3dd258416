//===- KernelSupport.h - helpers private to the cpu kernels -----*- C++ -*-===//
//
// Part of the Cleave runtime; included by the cpu kernels' sources
// (Kernels*.cpp, SkinnyGemm.cpp) only, never by generated programs.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELSUPPORT_H
#define CLEAVE_RUNTIME_KERNELSUPPORT_H

#include "runtime/ConvolutionBodies.h"
#include "runtime/Elementwise.h"
#include "runtime/Shape.h"

#include <cassert>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace cleave::rt::detail {

/// The program's name and the step it is in, for fatal's messages (the
/// driver sets them).
inline const char *programName = "train";
inline int64_t currentStep = -1;

/// Bad run-time data (an index or label out of range) has no caller to
/// report to: a generated program has no error channel, and carrying on would
/// read out of bounds. Print and exit with status 1 (_Exit: this may run on
/// an OpenMP worker, where running exit handlers is not safe).

[[noreturn]] inline void fatal(const char *format, ...) {
  std::fprintf(stderr, "%s: error: ", programName);
  if (currentStep >= 0)
    std::fprintf(stderr, "in step %lld: ", static_cast<long long>(currentStep));
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  std::_Exit(1);
}

/// OpenMP queries that also build (single-threaded) without -fopenmp.
inline int maxThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
inline int threadNum() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}
inline bool inParallel() {
#ifdef _OPENMP
  return omp_in_parallel();
#else
  return false;
#endif
}
inline int numThreads() {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

/// Runs work item f(i) for i in [0, n) on the OpenMP threads, or in order on
/// this one when the whole job (`work` elements touched) is too small to pay
/// for them. This is how the cpu target runs the *Bodies.h work items that
/// the cuda target launches (cuda/Launch.cuh): one body, both targets.
template <typename F> void runItems(int64_t n, int64_t work, const F &f) {
#pragma omp parallel for schedule(static) if (work > kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    f(i);
}

/// Calls run(hasMomentum, hasDecay) with std::bool_constant tags for an
/// SGD update's combination (body::SgdStep::apply's template arguments), so
/// that each update loop is compiled without per-element tests and
/// vectorizes.
template <typename Run>
void withSgdCombination(bool hasMomentum, bool hasDecay, const Run &run) {
  using Yes = std::true_type;
  using No = std::false_type;
  if (hasMomentum)
    hasDecay ? run(Yes{}, Yes{}) : run(Yes{}, No{});
  else
    hasDecay ? run(No{}, Yes{}) : run(No{}, No{});
}

inline int normalizeAxis(int axis, int rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The spatial geometry of a convolution or pooling window (1 to 3 spatial
/// dims, padded to 3): the cuda target's, shared.
using body::Window3;

/// The range [lo, hi) of output positions o along one dim for which
/// o * stride + offset lies in [0, size).
inline void validRange(int64_t outSize, int64_t stride, int64_t offset,
                       int64_t size, int64_t &lo, int64_t &hi) {
  // o >= ceil(-offset / stride), o <= floor((size - 1 - offset) / stride).
  auto floorDiv = [](int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
  };
  lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  hi = floorDiv(size - 1 - offset, stride) + 1;
  if (lo > outSize)
    lo = outSize;
  if (hi > outSize)
    hi = outSize;
  if (hi < lo)
    hi = lo;
}

/// Copies the elements of `shape` read at `inStrides` from `in` to
/// `outStrides` from `out` (element strides; the written positions must not
/// overlap): a transpose, or the gathering of a strided view into a
/// row-major block and back.
template <typename T>
void copyStrided(const T *in, const int64_t *inStrides, const Shape &shape,
                 T *out, const int64_t *outStrides);

} // namespace cleave::rt::detail

#endif // CLEAVE_RUNTIME_KERNELSUPPORT_H
