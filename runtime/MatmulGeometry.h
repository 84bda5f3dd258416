//===- MatmulGeometry.h - numpy.matmul's shapes (both targets) -*- C++ -*-===//
//
// Part of the Cleave runtime: the matrix sizes and broadcast batch dims of
// numpy.matmul, which the cpu (KernelsLinalg.cpp) and cuda
// (cuda/KernelsLinalg.cu) matmuls both start from.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_MATMULGEOMETRY_H
#define CLEAVE_RUNTIME_MATMULGEOMETRY_H

#include "runtime/Shape.h"

#include <algorithm>
#include <cstdint>

namespace cleave::rt {

struct MatmulGeometry {
  /// One product: [m, k] @ [k, n] (1-d operands promoted as numpy does: a
  /// to [1, K], b to [K, 1]).
  int64_t m, k, n;
  /// The operands' batch dims, and both right-aligned and broadcast.
  Shape aBatch, bBatch, batch;
  int64_t batchCount;

  MatmulGeometry(const Shape &aShape, const Shape &bShape) {
    int ra = aShape.rank, rb = bShape.rank;
    m = ra >= 2 ? aShape[ra - 2] : 1;
    k = aShape[ra - 1];
    n = rb >= 2 ? bShape[rb - 1] : 1;
    aBatch.rank = std::max(ra - 2, 0);
    bBatch.rank = std::max(rb - 2, 0);
    for (int i = 0; i < aBatch.rank; ++i)
      aBatch.dims[i] = aShape[i];
    for (int i = 0; i < bBatch.rank; ++i)
      bBatch.dims[i] = bShape[i];
    batch.rank = std::max(aBatch.rank, bBatch.rank);
    for (int i = 0; i < batch.rank; ++i) {
      int ia = i - (batch.rank - aBatch.rank),
          ib = i - (batch.rank - bBatch.rank);
      int64_t da = ia >= 0 ? aBatch.dims[ia] : 1;
      int64_t db = ib >= 0 ? bBatch.dims[ib] : 1;
      batch.dims[i] = da == 1 ? db : da;
    }
    batchCount = batch.numElements();
  }

  /// Nothing to compute.
  bool empty() const { return batchCount == 0 || m == 0 || n == 0; }
  /// b is one matrix for every batch and a is not broadcast: one tall
  /// [batch * m, k] @ [k, n] product (a linear layer on [B, T, C]).
  bool isTallProduct() const {
    return bBatch.numElements() == 1 && aBatch.numElements() == batchCount;
  }
};

/// Products at most this big (m * n * k) run from row-major matrices
/// (matmulStrided, KernelsLinalg.cpp): a small product's time is OpenBLAS's
/// per call cost, which grows about 2x when an operand is transposed, and
/// up to 4x when its rows lie a page apart and share one cache set
/// (attention's heads of [sequence, heads x samples, features]), while
/// gathering a matrix costs a few ns per float.
constexpr int64_t kGatheredProduct = 64 * 64 * 64;

/// The floats of the buffer matmulStrided gathers `count` products of
/// [m, k] @ [k, n] through (both operands and the result, row-major), or 0
/// where it reads and writes them in place. The buffer is kept (one per
/// thread that calls it) as large as the largest call's: with oneDNN's
/// workspaces, what the cpu kernels hold beside the memory plan
/// (KernelWorkspaces.h), which the planner predicts from this.
inline int64_t stridedProductBufferFloats(int64_t count, int64_t m, int64_t n,
                                          int64_t k) {
  if (count == 0 || m == 0 || n == 0 || k == 0 || m * n * k > kGatheredProduct)
    return 0;
  return count * (m * k + k * n + m * n);
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_MATMULGEOMETRY_H
