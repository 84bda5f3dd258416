//===- SkinnyGemm.cpp - linear layers at small batch ----------------------===//
//
// Part of the Cleave runtime. See SkinnyGemm.h for what and why.
//
// Forward: y^T [n, rows] = w [n, k] . x^T [k, rows], in register tiles of
// 6 rows of w by 16 rows of x (BLIS's AVX2 shape: 12 accumulators, two
// 8-float vectors of x^T and one broadcast of w per step). x^T is packed
// once per call (it is small); w is read in place, 6 rows at a time, each
// element broadcast once per 16 rows of x, so its rows only need to stream.
//
// Backward: a block of 6 rows by 16 columns of w stays in 12 registers
// while every row of dy and x passes it, first for the input gradient (old
// w), then for the update. Copying blocks of w out first, as a BLAS packs,
// was timed too: no faster than OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "runtime/SkinnyGemm.h"
#include "runtime/GemmDispatch.h"
#include "runtime/KernelSupport.h"
#include "runtime/KernelWorkspaces.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define CLEAVE_SKINNY_GEMM 1
#endif

namespace cleave::rt {

#ifdef CLEAVE_SKINNY_GEMM
namespace {

constexpr int64_t kTileCols = kSkinnyTileRows;
constexpr int64_t kTileRows = kSkinnyWeightRows;
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

/// `buffer`'s data, at least `floats` long (kept between calls: the
/// kernels run every step). Its growth counts as a kernel workspace
/// (KernelWorkspaces.h); the old storage is freed before the new one is
/// taken (its contents are not needed, and both at once would raise the
/// peak).
float *atLeast(std::vector<float> &buffer, int64_t floats) {
  int64_t held = static_cast<int64_t>(buffer.size());
  if (held < floats) {
    detail::skinnyBufferBytes += (floats - held) * int64_t(sizeof(float));
    std::vector<float>().swap(buffer);
    buffer.resize(floats);
  }
  return buffer.data();
}

/// Calls f(std::integral_constant<int, R>) for `rows` = R in 1..6: the
/// kernels are unrolled over a group's rows, so its size is a template
/// argument (6, or fewer for the last group of a share).
template <typename F> void withGroupSize(int64_t rows, F &&f) {
  switch (rows) {
  case 1:
    return f(std::integral_constant<int, 1>());
  case 2:
    return f(std::integral_constant<int, 2>());
  case 3:
    return f(std::integral_constant<int, 3>());
  case 4:
    return f(std::integral_constant<int, 4>());
  case 5:
    return f(std::integral_constant<int, 5>());
  default:
    return f(std::integral_constant<int, kTileRows>());
  }
}

} // namespace

bool skinnyGemmPays(int64_t rows, int64_t n, int64_t k) {
  return skinnyGemmShapePays(rows, n, k);
}

void skinnyGemmXWt(int64_t rows, int64_t n, int64_t k, float alpha,
                   const float *x, const float *w, float beta, float *y) {
  // x^T with its columns padded with zeros to whole tiles: [k][padded].
  int64_t padded = SkinnyBuffers::padded(rows);
  static thread_local std::vector<float> xtBuffer;
  float *xt = atLeast(xtBuffer, SkinnyBuffers::forwardXt(rows, k));
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
    float *yt =
        atLeast(ytBuffer, SkinnyBuffers::forwardYt(rows, n, t, threads));
    for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
      int64_t depth = std::min(kDepthBlock, k - p0);
      for (int64_t r = first; r < last; r += kTileRows) {
        withGroupSize(std::min(kTileRows, last - r), [&](auto group) {
          for (int64_t m = 0; m < padded; m += kTileCols)
            tile<decltype(group)::value>(
                depth, w + r * k + p0, k, xt + p0 * padded + m, padded,
                yt + (r - first) * padded + m, padded, p0 > 0);
        });
      }
    }
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t r = first; r < last; ++r) {
        float v = alpha * yt[(r - first) * padded + m];
        y[m * n + r] = beta == 0.0f ? v : v + beta * y[m * n + r];
      }
  }
}

namespace {

/// One group of G rows of w by one 16-column tile: the input gradient's
/// contribution dxt[m] += sum_i dyt[i][m] * w[i], from the old w held in
/// registers, then the update w[i] += sum_m dyst[i][m] * xt[m] (a `tile`
/// whose accumulators are w, just read into the cache). dyt, dyst [G][rows]
/// (dy transposed, the second scaled by alpha), xt and dxt [rows][16].
template <int G>
void backwardTile(int64_t rows, float *w, int64_t k, const float *dyt,
                  const float *dyst, const float *xt, float *dxt) {
  if (dxt) {
    __m256 w0[G], w1[G];
#pragma GCC unroll 6
    for (int i = 0; i < G; ++i) {
      w0[i] = _mm256_loadu_ps(w + i * k);
      w1[i] = _mm256_loadu_ps(w + i * k + 8);
    }
    for (int64_t m = 0; m < rows; ++m) {
      __m256 s0 = _mm256_loadu_ps(dxt + m * kTileCols);
      __m256 s1 = _mm256_loadu_ps(dxt + m * kTileCols + 8);
#pragma GCC unroll 6
      for (int i = 0; i < G; ++i) {
        __m256 d = _mm256_broadcast_ss(dyt + i * rows + m);
        s0 = _mm256_fmadd_ps(d, w0[i], s0);
        s1 = _mm256_fmadd_ps(d, w1[i], s1);
      }
      _mm256_storeu_ps(dxt + m * kTileCols, s0);
      _mm256_storeu_ps(dxt + m * kTileCols + 8, s1);
    }
  }
  tile<G>(rows, dyst, rows, xt, kTileCols, w, k, true);
}

} // namespace

bool skinnyBackwardPays(int64_t rows, int64_t n, int64_t k) {
  return skinnyBackwardShapePays(rows, n, k);
}

void skinnyLinearBackward(int64_t rows, int64_t n, int64_t k,
                          const float *dy, float *w, const float *x,
                          float alpha, float *dx) {
  if (k % kTileCols != 0)
    detail::fatal("skinnyLinearBackward needs whole 16-column tiles, got "
                  "%lld columns (a bug in cleave)",
                  static_cast<long long>(k));
  int64_t tiles = k / kTileCols;
  // dy^T and alpha * dy^T [n][rows]; x in column tiles [tile][rows][16].
  static thread_local std::vector<float> dytBuffer, xtBuffer;
  float *dyt = atLeast(dytBuffer, SkinnyBuffers::backwardDyt(rows, n)),
        *dyst = dyt + n * rows;
  float *xt = atLeast(xtBuffer, SkinnyBuffers::backwardXt(rows, k));
  // Columns in chunks of 512: a chunk of dx stays in L2 while every group
  // of w's rows passes over it.
  constexpr int64_t kChunkTiles = 32;
  constexpr int64_t kPrefetchTiles = 2; // w's lines fetched ahead
#pragma omp parallel if (!detail::inParallel())
  {
#pragma omp for
    for (int64_t r = 0; r < n; ++r)
      for (int64_t m = 0; m < rows; ++m) {
        dyt[r * rows + m] = dy[m * n + r];
        dyst[r * rows + m] = alpha * dy[m * n + r];
      }
#pragma omp for
    for (int64_t t = 0; t < tiles; ++t)
      for (int64_t m = 0; m < rows; ++m)
        std::copy_n(x + m * k + t * kTileCols, kTileCols,
                    xt + (t * rows + m) * kTileCols);
    // Each thread owns whole column tiles: its columns of dx and of w.
    int64_t th = detail::threadNum(), team = detail::numThreads();
    int64_t first = tiles * th / team, last = tiles * (th + 1) / team;
    static thread_local std::vector<float> dxtBuffer;
    float *dxt = nullptr;
    if (dx) {
      int64_t floats = SkinnyBuffers::backwardDxt(rows, k, th, team);
      dxt = atLeast(dxtBuffer, floats);
      std::fill_n(dxt, floats, 0.0f);
    }
    for (int64_t c0 = first; c0 < last; c0 += kChunkTiles) {
      int64_t c1 = std::min(last, c0 + kChunkTiles);
      for (int64_t r0 = 0; r0 < n; r0 += kTileRows) {
        withGroupSize(std::min(kTileRows, n - r0), [&](auto group) {
          for (int64_t t = c0; t < c1; ++t) {
            // Rows a power of two apart stream poorly on their own: fetch
            // the tile kPrefetchTiles ahead (wrapping to the next group).
            int64_t pt = t + kPrefetchTiles, pr = r0;
            if (pt >= c1) {
              pt = c0 + (pt - c1);
              pr = r0 + kTileRows;
            }
            for (int64_t i = pr; i < std::min(n, pr + kTileRows); ++i)
              _mm_prefetch(reinterpret_cast<const char *>(w + i * k +
                                                          pt * kTileCols),
                           _MM_HINT_T0);
            backwardTile<decltype(group)::value>(
                rows, w + r0 * k + t * kTileCols, k, dyt + r0 * rows,
                dyst + r0 * rows, xt + t * rows * kTileCols,
                dxt ? dxt + (t - first) * rows * kTileCols : nullptr);
          }
        });
      }
    }
    if (dx)
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t t = first; t < last; ++t)
          std::copy_n(dxt + ((t - first) * rows + m) * kTileCols, kTileCols,
                      dx + m * k + t * kTileCols);
  }
}

#else // Without AVX2 the callers keep to OpenBLAS.

bool skinnyGemmPays(int64_t, int64_t, int64_t) { return false; }

void skinnyGemmXWt(int64_t, int64_t, int64_t, float, const float *,
                   const float *, float, float *) {
  detail::fatal("skinnyGemmXWt called without AVX2 (a bug in cleave)");
}

bool skinnyBackwardPays(int64_t, int64_t, int64_t) { return false; }

void skinnyLinearBackward(int64_t, int64_t, int64_t, const float *, float *,
                          const float *, float, float *) {
  detail::fatal("skinnyLinearBackward called without AVX2 (a bug in cleave)");
}

#endif

} // namespace cleave::rt
