//===- KernelsLinalg.cpp - gemm and matmul on OpenBLAS --------------------===//
//
// Part of the Cleave runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/Elementwise.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <cblas.h>

namespace cleave::rt {

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, const float *b, float beta, float *c) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    // BLAS rejects a leading dimension of 0; the product is empty anyway.
    for (int64_t i = 0; i < m * n; ++i)
      c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  int64_t lda = transA ? m : k;
  int64_t ldb = transB ? k : n;
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, n);
}

void matmul(const float *a, const Shape &aShape, const float *b,
            const Shape &bShape, float *out, const Shape &outShape) {
  int ra = aShape.rank, rb = bShape.rank;
  // 1-d operands: a is promoted to [1, K], b to [K, 1].
  int64_t m = ra >= 2 ? aShape[ra - 2] : 1;
  int64_t k = aShape[ra - 1];
  int64_t n = rb >= 2 ? bShape[rb - 1] : 1;

  // The batch dims, right-aligned and broadcast.
  Shape aBatch, bBatch, batch;
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
  int64_t batchCount = batch.numElements();
  if (batchCount == 0 || m == 0 || n == 0)
    return;

  // One tall gemm when b is shared by every batch and a is not broadcast:
  // [batch * M, K] @ [K, N] (the common [B, T, C] @ [C, D] of a linear).
  if (bBatch.numElements() == 1 && aBatch.numElements() == batchCount) {
    gemm(false, false, batchCount * m, n, k, 1.0f, a, b, 0.0f, out);
    return;
  }

  int64_t aStrides[kMaxRank], bStrides[kMaxRank];
  detail::StridedLoop<1>::broadcastStrides(aBatch, batch, aStrides);
  detail::StridedLoop<1>::broadcastStrides(bBatch, batch, bStrides);
  // Batches run one after another; OpenBLAS threads each product.
  for (int64_t bi = 0; bi < batchCount; ++bi) {
    int64_t aOff = 0, bOff = 0, rest = bi;
    for (int i = batch.rank - 1; i >= 0; --i) {
      int64_t idx = rest % batch.dims[i];
      rest /= batch.dims[i];
      aOff += idx * aStrides[i];
      bOff += idx * bStrides[i];
    }
    gemm(false, false, m, n, k, 1.0f, a + aOff * m * k, b + bOff * k * n, 0.0f,
         out + bi * m * n);
  }
}

} // namespace cleave::rt
