//===- BlasPacking.h - OpenBLAS's packing buffers ---------------*- C++ -*-===//
//
// Part of the Cleave runtime, shared with the planner: plain C++, header
// only. OpenBLAS's level-3 driver (driver/level3/level3.c, Goto's
// algorithm) copies blocks of a product's operands into a buffer of its own
// before multiplying them: a panel of the first operand, at most P rows by
// Q of the depth, and beside it the depth by the columns of the second it
// packs. A call that is not split over threads takes one such buffer (a
// mapping of OpenBLAS's) and later calls reuse it, so its pages, once
// touched, stay in the rank's resident set: a rank holds the largest
// packing of its calls, once per thread that calls BLAS at the same time.
// Small products go to kernels that pack nothing.
//
// Terms here are the runtime's: row-major C[m, n] = op(A)[m, k] op(B)[k, n]
// through cblas_sgemm. OpenBLAS computes the column-major C^T = op(B)^T
// op(A)^T: its panel rows are n, the columns it packs beside them m, and
// its "transposed A" is our transB.
//
// P, Q, the columns packed beside a panel that holds all rows, and the
// small-product bound are measured by `cleave calibrate` (the cluster
// file's `blas_packing`), not assumed: they differ with OpenBLAS's build
// and the core it picks (OPENBLAS_CORETYPE).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_BLASPACKING_H
#define CLEAVE_RUNTIME_BLASPACKING_H

#include <algorithm>
#include <cstdint>

namespace cleave::rt {

struct BlasBlocking {
  /// P: the most rows (of the column-major first operand) packed at once.
  int64_t panelRows = 0;
  /// Q: the most of the depth packed at once.
  int64_t panelDepth = 0;
  /// Columns of the second operand packed at a time when one panel holds
  /// every row (the packed block is then reused for the next columns).
  int64_t narrowColumns = 0;
  /// The largest m * n * k of an untransposed product that packs nothing.
  int64_t smallProduct = 0;

  bool known() const {
    return panelRows > 0 && panelDepth > 0 && narrowColumns > 0;
  }
};

namespace detail {

constexpr int64_t kBlasPageBytes = 4096;
/// OpenBLAS's unroll of the panel rows for single precision on x86-64
/// (SGEMM_DEFAULT_UNROLL_M): an extent between one and two blocks is
/// halved and rounded up to it.
constexpr int64_t kBlasRowUnroll = 16;

inline int64_t blasPagesBytes(int64_t bytes) {
  return (bytes + kBlasPageBytes - 1) / kBlasPageBytes * kBlasPageBytes;
}

/// The first block the driver takes of an extent, `block` at most.
inline int64_t blasFirstBlock(int64_t extent, int64_t block) {
  if (extent >= 2 * block)
    return block;
  if (extent > block)
    return (extent / 2 + kBlasRowUnroll - 1) / kBlasRowUnroll * kBlasRowUnroll;
  return extent;
}

/// Whether OpenBLAS sends the product to its small-matrix kernels (no
/// packing): m * n * k at most the measured bound, and for a transposed
/// column-major first operand (our transB) its own further limits
/// (kernel/x86_64/sgemm_small_kernel_permit_skylakex.c).
inline bool blasPacksNothing(const BlasBlocking &b, bool transA, bool transB,
                             int64_t m, int64_t n, int64_t k) {
  if (double(m) * double(n) * double(k) > double(b.smallProduct))
    return false;
  if (transB)
    return transA ? k >= 4 : m * n <= 1200 && k >= 32;
  return true;
}

} // namespace detail

/// The bytes of OpenBLAS's buffer one call touches (whole pages).
inline int64_t blasPackingBytes(const BlasBlocking &b, bool transA, bool transB,
                                int64_t m, int64_t n, int64_t k) {
  if (!b.known() || m <= 0 || n <= 0 || k <= 0 ||
      detail::blasPacksNothing(b, transA, transB, m, n, k))
    return 0;
  int64_t depth = detail::blasFirstBlock(k, b.panelDepth);
  int64_t rows = detail::blasFirstBlock(n, b.panelRows);
  // All m columns sit beside the panel when the rows take several panels
  // (each panel multiplies them all); else a few at a time.
  int64_t columns = n > b.panelRows ? m : std::min(m, b.narrowColumns);
  constexpr int64_t kFloat = 4;
  return detail::blasPagesBytes(rows * depth * kFloat) +
         detail::blasPagesBytes(depth * columns * kFloat);
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_BLASPACKING_H
