//===- KernelSupport.h - helpers private to the cpu kernels -----*- C++ -*-===//
//
// Part of the Cleave runtime; included by Kernels*.cpp only, never by
// generated programs.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELSUPPORT_H
#define CLEAVE_RUNTIME_KERNELSUPPORT_H

#include "runtime/Shape.h"

#include <cassert>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace cleave::rt::detail {

/// Bad run-time data (an index or label out of range) has no caller to
/// report to: a generated program has no error channel, and carrying on would
/// read out of bounds. Print and exit with status 1 (_Exit: this may run on
/// an OpenMP worker, where running exit handlers is not safe).
[[noreturn]] inline void fatal(const char *format, ...) {
  std::fprintf(stderr, "error: ");
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

inline int normalizeAxis(int axis, int rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The spatial geometry of a convolution or pooling window, padded at the
/// front to 3 spatial dims (size 1, kernel 1, stride 1, no padding) so that
/// one 3-d loop nest serves 1-, 2- and 3-d ops.
struct Window3 {
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t padBegin[3] = {0, 0, 0};
  int64_t padEnd[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};

  /// `kernel` may come from a weight shape (dims 2..) or an attribute.
  /// Null strides/dilations mean 1; null pads mean 0.
  Window3(const Shape &xShape, const Shape &yShape, const int64_t *kernelDims,
          const int64_t *strides, const int64_t *pads,
          const int64_t *dilations) {
    int spatial = xShape.rank - 2;
    assert(spatial >= 1 && spatial <= 3 && "1 to 3 spatial dims");
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

  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
};

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

} // namespace cleave::rt::detail

#endif // CLEAVE_RUNTIME_KERNELSUPPORT_H
