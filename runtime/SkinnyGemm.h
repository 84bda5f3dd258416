//===- SkinnyGemm.h - a linear layer's product at small batch ---*- C++ -*-===//
//
// Part of the Cleave runtime; included by the cpu kernels and the runtime
// tests, never by generated programs.
//
// A linear layer's forward product at small batch, x w^T with x a few rows
// and w [n, k] large, is the one GEMM of a training step that OpenBLAS
// 0.3.21 runs far below its square-matrix rate: it packs all of w on every
// call, and the packed panels feed only a few rows. The kernel here reads
// each element of w once, straight from memory, and uses it for all rows.
// gemm() runs every product of that form on it where skinnyGemmPays says
// so (a convolution's weight gradient can be one). The backward products of
// a linear layer, dy w and the K = rows weight update, were timed against a
// kernel of this kind and OpenBLAS ran them as fast, so they stay with
// OpenBLAS (README.md, Benchmarks).
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
