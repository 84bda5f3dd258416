//===- KernelsLinalg.cpp - gemm and matmul on OpenBLAS --------------------===//
//
// Part of the Cleave runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/Elementwise.h"
#include "runtime/Kernels.h"
#include "runtime/MatmulGeometry.h"

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
  MatmulGeometry g(aShape, bShape);
  int64_t m = g.m, k = g.k, n = g.n, batchCount = g.batchCount;
  const Shape &batch = g.batch;
  if (g.empty())
    return;
  if (g.isTallProduct()) {
    gemm(false, false, batchCount * m, n, k, 1.0f, a, b, 0.0f, out);
    return;
  }

  int64_t aStrides[kMaxRank], bStrides[kMaxRank];
  detail::StridedLoop<1>::broadcastStrides(g.aBatch, batch, aStrides);
  detail::StridedLoop<1>::broadcastStrides(g.bBatch, batch, bStrides);
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
