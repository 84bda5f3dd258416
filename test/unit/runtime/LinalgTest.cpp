//===- LinalgTest.cpp - gemm and matmul -----------------------------------===//

#include "runtime/BlasPacking.h"
#include "runtime/GemmDispatch.h"
#include "runtime/Kernels.h"
#include "runtime/SkinnyGemm.h"

#include "test/unit/runtime/RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

using namespace cleave::rt;
using cleave::rt::test::randomVector;
using cleave::rt::test::ScopedThreads;

namespace {

/// C = alpha * op(A) op(B) + beta * C, in double.
std::vector<float> naiveGemm(bool transA, bool transB, int64_t m, int64_t n,
                             int64_t k, float alpha,
                             const std::vector<float> &a,
                             const std::vector<float> &b, float beta,
                             std::vector<float> c) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        float av = transA ? a[p * m + i] : a[i * k + p];
        float bv = transB ? b[j * k + p] : b[p * n + j];
        s += static_cast<double>(av) * bv;
      }
      c[i * n + j] = static_cast<float>(alpha * s + beta * c[i * n + j]);
    }
  return c;
}

TEST(Linalg, GemmHandValues) {
  // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
  std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, c(4);
  gemm(false, false, 2, 2, 2, 1.0f, a.data(), b.data(), 0.0f, c.data());
  EXPECT_EQ(c, (std::vector<float>{19, 22, 43, 50}));
  // A^T @ B = [[26, 30], [38, 44]].
  gemm(true, false, 2, 2, 2, 1.0f, a.data(), b.data(), 0.0f, c.data());
  EXPECT_EQ(c, (std::vector<float>{26, 30, 38, 44}));
}

TEST(Linalg, GemmTransposesAlphaBeta) {
  const int64_t m = 5, n = 7, k = 3;
  auto a = randomVector(m * k, 1), b = randomVector(k * n, 2);
  auto c0 = randomVector(m * n, 3);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::vector<float> c = c0;
      gemm(ta, tb, m, n, k, 0.5f, a.data(), b.data(), 2.0f, c.data());
      auto want = naiveGemm(ta, tb, m, n, k, 0.5f, a, b, 2.0f, c0);
      for (int64_t i = 0; i < m * n; ++i)
        EXPECT_NEAR(c[i], want[i], 1e-5f) << ta << tb << " at " << i;
    }
}

TEST(Linalg, GemmEmptyInnerDim) {
  std::vector<float> c = {1, 2, 3, 4};
  gemm(false, false, 2, 2, 0, 1.0f, nullptr, nullptr, 0.5f, c.data());
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1, 1.5f, 2}));
  gemm(false, false, 2, 2, 0, 1.0f, nullptr, nullptr, 0.0f, c.data());
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

/// Every shape's tails: rows not a multiple of 16, weight rows not a
/// multiple of 6 (nor of the 3 threads' shares), depths not a multiple of
/// the 256 block. beta 0 must not read y (NaN there would show).
TEST(Linalg, SkinnyGemmMatchesNaive) {
  if (!skinnyGemmPays(32, 4096, 4096))
    GTEST_SKIP() << "built without AVX2/FMA: gemm uses OpenBLAS only";
  ScopedThreads threads(3);
  struct Case {
    int64_t rows, n, k;
  };
  for (Case c : {Case{1, 64, 64}, Case{5, 67, 100}, Case{16, 70, 300},
                 Case{17, 131, 513}, Case{32, 64, 1030}, Case{64, 97, 257}})
    for (float beta : {0.0f, 2.0f}) {
      auto x = randomVector(c.rows * c.k, 6), w = randomVector(c.n * c.k, 7);
      auto y0 = randomVector(c.rows * c.n, 8);
      std::vector<float> y = y0;
      if (beta == 0.0f)
        std::fill(y.begin(), y.end(), std::numeric_limits<float>::quiet_NaN());
      skinnyGemmXWt(c.rows, c.n, c.k, 0.5f, x.data(), w.data(), beta,
                    y.data());
      auto want = naiveGemm(false, true, c.rows, c.n, c.k, 0.5f, x, w, beta,
                            y0);
      for (int64_t i = 0; i < c.rows * c.n; ++i)
        ASSERT_NEAR(y[i], want[i], 1e-4f)
            << c.rows << "x" << c.n << "x" << c.k << " beta " << beta
            << " at " << i;
    }
}

/// Products large enough to be split over 3 OpenMP threads, by rows of C
/// and by columns (a width not a multiple of 16), in every transposition,
/// and a linear layer's forward product at small batch (the skinny kernel
/// where it pays, with alpha 0 kept from it: NaN in a must not show).
TEST(Linalg, GemmLargeMatchesNaive) {
  ScopedThreads threads(3);
  struct Case {
    int64_t m, n, k;
  };
  for (Case c : {Case{300, 70, 100}, Case{40, 530, 100}, Case{30, 2048, 2050}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        auto a = randomVector(c.m * c.k, 9), b = randomVector(c.k * c.n, 10);
        auto c0 = randomVector(c.m * c.n, 11);
        std::vector<float> out = c0;
        gemm(ta, tb, c.m, c.n, c.k, 0.5f, a.data(), b.data(), 1.0f,
             out.data());
        auto want = naiveGemm(ta, tb, c.m, c.n, c.k, 0.5f, a, b, 1.0f, c0);
        for (int64_t i = 0; i < c.m * c.n; ++i)
          ASSERT_NEAR(out[i], want[i], 1e-4f)
              << c.m << "x" << c.n << "x" << c.k << " " << ta << tb
              << " at " << i;
      }
  auto a = randomVector(30 * 2050, 12), b = randomVector(2048 * 2050, 13);
  a[5] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out(30 * 2048, 1.0f);
  gemm(false, true, 30, 2048, 2050, 0.0f, a.data(), b.data(), 2.0f,
       out.data());
  for (float v : out)
    ASSERT_EQ(v, 2.0f);
}

/// A linear layer's backward pass under plain SGD, in one call, against the
/// two naive products: through the one-pass kernel (rows 16, 17, 30, 32;
/// weight rows leaving every partial group of 1-5; with and without dx) and
/// through the two-GEMM path (shapes the kernel does not take).
TEST(Linalg, LinearBackwardSgdMatchesNaive) {
  ScopedThreads threads(3);
  struct Case {
    int64_t rows, n, k;
    bool withDx;
  };
  for (Case c : {Case{16, 6 * 700 + 1, 1024, true},
                 Case{17, 6 * 1000 + 2, 704, true},
                 Case{30, 6 * 500 + 3, 1408, false},
                 Case{32, 6 * 400 + 4, 1760, true},
                 Case{32, 6 * 300 + 5, 2400, true}, Case{8, 100, 200, true},
                 Case{32, 70, 1030, true}}) {
    auto dy = randomVector(c.rows * c.n, 14), x = randomVector(c.rows * c.k, 15);
    auto w0 = randomVector(c.n * c.k, 16);
    std::vector<float> w = w0, dx(c.rows * c.k, -99.0f);
    linearBackwardSgd(c.rows, c.n, c.k, dy.data(), w.data(), x.data(), -0.5f,
                      c.withDx ? dx.data() : nullptr);
    if (c.withDx) {
      auto want = naiveGemm(false, false, c.rows, c.k, c.n, 1.0f, dy, w0, 0.0f,
                            std::vector<float>(c.rows * c.k));
      for (int64_t i = 0; i < c.rows * c.k; ++i)
        ASSERT_NEAR(dx[i], want[i], 1e-4f * (1 + std::fabs(want[i])))
            << c.rows << "x" << c.n << "x" << c.k << " dx at " << i;
    }
    auto wantW = naiveGemm(true, false, c.n, c.k, c.rows, -0.5f, dy, x, 1.0f,
                           w0);
    for (int64_t i = 0; i < c.n * c.k; ++i)
      ASSERT_NEAR(w[i], wantW[i], 1e-4f)
          << c.rows << "x" << c.n << "x" << c.k << " w at " << i;
  }
}

/// numpy.matmul by definition, for operands of rank >= 2.
std::vector<float> naiveMatmul(const std::vector<float> &a, const Shape &as,
                               const std::vector<float> &b, const Shape &bs,
                               const Shape &os) {
  int64_t m = as[as.rank - 2], k = as[as.rank - 1], n = bs[bs.rank - 1];
  std::vector<float> out(os.numElements());
  int br = os.rank - 2;
  int64_t batches = os.product(0, br);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t idx[kMaxRank];
    int64_t rest = bi;
    for (int i = br - 1; i >= 0; --i) {
      idx[i] = rest % os[i];
      rest /= os[i];
    }
    auto offset = [&](const Shape &s) {
      int64_t off = 0;
      for (int i = 0; i < s.rank - 2; ++i) {
        int64_t oi = idx[i + br - (s.rank - 2)];
        off = off * s[i] + (s[i] == 1 ? 0 : oi);
      }
      return off;
    };
    const float *pa = a.data() + offset(as) * m * k;
    const float *pb = b.data() + offset(bs) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t p = 0; p < k; ++p)
          s += static_cast<double>(pa[i * k + p]) * pb[p * n + j];
        out[bi * m * n + i * n + j] = static_cast<float>(s);
      }
  }
  return out;
}

void checkMatmul(const Shape &as, const Shape &bs, const Shape &os) {
  auto a = randomVector(as.numElements(), 4);
  auto b = randomVector(bs.numElements(), 5);
  std::vector<float> out(os.numElements(), -99.0f);
  matmul(a.data(), as, b.data(), bs, out.data(), os);
  auto want = naiveMatmul(a, as, b, bs, os);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-5f) << "at " << i;
}

TEST(Linalg, MatmulBatched) {
  checkMatmul({3, 4}, {4, 5}, {3, 5});
  checkMatmul({2, 3, 4}, {4, 5}, {2, 3, 5}); // one tall gemm
  checkMatmul({3, 4}, {2, 4, 5}, {2, 3, 5}); // a broadcast
  checkMatmul({2, 3, 4}, {2, 4, 5}, {2, 3, 5});
  checkMatmul({2, 1, 3, 4}, {1, 3, 4, 2}, {2, 3, 3, 2});
  checkMatmul({2, 3, 4}, {1, 4, 5}, {2, 3, 5});
}

TEST(Linalg, MatmulVectors) {
  // [1, 2] @ [[1, 2, 3], [4, 5, 6]] = [9, 12, 15].
  std::vector<float> v = {1, 2}, m = {1, 2, 3, 4, 5, 6}, out(3);
  matmul(v.data(), Shape{2}, m.data(), Shape{2, 3}, out.data(), Shape{3});
  EXPECT_EQ(out, (std::vector<float>{9, 12, 15}));
  // [[1, 2, 3], [4, 5, 6]] @ [1, 0, -1] = [-2, -2].
  std::vector<float> w = {1, 0, -1}, out2(2);
  matmul(m.data(), Shape{2, 3}, w.data(), Shape{3}, out2.data(), Shape{2});
  EXPECT_EQ(out2, (std::vector<float>{-2, -2}));
  // Batched matrix times vector: [2, 2, 3] @ [3] -> [2, 2].
  std::vector<float> mm = {1, 2, 3, 4, 5, 6, 1, 1, 1, 0, 0, 0}, out3(4);
  matmul(mm.data(), Shape{2, 2, 3}, w.data(), Shape{3}, out3.data(),
         Shape{2, 2});
  EXPECT_EQ(out3, (std::vector<float>{-2, -2, 0, 0}));
  // Dot product: rank-0 result.
  float dot = 0.0f;
  matmul(w.data(), Shape{3}, w.data(), Shape{3}, &dot, Shape{});
  EXPECT_EQ(dot, 2.0f);
}

} // namespace

// matmulStrided against a naive product over the same strided views:
// attention's heads read out of [batch, seq, heads, dim] (row stride heads *
// dim), a transposed operand (unit row stride, read with BLAS's trans), and
// a result written transposed (unit row stride: computed as b^T a^T).
TEST(Linalg, MatmulStridedMatchesNaive) {
  const int64_t batch = 2, heads = 3, seq = 5, dim = 4;
  auto x = randomVector(batch * seq * heads * dim, 6);
  auto y = randomVector(batch * seq * heads * dim, 7);
  // q[b, h, t, d] = x[b, t, h, d]; k^T[b, h, d, t] = y[b, t, h, d].
  const int64_t q[] = {seq * heads * dim, dim, heads * dim, 1};
  const int64_t kt[] = {seq * heads * dim, dim, 1, heads * dim};
  auto element = [](const std::vector<float> &v, const int64_t *s, int64_t b,
                    int64_t h, int64_t i, int64_t j) {
    return v[b * s[0] + h * s[1] + i * s[2] + j * s[3]];
  };
  for (bool transposedResult : {false, true}) {
    // scores[b, h, t, u], stored as is or as [b, h, u, t].
    const int64_t plain[] = {heads * seq * seq, seq * seq, seq, 1};
    const int64_t swapped[] = {heads * seq * seq, seq * seq, 1, seq};
    const int64_t *c = transposedResult ? swapped : plain;
    std::vector<float> out(batch * heads * seq * seq, -99.0f);
    matmulStrided(Shape{batch, heads}, seq, seq, dim, x.data(), q, y.data(),
                  kt, out.data(), c);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < seq; ++i)
          for (int64_t j = 0; j < seq; ++j) {
            double s = 0.0;
            for (int64_t p = 0; p < dim; ++p)
              s += static_cast<double>(element(x, q, b, h, i, p)) *
                   element(y, kt, b, h, p, j);
            ASSERT_NEAR(out[b * c[0] + h * c[1] + i * c[2] + j * c[3]], s,
                        1e-5)
                << "transposed result " << transposedResult << " at " << b
                << "," << h << "," << i << "," << j;
          }
  }
}

namespace {

/// One matmulStrided case over one batch dim: strides are {batch, row,
/// column} of a (MxK), b (KxN) and c (MxN).
struct StridedCase {
  const char *what;
  int64_t batch, m, n, k;
  int64_t a[3], b[3], c[3];
};

int64_t extentOf(const int64_t *s, int64_t batch, int64_t rows, int64_t cols) {
  return (batch - 1) * s[0] + (rows - 1) * s[1] + (cols - 1) * s[2] + 1;
}

} // namespace

// matmulStrided on the views attention's products read and write (the
// cases of bench/matmul_strided_bench.cpp): heads of [s, h x d] whose rows
// lie a page apart (F = 1024 floats) or near (h x d), packed transposed
// operands, results written transposed or a page apart, a broadcast
// operand (batch stride 0); small ones partly gathered into row-major
// blocks, large ones (past 64^3) given to BLAS through the strides; on 1
// and 2 threads, against a naive product.
TEST(Linalg, MatmulStridedViewsMatchNaive) {
  const int64_t h = 6, s = 5, d = 4, F = 1024; // heads, positions, features
  const int64_t hl = 3, sl = 70, dl = 60; // large: 70 * 70 * 60 > 64^3
  const StridedCase cases[] = {
      // q k^T: k^T a page apart, then near.
      {"qk far", h, s, s, d, {s * d, d, 1}, {d, 1, F}, {s * s, s, 1}},
      {"qk near", h, s, s, d, {s * d, d, 1}, {d, 1, h * d}, {s * s, s, 1}},
      // p v into [s, h x d], far and near.
      {"pv far", h, s, d, s, {s * s, s, 1}, {d, F, 1}, {d, F, 1}},
      {"pv near", h, s, d, s, {s * s, s, 1}, {d, h * d, 1}, {d, h * d, 1}},
      {"both far", h, s, s, d, {d, F, 1}, {d, 1, F}, {s * s, s, 1}},
      // Packed transposed a, result transposed a page apart and near.
      {"ta, tc far", h, d, s, s, {s * d, 1, d}, {s * s, s, 1}, {d, 1, F}},
      {"ta, tc near", h, d, s, s, {s * d, 1, d}, {s * s, s, 1}, {d, 1, h * d}},
      // a transposed a page apart; b packed transposed.
      {"ta far", h, s, d, s, {s * s, 1, F}, {d, F, 1}, {d, F, 1}},
      {"tb", h, s, s, d, {s * d, d, 1}, {s * d, 1, d}, {s * s, s, 1}},
      {"broadcast b", h, s, d, s, {s * s, s, 1}, {0, F, 1}, {s * d, d, 1}},
      {"large far", hl, sl, sl, dl, {dl, F, 1}, {dl, 1, F}, {sl, 1, F}},
      {"large ta",
       hl,
       dl,
       sl,
       sl,
       {sl * dl, 1, dl},
       {sl * sl, sl, 1},
       {sl, hl * sl, 1}},
  };
  for (int threads : {1, 2}) {
    ScopedThreads scoped(threads);
    for (const StridedCase &c : cases) {
      auto a = randomVector(extentOf(c.a, c.batch, c.m, c.k), 11);
      auto b = randomVector(extentOf(c.b, c.batch, c.k, c.n), 12);
      std::vector<float> out(extentOf(c.c, c.batch, c.m, c.n), -99.0f);
      matmulStrided(Shape{c.batch}, c.m, c.n, c.k, a.data(), c.a, b.data(), c.b,
                    out.data(), c.c);
      for (int64_t e = 0; e < c.batch; ++e)
        for (int64_t i = 0; i < c.m; ++i)
          for (int64_t j = 0; j < c.n; ++j) {
            double sum = 0.0;
            for (int64_t p = 0; p < c.k; ++p)
              sum +=
                  static_cast<double>(a[e * c.a[0] + i * c.a[1] + p * c.a[2]]) *
                  b[e * c.b[0] + p * c.b[1] + j * c.b[2]];
            ASSERT_NEAR(out[e * c.c[0] + i * c.c[1] + j * c.c[2]], sum, 1e-4)
                << c.what << ", " << threads << " threads, at " << e << "," << i
                << "," << j;
          }
    }
  }
}

// gemm's split over threads (GemmDispatch.h): the blocks cover C once,
// whole rows when C is tall, else columns in multiples of 16.
TEST(Linalg, GemmSplitCoversEveryRowOnce) {
  for (auto [m, n, team] : {std::tuple{100, 7, 3}, std::tuple{7, 100, 3},
                            std::tuple{5, 5, 8}, std::tuple{33, 1000, 2}}) {
    GemmSplit split(m, n);
    EXPECT_EQ(split.byRows, m >= n);
    int64_t covered = 0;
    for (int64_t t = 0; t < team; ++t) {
      EXPECT_EQ(split.first(t, team), covered);
      covered = std::max(covered, split.last(t, team));
      if (!split.byRows && split.last(t, team) < split.extent)
        EXPECT_EQ(split.last(t, team) % 16, 0);
    }
    EXPECT_EQ(covered, split.byRows ? m : n);
  }
}

// OpenBLAS's packing (BlasPacking.h) with the blocking its SkylakeX
// kernels use in 0.3.21 (param.h: P = Q = 448, 3 x 4 columns beside a
// whole panel; small kernels to 100^3), worked by hand from
// driver/level3/level3.c; `cleave calibrate` measures it
// (test/planner/blas-packing.test).
TEST(Linalg, BlasPackingFollowsTheLevel3Driver) {
  BlasBlocking b{448, 448, 12, 1000000};
  // Rows 512 (in (P, 2P]) halve to 256, depth 784 to 400, and with two
  // panels of rows all 64 columns sit beside them: 100 + 25 pages.
  EXPECT_EQ(blasPackingBytes(b, false, false, 64, 512, 784), 125 * 4096);
  // One panel of 64 rows by depth 448 (28 pages), 12 columns beside it
  // (21504 bytes: 6 pages).
  EXPECT_EQ(blasPackingBytes(b, false, false, 64, 64, 1024), 34 * 4096);
  // Small products pack nothing, but not a transposed b (OpenBLAS's
  // transposed a) with more than 1200 results.
  EXPECT_EQ(blasPackingBytes(b, false, false, 100, 100, 100), 0);
  EXPECT_EQ(blasPackingBytes(b, true, false, 80, 80, 80), 0);
  EXPECT_EQ(blasPackingBytes(b, false, true, 64, 64, 64), 5 * 4096);
  EXPECT_EQ(blasPackingBytes(b, false, true, 30, 40, 64), 0);
  // Without a measured blocking nothing is predicted.
  EXPECT_EQ(blasPackingBytes(BlasBlocking{}, false, false, 64, 512, 784), 0);
}
