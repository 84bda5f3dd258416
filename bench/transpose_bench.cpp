//===- transpose_bench.cpp - the cpu target's transpose per shape ---------===//
//
// Times the runtime's transpose (runtime/KernelsDataMovement.cpp) on the
// shapes of attention's head split and merge (12 positions, 8 features, 128
// heads x samples), of square matrices and of skinny ones: microseconds
// per call and nanoseconds per element, the best of 5 rounds (the machine
// is shared). Threads come from OMP_NUM_THREADS; bench/README.md has the
// latest numbers.
//
//   OMP_NUM_THREADS=1 cleave-transpose-bench
//
//===----------------------------------------------------------------------===//

#include "runtime/Kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace cleave::rt;

int main() {
  struct Case {
    std::vector<int64_t> dims, perm;
  };
  const std::vector<Case> cases = {
      {{128, 8, 12}, {2, 0, 1}},      {{12, 128, 8}, {1, 2, 0}},
      {{12, 128, 8}, {1, 0, 2}},      {{128, 12, 8}, {0, 2, 1}},
      {{32, 4, 12, 8}, {0, 2, 1, 3}}, {{64, 64, 64}, {0, 2, 1}},
      {{256, 256}, {1, 0}},           {{512, 512}, {1, 0}},
      {{1024, 16}, {1, 0}},           {{16, 1024}, {1, 0}}};
  std::vector<float> in(1 << 20), out(1 << 20);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i % 101);
  std::printf("| shape | perm | elements | us | ns per element |\n"
              "|---|---|---:|---:|---:|\n");
  for (const Case &c : cases) {
    Shape shape;
    shape.rank = static_cast<int>(c.dims.size());
    int64_t n = 1;
    for (int i = 0; i < shape.rank; ++i) {
      shape.dims[i] = c.dims[i];
      n *= c.dims[i];
    }
    int64_t calls = std::max<int64_t>(10, 20000000 / n);
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      transpose(in.data(), shape, c.perm.data(), out.data());
      auto start = std::chrono::steady_clock::now();
      for (int64_t k = 0; k < calls; ++k)
        transpose(in.data(), shape, c.perm.data(), out.data());
      std::chrono::duration<double, std::micro> took =
          std::chrono::steady_clock::now() - start;
      best = std::min(best, took.count() / double(calls));
    }
    std::printf("| [");
    for (size_t i = 0; i < c.dims.size(); ++i)
      std::printf("%s%ld", i ? "," : "", static_cast<long>(c.dims[i]));
    std::printf("] | [");
    for (size_t i = 0; i < c.perm.size(); ++i)
      std::printf("%s%ld", i ? "," : "", static_cast<long>(c.perm[i]));
    std::printf("] | %ld | %.2f | %.3f |\n", static_cast<long>(n), best,
                best * 1e3 / double(n));
  }
  return 0;
}
