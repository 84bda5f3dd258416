//===- matmul_strided_bench.cpp - the cpu target's strided products -------===//
//
// Times the runtime's matmulStrided (runtime/KernelsLinalg.cpp) on the
// products of attention in the zoo's transformer_pre_norm at batch 32
// (nn.MultiheadAttention: 4 heads of 8 features, 12 positions, so 128
// products of [12, 128 x 8] views whose rows lie 1024 floats apart), forward
// and backward, with the strides the emitted program passes; then the same
// products on packed operands, and those of bench.py's gpt-d128 (32 heads
// of 64 x 32 out of [8, 64, 128]). Microseconds per call and GFLOP/s, the best
// of 5 rounds (the machine is shared). Threads come from OMP_NUM_THREADS;
// bench/README.md has the latest numbers.
//
//   OMP_NUM_THREADS=1 cleave-matmul-strided-bench
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace cleave::rt;

int main() {
  // Batch dims, then {batch..., row, column} strides of a (MxK), b (KxN)
  // and c (MxN).
  struct Case {
    const char *what;
    std::vector<int64_t> batch;
    int64_t m, n, k;
    std::vector<int64_t> a, b, c;
  };
  // The zoo transformer: 128 heads x samples; F, rows a page apart.
  const std::vector<int64_t> T = {128};
  const int64_t F = 1024;
  // gpt-d128: [8, 4] heads of q, k, v in [8, 64, 4 x 32] (and k^T), and of
  // the scores [8, 4, 64, 64] (and their transpose).
  const std::vector<int64_t> G = {8, 4};
  const std::vector<int64_t> heads = {8192, 32, 128, 1},
                             headsT = {8192, 32, 1, 128},
                             scores = {16384, 4096, 64, 1},
                             scoresT = {16384, 4096, 1, 64};
  const std::vector<Case> cases = {
      {"MatMul_1 (q k^T)", T, 12, 12, 8, {96, 8, 1}, {8, 1, F}, {144, 12, 1}},
      {"Transpose_6 (p v)", T, 12, 8, 12, {144, 12, 1}, {8, F, 1}, {8, F, 1}},
      {"MatMul_2 grad", T, 12, 12, 8, {8, F, 1}, {8, 1, F}, {144, 12, 1}},
      {"MatMul_1 grad", T, 12, 8, 12, {144, 12, 1}, {8, F, 1}, {96, 8, 1}},
      {"Transpose_5 grad", T, 8, 12, 12, {96, 1, 8}, {144, 12, 1}, {8, 1, F}},
      {"Transpose_4 grad", T, 12, 8, 12, {144, 1, 12}, {8, F, 1}, {8, F, 1}},
      {"packed 12x12x8", T, 12, 12, 8, {96, 8, 1}, {96, 12, 1}, {144, 12, 1}},
      {"packed 12x8x12", T, 12, 8, 12, {144, 12, 1}, {96, 8, 1}, {96, 8, 1}},
      {"packed 8x12x12", T, 8, 12, 12, {96, 12, 1}, {144, 12, 1}, {96, 12, 1}},
      {"gpt-d128 MatMul (q k^T)", G, 64, 64, 32, heads, headsT, scores},
      {"gpt-d128 Transpose_3 (p v)", G, 64, 32, 64, scores, heads, heads},
      {"gpt-d128 MatMul_1 grad", G, 64, 64, 32, heads, headsT, scores},
      {"gpt-d128 Transpose_2 grad", G, 32, 64, 64, headsT, scores, headsT},
      {"gpt-d128 Transpose_1 grad", G, 64, 32, 64, scoresT, heads, heads},
      {"gpt-d128 Transpose grad", G, 64, 32, 64, scores, heads, heads},
  };
  std::vector<float> a(1 << 18), b(1 << 18), c(1 << 18);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 13) * 0.1f;
    b[i] = static_cast<float>(i % 7) * 0.2f;
  }
  std::printf("| product | batch | m x n x k | us | GFLOP/s |\n"
              "|---|---|---|---:|---:|\n");
  for (const Case &p : cases) {
    Shape batch;
    batch.rank = static_cast<int>(p.batch.size());
    int64_t count = 1;
    for (int i = 0; i < batch.rank; ++i) {
      batch.dims[i] = p.batch[i];
      count *= p.batch[i];
    }
    const int calls = static_cast<int>(
        std::max<int64_t>(20, 300000000 / (count * p.m * p.n * p.k)));
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i)
        matmulStrided(batch, p.m, p.n, p.k, a.data(), p.a.data(), b.data(),
                      p.b.data(), c.data(), p.c.data());
      std::chrono::duration<double, std::micro> took =
          std::chrono::steady_clock::now() - start;
      best = std::min(best, took.count() / calls);
    }
    double flops = 2.0 * count * p.m * p.n * p.k;
    std::printf("| %s | %ld | %ldx%ldx%ld | %.2f | %.1f |\n", p.what,
                static_cast<long>(count), static_cast<long>(p.m),
                static_cast<long>(p.n), static_cast<long>(p.k), best,
                flops / best * 1e-3);
  }
  return 0;
}
