//===- matmul_strided_bench.cpp - the cpu target's strided products -------===//
//
// Times the runtime's matmulStrided (runtime/KernelsLinalg.cpp) on the
// products of attention in the zoo's transformer_pre_norm at batch 32
// (nn.MultiheadAttention: 4 heads of 8 features, 12 positions, so 128
// products of [12, 128 x 8] views whose rows lie 1024 floats apart), forward
// and backward, with the strides the emitted program passes; then the same
// products on packed operands. Microseconds per call and GFLOP/s, the best
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
  // {batch, row, column} strides of a (MxK), b (KxN) and c (MxN).
  struct Case {
    const char *what;
    int64_t m, n, k;
    int64_t a[3], b[3], c[3];
  };
  const Case cases[] = {
      {"MatMul_1 (q k^T)", 12, 12, 8, {96, 8, 1}, {8, 1, 1024}, {144, 12, 1}},
      {"Transpose_6 (p v)",
       12,
       8,
       12,
       {144, 12, 1},
       {8, 1024, 1},
       {8, 1024, 1}},
      {"MatMul_2 grad", 12, 12, 8, {8, 1024, 1}, {8, 1, 1024}, {144, 12, 1}},
      {"MatMul_1 grad", 12, 8, 12, {144, 12, 1}, {8, 1024, 1}, {96, 8, 1}},
      {"Transpose_5 grad", 8, 12, 12, {96, 1, 8}, {144, 12, 1}, {8, 1, 1024}},
      {"Transpose_4 grad", 12, 8, 12, {144, 1, 12}, {8, 1024, 1}, {8, 1024, 1}},
      {"packed 12x12x8", 12, 12, 8, {96, 8, 1}, {96, 12, 1}, {144, 12, 1}},
      {"packed 12x8x12", 12, 8, 12, {144, 12, 1}, {96, 8, 1}, {96, 8, 1}},
      {"packed 8x12x12", 8, 12, 12, {96, 12, 1}, {144, 12, 1}, {96, 12, 1}},
  };
  const Shape batch{128};
  std::vector<float> a(1 << 16), b(1 << 16), c(1 << 16);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 13) * 0.1f;
    b[i] = static_cast<float>(i % 7) * 0.2f;
  }
  std::printf("| product | m x n x k | us | GFLOP/s |\n|---|---|---:|---:|\n");
  for (const Case &p : cases) {
    const int calls = 2000;
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i)
        matmulStrided(batch, p.m, p.n, p.k, a.data(), p.a, b.data(), p.b,
                      c.data(), p.c);
      std::chrono::duration<double, std::micro> took =
          std::chrono::steady_clock::now() - start;
      best = std::min(best, took.count() / calls);
    }
    double flops = 2.0 * 128 * p.m * p.n * p.k;
    std::printf("| %s | %ldx%ldx%ld | %.2f | %.1f |\n", p.what,
                static_cast<long>(p.m), static_cast<long>(p.n),
                static_cast<long>(p.k), best, flops / best * 1e-3);
  }
  return 0;
}
