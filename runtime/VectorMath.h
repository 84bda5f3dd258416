//===- VectorMath.h - vector variants of libm's float functions -*- C++ -*-===//
//
// Part of the Cleave runtime. glibc's libmvec has AVX2 and AVX-512 variants
// of expf, erff, tanhf and logf (at most 4 ulp from libm's; the bound is
// checked in test/unit/runtime/VectorMathTest.cpp), but <math.h> declares
// them as such only under -ffast-math, which Cleave's programs are not
// built with (it would drop NaN and infinity semantics everywhere). These
// declarations alone let GCC call the vector variants from `#pragma omp
// simd` loops (CLEAVE_SIMD) and nothing else; whatever links this code
// links -lmvec.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_VECTORMATH_H
#define CLEAVE_RUNTIME_VECTORMATH_H

#include <cmath>

#if defined(_OPENMP) && !defined(__CUDACC__) && defined(__x86_64__) &&      \
    defined(__GLIBC__)
extern "C" {
#pragma omp declare simd notinbranch
float expf(float) noexcept;
#pragma omp declare simd notinbranch
float erff(float) noexcept;
#pragma omp declare simd notinbranch
float tanhf(float) noexcept;
#pragma omp declare simd notinbranch
float logf(float) noexcept;
}
#endif

#endif // CLEAVE_RUNTIME_VECTORMATH_H
