//===- SkinnyGemm.h - linear layers at small batch --------------*- C++ -*-===//
//
// Part of the Cleave runtime; included by the cpu kernels and the runtime
// tests, never by generated programs.
//
// A linear layer at small batch multiplies a large weight w [n, k] by a
// few rows of activations, and OpenBLAS 0.3.21 runs those products far
// below its square-matrix rate: it packs all of w on every call, and the
// packed panels feed only a few rows. The kernels here stream w instead.
// The forward product x w^T reads each element of w once, straight from
// memory, for all rows; gemm() runs every product of that form on it where
// skinnyGemmPays says so (a convolution's weight gradient can be one). The
// backward pass under plain SGD holds a block of w in registers, adds its
// part of the input gradient dy w and then applies the update to it, so w
// is read and written once (linearBackwardSgd). A weight update without an
// input gradient (the first layer's) stays with OpenBLAS, which runs it as
// fast (README.md, Benchmarks).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SKINNYGEMM_H
#define CLEAVE_RUNTIME_SKINNYGEMM_H

#include <cstdint>

namespace cleave::rt {

/// Whether skinnyGemmXWt was built for this machine (AVX2 and FMA) and is
/// faster than OpenBLAS for `rows` rows of x and an n x k weight: at least
/// 2^22 weights and 14-16 or 28-32 rows.
bool skinnyGemmPays(int64_t rows, int64_t n, int64_t k);

/// y = alpha * x w^T + beta * y, with x [rows, k], w [n, k], y [rows, n], all
/// row-major and dense. beta 0 does not read y.
void skinnyGemmXWt(int64_t rows, int64_t n, int64_t k, float alpha,
                   const float *x, const float *w, float beta, float *y);

/// Whether skinnyLinearBackward was built for this machine and is faster
/// than OpenBLAS's two products for these shapes.
bool skinnyBackwardPays(int64_t rows, int64_t n, int64_t k);

/// A linear layer's backward pass under plain SGD, in one pass over w: with
/// dy [rows, n] and x [rows, k], dx = dy w [rows, k] from w's values on
/// entry (when dx is given), and w += alpha * dy^T x (alpha = -lr).
void skinnyLinearBackward(int64_t rows, int64_t n, int64_t k,
                          const float *dy, float *w, const float *x,
                          float alpha, float *dx);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_SKINNYGEMM_H
