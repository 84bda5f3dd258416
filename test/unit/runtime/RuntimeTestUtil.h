//===- RuntimeTestUtil.h - helpers for the runtime kernel tests -*- C++ -*-===//
//
// Random inputs and a finite-difference gradient check shared by the
// test/unit/runtime tests.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_RUNTIME_RUNTIMETESTUTIL_H
#define CLEAVE_TEST_UNIT_RUNTIME_RUNTIMETESTUTIL_H

#include "runtime/Shape.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace cleave::rt::test {

inline std::vector<float> randomVector(int64_t n, uint32_t seed,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Values spaced at least `gap` apart in random order, so that a max or an
/// argmax does not flip under a finite-difference step smaller than gap / 2.
inline std::vector<float> distinctVector(int64_t n, uint32_t seed,
                                         float gap = 0.1f) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = (static_cast<float>(i) - n / 2.0f) * gap;
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

inline double dot(const std::vector<float> &a, const std::vector<float> &b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a[i]) * b[i];
  return s;
}

/// Checks `analytic` (dL/dx) against central differences of the scalar
/// L(x), which the caller computes (in double where it can) as a fixed
/// random projection of a kernel's outputs. The kernels are float, which
/// limits the step: with h = 1e-2 the float round-off in L and the O(h^2)
/// truncation error stay below 1e-4 absolute for these small tests (6e-5
/// observed), hence 1e-3 relative plus 1e-4 absolute.
inline void expectGradient(std::vector<float> &x,
                           const std::vector<float> &analytic,
                           const std::function<double()> &loss, double h = 1e-2,
                           double rtol = 1e-3, double atol = 1e-4) {
  ASSERT_EQ(x.size(), analytic.size());
  for (size_t i = 0; i < x.size(); ++i) {
    float saved = x[i];
    x[i] = static_cast<float>(saved + h);
    double up = loss();
    double hUp = static_cast<double>(x[i]) - saved;
    x[i] = static_cast<float>(saved - h);
    double down = loss();
    double hDown = saved - static_cast<double>(x[i]);
    x[i] = saved;
    // The float steps are not exactly h; divide by the steps taken.
    double numeric = (up - down) / (hUp + hDown);
    double scale = std::max(std::fabs(numeric), std::fabs(double(analytic[i])));
    EXPECT_NEAR(analytic[i], numeric, rtol * scale + atol)
        << "at element " << i;
  }
}

/// Row-major index of `idx` in `shape`.
inline int64_t flatIndex(const Shape &shape, const int64_t *idx) {
  int64_t f = 0;
  for (int i = 0; i < shape.rank; ++i)
    f = f * shape.dims[i] + idx[i];
  return f;
}

/// Multi-index of flat index f in `shape`.
inline void unflatten(const Shape &shape, int64_t f, int64_t *idx) {
  for (int i = shape.rank - 1; i >= 0; --i) {
    idx[i] = f % shape.dims[i];
    f /= shape.dims[i];
  }
}

/// Runs the kernels on `threads` OpenMP threads for the scope, so that the
/// threads' shares of a test's shapes do not depend on the machine.
class ScopedThreads {
public:
  explicit ScopedThreads(int threads) {
#ifdef _OPENMP
    saved = omp_get_max_threads();
    omp_set_num_threads(threads);
#endif
  }
  ~ScopedThreads() {
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
  }

private:
  int saved = 1;
};

} // namespace cleave::rt::test

#endif // CLEAVE_TEST_UNIT_RUNTIME_RUNTIMETESTUTIL_H
