//===- KernelsLinalg.cu - gemm and matmul on cuBLAS -----------------------===//
//
// Part of the Cleave runtime's cuda backend. cuBLAS is column-major and our
// buffers row-major; a row-major [M, N] matrix is the column-major [N, M]
// matrix of its transpose, so C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T: the operands swap places and keep
// their transpose flags and leading dimensions. The 64-bit cuBLAS API takes
// the sizes as they are. alpha and beta are host values (the handle's
// default pointer mode).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/DataMovementBodies.h"

#include <algorithm>

namespace cleave::rt::cuda {

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, const float *b, float beta, float *c) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    // cuBLAS rejects a leading dimension of 0; the product is empty anyway
    // and C = beta * C, with C unread when beta == 0 (as the cpu gemm).
    if (beta == 0.0f)
      launch(m * n, body::FillZero<float>{c});
    else if (beta != 1.0f)
      CLEAVE_CUBLAS_CHECK(cublasSscal_64(cublasHandle(), m * n, &beta, c, 1));
    return;
  }
  int64_t lda = transA ? m : k;
  int64_t ldb = transB ? k : n;
  CLEAVE_CUBLAS_CHECK(cublasSgemm_64(cublasHandle(),
                                     transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                                     k, &alpha, b, ldb, a, lda, &beta, c, n));
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
  int64_t aCount = aBatch.numElements(), bCount = bBatch.numElements();

  // One tall gemm when b is shared by every batch and a is not broadcast:
  // [batch * M, K] @ [K, N] (the common [B, T, C] @ [C, D] of a linear).
  if (bCount == 1 && aCount == batchCount) {
    gemm(false, false, batchCount * m, n, k, 1.0f, a, b, 0.0f, out);
    return;
  }
  if (k == 0) {
    launch(batchCount * m * n, body::FillZero<float>{out});
    return;
  }

  // Each operand either has every batch (its dims equal the broadcast ones,
  // since a broadcast dim of size 1 would shrink its count) or one matrix
  // for all: one strided-batched call, stride 0 for the shared operand.
  bool aUniform = aCount == batchCount || aCount == 1;
  bool bUniform = bCount == batchCount || bCount == 1;
  if (aUniform && bUniform) {
    float alpha = 1.0f, beta = 0.0f;
    long long strideA = aCount == 1 ? 0 : m * k;
    long long strideB = bCount == 1 ? 0 : k * n;
    CLEAVE_CUBLAS_CHECK(cublasSgemmStridedBatched_64(
        cublasHandle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n,
        strideB, a, k, strideA, &beta, out, n, m * n, batchCount));
    return;
  }

  // Broadcast over some batch dims only ([2, 1] against [1, 3]): one gemm
  // per batch, at the broadcast operands' offsets (StridedIndex walks the
  // batch dims with stride 0 where an operand is broadcast).
  body::StridedIndex aIndex = body::StridedIndex::broadcast(aBatch, batch);
  body::StridedIndex bIndex = body::StridedIndex::broadcast(bBatch, batch);
  for (int64_t bi = 0; bi < batchCount; ++bi)
    gemm(false, false, m, n, k, 1.0f, a + aIndex(bi) * m * k,
         b + bIndex(bi) * k * n, 0.0f, out + bi * m * n);
}

} // namespace cleave::rt::cuda
