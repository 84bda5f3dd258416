//===- KernelsLinalg.cpp - gemm and matmul --------------------------------===//
//
// Part of the Cleave runtime. Products go to OpenBLAS, single-threaded, on
// the OpenMP threads, or to the skinny kernel (SkinnyGemm.h) where it pays.
//
//===----------------------------------------------------------------------===//

#include "runtime/DataMovementBodies.h"
#include "runtime/Elementwise.h"
#include "runtime/GemmDispatch.h"
#include "runtime/KernelSupport.h"
#include "runtime/KernelWorkspaces.h"
#include "runtime/Kernels.h"
#include "runtime/MatmulGeometry.h"
#include "runtime/SkinnyGemm.h"

#include <algorithm>
#include <cblas.h>

// OpenBLAS's own API, declared here because the cblas.h found may be
// another BLAS's (it is the alternative Debian points it at).
extern "C" {
void openblas_set_num_threads(int threads);
int openblas_get_parallel(void);
}

namespace cleave::rt {

namespace {

void blasGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              float alpha, const float *a, int64_t lda, const float *b,
              int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

/// OpenBLAS's pthreads build has a thread pool of its own beside OpenMP's.
/// Its idle workers spin for a while after each call, so an OpenMP kernel
/// right after a GEMM shares the cores with them (a 2-core machine ran the
/// large MLP's step 15-25% slower). Every kernel therefore runs on the
/// OpenMP threads, OpenBLAS single-threaded inside them. (The OpenMP build
/// of OpenBLAS needs nothing: it runs single-threaded inside a parallel
/// region, and its thread count is OpenMP's, which must stay as it is.)
void useOpenMPThreadsOnly() {
  static bool once = [] {
    constexpr int kPthreadsBuild = 1;
    if (openblas_get_parallel() == kPthreadsBuild)
      openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

} // namespace

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
  // (alpha 0 stays with BLAS, which then reads neither a nor b.)
  if (!transA && transB && alpha != 0.0f && skinnyGemmPays(m, n, k))
    return skinnyGemmXWt(m, n, k, alpha, a, b, beta, c);
  useOpenMPThreadsOnly();
  int64_t lda = transA ? m : k;
  int64_t ldb = transB ? k : n;
  // Threads for products that pay for them, unless a caller already runs
  // this on one of its threads.
  int threads = detail::inParallel() ? 1 : detail::maxThreads();
  if (threads == 1 || m * n * k < kThreadedProduct)
    return blasGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                    n);
  // One block of C per thread (GemmSplit).
  GemmSplit split(m, n);
#pragma omp parallel num_threads(threads)
  {
    // The team OpenMP gave, which may be smaller than asked for.
    int64_t t = detail::threadNum(), team = detail::numThreads();
    int64_t first = split.first(t, team), last = split.last(t, team);
    if (first < last) {
      if (split.byRows)
        blasGemm(transA, transB, last - first, n, k, alpha,
                 a + first * (transA ? 1 : lda), lda, b, ldb, beta,
                 c + first * n, n);
      else
        blasGemm(transA, transB, m, last - first, k, alpha, a, lda,
                 b + first * (transB ? ldb : 1), ldb, beta, c + first, n);
    }
  }
}

void linearBackwardSgd(int64_t rows, int64_t n, int64_t k, const float *dy,
                       float *w, const float *x, float alpha, float *dx) {
  if (skinnyBackwardPays(rows, n, k))
    return skinnyLinearBackward(rows, n, k, dy, w, x, alpha, dx);
  if (dx)
    gemm(false, false, rows, k, n, 1.0f, dy, w, 0.0f, dx);
  gemm(true, false, n, k, rows, alpha, dy, x, 1.0f, w);
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
  // Batches run one after another; gemm threads each product.
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

namespace {

/// Rows of floats this far apart or farther fall in few cache sets (4 KB
/// apart: one), so that a small product reading them misses on each row.
constexpr int64_t kFarRows = 1024;

/// Whether a small product reads or writes a matrix with these {row,
/// column} strides where it is: rows contiguous and near each other (as
/// the heads of [8, 64, 4 x 32]: gathering them cost gpt-d128's products
/// 15%), and so columns where `keepTransposed` (OpenBLAS's small products
/// take a transposed a, or write a transposed c, at little cost, but read
/// a transposed b at 2x).
bool readInPlace(const int64_t *strides, int64_t rows, int64_t cols,
                 bool keepTransposed) {
  if (strides[1] == 1)
    return strides[0] == cols || strides[0] < kFarRows;
  return keepTransposed && strides[0] == 1 &&
         (strides[1] == rows || strides[1] < kFarRows);
}

/// An operand's matrices row-major one after the other, in a block of
/// `buffer` from `offset`, and their strides there; or the operand itself
/// where readInPlace.
const float *rowMajorOperand(const Shape &batch, int64_t rows, int64_t cols,
                             const float *data, const int64_t *strides,
                             bool keepTransposed, std::vector<float> &buffer,
                             int64_t &offset, int64_t *viewStrides) {
  int r = batch.rank;
  std::copy(strides, strides + r + 2, viewStrides);
  if (readInPlace(strides + r, rows, cols, keepTransposed))
    return data;
  // A batch dim read with stride 0 (broadcast) is gathered once.
  Shape shape;
  shape.rank = r + 2;
  for (int i = 0; i < r; ++i)
    shape.dims[i] = strides[i] == 0 ? 1 : batch.dims[i];
  shape.dims[r] = rows;
  shape.dims[r + 1] = cols;
  int64_t packed[kMaxRank];
  body::rowMajorStrides(shape, packed);
  float *block = buffer.data() + offset;
  offset += shape.numElements();
  detail::copyStrided(data, strides, shape, block, packed);
  for (int i = 0; i < r + 2; ++i)
    viewStrides[i] = shape.dims[i] == 1 && i < r ? 0 : packed[i];
  return block;
}

void productsThroughStrides(const Shape &batch, int64_t m, int64_t n, int64_t k,
                            const float *a, const int64_t *aStrides,
                            const float *b, const int64_t *bStrides, float *c,
                            const int64_t *cStrides) {
  int r = batch.rank;
  int64_t count = batch.numElements();
  // A matrix whose columns are not contiguous is its transpose stored with
  // contiguous rows.
  bool transA = aStrides[r + 1] != 1, transB = bStrides[r + 1] != 1;
  int64_t lda = std::max<int64_t>(transA ? aStrides[r + 1] : aStrides[r],
                                  transA ? m : k);
  int64_t ldb = std::max<int64_t>(transB ? bStrides[r + 1] : bStrides[r],
                                  transB ? k : n);
  // A result whose columns are not contiguous is written as its transpose,
  // c^T = b^T a^T.
  bool transC = cStrides[r + 1] != 1;
  int64_t ldc = std::max<int64_t>(transC ? cStrides[r + 1] : cStrides[r],
                                  transC ? m : n);
  // The products are small (a head's): one per thread at a time.
  bool parallel = count > 1 && !detail::inParallel() &&
                  count * m * n * k >= kThreadedProduct;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t bi = 0; bi < count; ++bi) {
    int64_t aOff = 0, bOff = 0, cOff = 0, rest = bi;
    for (int i = r - 1; i >= 0; --i) {
      int64_t idx = rest % batch.dims[i];
      rest /= batch.dims[i];
      aOff += idx * aStrides[i];
      bOff += idx * bStrides[i];
      cOff += idx * cStrides[i];
    }
    if (k == 0) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          c[cOff + i * cStrides[r] + j * cStrides[r + 1]] = 0.0f;
      continue;
    }
    if (transC)
      blasGemm(!transB, !transA, n, m, k, 1.0f, b + bOff, ldb, a + aOff, lda,
               0.0f, c + cOff, ldc);
    else
      blasGemm(transA, transB, m, n, k, 1.0f, a + aOff, lda, b + bOff, ldb,
               0.0f, c + cOff, ldc);
  }
}

} // namespace

void matmulStrided(const Shape &batch, int64_t m, int64_t n, int64_t k,
                   const float *a, const int64_t *aStrides, const float *b,
                   const int64_t *bStrides, float *c, const int64_t *cStrides) {
  int64_t count = batch.numElements();
  if (count == 0 || m == 0 || n == 0)
    return;
  useOpenMPThreadsOnly();
  int64_t floats = stridedProductBufferFloats(count, m, n, k);
  if (floats == 0)
    return productsThroughStrides(batch, m, n, k, a, aStrides, b, bStrides, c,
                                  cStrides);
  // Small products: from and into row-major matrices, gathered in a
  // buffer as large as the largest call's (the old one is freed first: its
  // contents are not needed, and both at once would raise the peak).
  int r = batch.rank;
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < floats) {
    detail::stridedProductBufferBytes +=
        (floats - static_cast<int64_t>(buffer.size())) * sizeof(float);
    std::vector<float>().swap(buffer);
    buffer.resize(floats);
  }
  int64_t offset = 0;
  int64_t aView[kMaxRank], bView[kMaxRank], cView[kMaxRank];
  const float *aRows =
      rowMajorOperand(batch, m, k, a, aStrides, true, buffer, offset, aView);
  const float *bRows =
      rowMajorOperand(batch, k, n, b, bStrides, false, buffer, offset, bView);
  if (readInPlace(cStrides + r, m, n, /*keepTransposed=*/true))
    return productsThroughStrides(batch, m, n, k, aRows, aView, bRows, bView, c,
                                  cStrides);
  Shape cShape = batch;
  cShape.rank = r + 2;
  cShape.dims[r] = m;
  cShape.dims[r + 1] = n;
  body::rowMajorStrides(cShape, cView);
  float *cRows = buffer.data() + offset;
  productsThroughStrides(batch, m, n, k, aRows, aView, bRows, bView, cRows,
                         cView);
  detail::copyStrided(static_cast<const float *>(cRows), cView, cShape, c,
                      cStrides);
}

} // namespace cleave::rt
