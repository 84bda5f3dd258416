//===- HostDevice.h - code both targets compile -----------------*- C++ -*-===//
//
// Part of the Cleave runtime. CLEAVE_HD marks a function that the cpu target
// calls from its loops and the cuda target from its kernels: the same math,
// compiled twice. Such functions call nothing device code cannot call.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_HOSTDEVICE_H
#define CLEAVE_RUNTIME_HOSTDEVICE_H

#include "runtime/VectorMath.h"

#include <cstdint>

#if defined(__CUDACC__)
#define CLEAVE_HD __host__ __device__
#else
#define CLEAVE_HD
#endif

// CLEAVE_SIMD before a loop of the cpu target asks for vector code: its
// iterations are independent (OpenMP's simd), and calls of expf, erff, tanhf
// and logf in it take libmvec's vector variants (VectorMath.h).
// CLEAVE_SIMD_SUM(x, ...) does the same for a loop that adds into the named
// variables, in whatever order the vector lanes take, and CLEAVE_SIMD_MAX(x)
// for one that keeps its maximum in x. All are nothing in device code.
#if defined(_OPENMP) && !defined(__CUDACC__)
#define CLEAVE_SIMD _Pragma("omp simd")
#define CLEAVE_SIMD_SUM(...)                                                   \
  _Pragma(CLEAVE_PRAGMA_STRING(omp simd reduction(+ : __VA_ARGS__)))
#define CLEAVE_SIMD_MAX(x)                                                     \
  _Pragma(CLEAVE_PRAGMA_STRING(omp simd reduction(max : x)))
#define CLEAVE_PRAGMA_STRING(...) #__VA_ARGS__
#else
#define CLEAVE_SIMD
#define CLEAVE_SIMD_SUM(...)
#define CLEAVE_SIMD_MAX(x)
#endif

namespace cleave {

/// p[i], for the elementwise loops: a bool is read as its byte (0 or 1).
/// g++ 12 vectorizes no loop that selects with a loaded bool (Where: no
/// vector type for the select's other load, so MobileNetV2's Clip ran a
/// scalar loop with a branch), and does vectorize the same loop on bytes.
template <typename T> CLEAVE_HD inline T loadElement(const T *p, int64_t i) {
  return p[i];
}
CLEAVE_HD inline bool loadElement(const bool *p, int64_t i) {
  return *reinterpret_cast<const unsigned char *>(p + i) != 0;
}

} // namespace cleave

#endif // CLEAVE_RUNTIME_HOSTDEVICE_H
