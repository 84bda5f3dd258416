//===- RunOnHost.h - the cuda kernels' work items, on the host --*- C++ -*-===//
//
// Part of Cleave's shared-body tests. A cuda kernel of the runtime is a
// functor launched over [0, n) (runtime/cuda/Launch.cuh); runOnHost calls the
// very same functor in a loop, so that these tests check, on a machine
// without a GPU, the math the GPU runs against the cpu target's kernels.
// The tests are built twice: by the host compiler and by nvcc (whose host
// pass then compiles the functors as __host__ __device__ code).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_SHAREDBODIES_RUNONHOST_H
#define CLEAVE_TEST_UNIT_SHAREDBODIES_RUNONHOST_H

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace cleave::rt::test {

/// What cuda::launch(n, f) does on the GPU, one index after the other.
template <typename F> void runOnHost(int64_t n, const F &f) {
  for (int64_t i = 0; i < n; ++i)
    f(i);
}

/// Element-wise closeness of the work items' result to the cpu kernel's.
template <typename T>
void expectSame(const std::vector<T> &got, const std::vector<T> &want,
                double rtol = 1e-6, double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    EXPECT_LE(std::fabs(g - w), atol + rtol * std::fabs(w))
        << "element " << i << ": work items " << g << ", cpu kernel " << w;
  }
}

} // namespace cleave::rt::test

#endif // CLEAVE_TEST_UNIT_SHAREDBODIES_RUNONHOST_H
