//===- SkinnyGemm.cpp - a linear layer's product at small batch -----------===//
//
// Part of the Cleave runtime. See SkinnyGemm.h for what and why.
//
// y^T [n, rows] = w [n, k] . x^T [k, rows], in register tiles of 6 rows of
// w by 16 rows of x (BLIS's AVX2 shape: 12 accumulators, two 8-float
// vectors of x^T and one broadcast of w per step). x^T is packed once per
// call (it is small); w is read in place, 6 rows at a time, each element
// broadcast once per 16 rows of x, so its rows only need to stream.
//
//===----------------------------------------------------------------------===//

#include "runtime/SkinnyGemm.h"
#include "runtime/KernelSupport.h"

#include <algorithm>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define CLEAVE_SKINNY_GEMM 1
#endif

namespace cleave::rt {

#ifdef CLEAVE_SKINNY_GEMM
namespace {

constexpr int64_t kTileCols = 16; // rows of x per tile: two AVX vectors
constexpr int kTileRows = 6;      // rows of w per tile
constexpr int64_t kDepthBlock = 256; // x^T's block: 32 KB at 32 rows

/// c[R x 16] (+)= sum over p < depth of a[i * aRow + p] * b[p * bRow + j].
template <int R>
inline void tile(int64_t depth, const float *a, int64_t aRow, const float *b,
                 int64_t bRow, float *c, int64_t cRow, bool accumulate) {
  // Fully unrolled, so that the accumulators live in registers.
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
    acc[i][0] =
        accumulate ? _mm256_loadu_ps(c + i * cRow) : _mm256_setzero_ps();
    acc[i][1] =
        accumulate ? _mm256_loadu_ps(c + i * cRow + 8) : _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < depth; ++p) {
    __m256 b0 = _mm256_loadu_ps(b + p * bRow);
    __m256 b1 = _mm256_loadu_ps(b + p * bRow + 8);
#pragma GCC unroll 6
    for (int i = 0; i < R; ++i) {
      __m256 ai = _mm256_broadcast_ss(a + i * aRow + p);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < R; ++i) {
    _mm256_storeu_ps(c + i * cRow, acc[i][0]);
    _mm256_storeu_ps(c + i * cRow + 8, acc[i][1]);
  }
}

/// `tile` for the last rows of a thread's share, fewer than 6.
void partialTile(int rows, int64_t depth, const float *a, int64_t aRow,
                 const float *b, int64_t bRow, float *c, int64_t cRow,
                 bool accumulate) {
  switch (rows) {
  case 1:
    return tile<1>(depth, a, aRow, b, bRow, c, cRow, accumulate);
  case 2:
    return tile<2>(depth, a, aRow, b, bRow, c, cRow, accumulate);
  case 3:
    return tile<3>(depth, a, aRow, b, bRow, c, cRow, accumulate);
  case 4:
    return tile<4>(depth, a, aRow, b, bRow, c, cRow, accumulate);
  default:
    return tile<5>(depth, a, aRow, b, bRow, c, cRow, accumulate);
  }
}

} // namespace

bool skinnyGemmPays(int64_t rows, int64_t n, int64_t k) {
  // Timed against OpenBLAS split over the same 2 OpenMP threads (README.md,
  // Benchmarks): from 2^22 weights (16 MB) this kernel is faster whether w
  // comes from cache or from memory; below, a w read from memory favours
  // OpenBLAS. Rows are computed 16 at a time, so more than an eighth of
  // padding (24 rows: parity) loses, and from 40 rows OpenBLAS's blocking
  // wins.
  int64_t padded = (rows + kTileCols - 1) / kTileCols * kTileCols;
  return rows > 0 && rows <= 32 && 8 * rows >= 7 * padded &&
         n * k >= (int64_t{1} << 22) && n >= 64 && k >= 64;
}

void skinnyGemmXWt(int64_t rows, int64_t n, int64_t k, float alpha,
                   const float *x, const float *w, float beta, float *y) {
  // x^T with its columns padded with zeros to whole tiles: [k][padded].
  int64_t padded = (rows + kTileCols - 1) / kTileCols * kTileCols;
  static thread_local std::vector<float> xtBuffer;
  if (static_cast<int64_t>(xtBuffer.size()) < k * padded)
    xtBuffer.resize(k * padded);
  float *xt = xtBuffer.data();
#pragma omp parallel if (!detail::inParallel())
  {
#pragma omp for
    for (int64_t p = 0; p < k; ++p)
      for (int64_t m = 0; m < padded; ++m)
        xt[p * padded + m] = m < rows ? x[m * k + p] : 0.0f;
    // Each thread computes whole rows of w: y^T [first..last) in yt.
    int64_t t = detail::threadNum(), threads = detail::numThreads();
    int64_t groups = (n + kTileRows - 1) / kTileRows;
    int64_t first = std::min(n, groups * t / threads * kTileRows);
    int64_t last = std::min(n, groups * (t + 1) / threads * kTileRows);
    static thread_local std::vector<float> ytBuffer;
    if (static_cast<int64_t>(ytBuffer.size()) < (last - first) * padded)
      ytBuffer.resize((last - first) * padded);
    float *yt = ytBuffer.data();
    for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
      int64_t depth = std::min(kDepthBlock, k - p0);
      for (int64_t r = first; r < last; r += kTileRows) {
        int rowsHere = static_cast<int>(std::min<int64_t>(kTileRows, last - r));
        for (int64_t m = 0; m < padded; m += kTileCols) {
          const float *a = w + r * k + p0;
          const float *b = xt + p0 * padded + m;
          float *c = yt + (r - first) * padded + m;
          if (rowsHere == kTileRows)
            tile<kTileRows>(depth, a, k, b, padded, c, padded, p0 > 0);
          else
            partialTile(rowsHere, depth, a, k, b, padded, c, padded, p0 > 0);
        }
      }
    }
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t r = first; r < last; ++r) {
        float v = alpha * yt[(r - first) * padded + m];
        y[m * n + r] = beta == 0.0f ? v : v + beta * y[m * n + r];
      }
  }
}

#else // Without AVX2 the callers keep to OpenBLAS.

bool skinnyGemmPays(int64_t, int64_t, int64_t) { return false; }

void skinnyGemmXWt(int64_t, int64_t, int64_t, float, const float *,
                   const float *, float, float *) {
  detail::fatal("skinnyGemmXWt called without AVX2 (a bug in cleave)");
}

#endif

} // namespace cleave::rt
