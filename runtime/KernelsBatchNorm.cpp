//===- KernelsBatchNorm.cpp - batch normalization on the cpu --------------===//
//
// Part of the Cleave runtime. BatchNormalization over dim 1 of [N, C, ...],
// forward and backward, in vector loops. A sample is a row of C * S floats
// (S the spatial size); every pass runs along whole rows, the samples one
// after another, so the vector loop is as long as a row whatever the
// channel's plane size (a per-channel loop over planes of 1 to 4 floats,
// MobileNetV2's late layers, is all loop overhead). Per-channel values are
// first spread over a row (a[j] = a[c of j]) for the loops to read.
//
// Statistics as before: batch mean, then the biased variance around it
// (two passes), summed in double, the positions of a row in parallel and
// the samples in order; the cuda target keeps NormalizationBodies.h. A
// batch split over ranks has each pass as a kernel of its own (its sums
// are all-reduced in between), the same loops.
//
// Planes of kPlanePositions or more (a CNN's early layers at ImageNet
// sizes: 112x112 is 12544) are walked plane by plane instead, with each
// channel's values as scalars: there the row buffers (the per-position
// sums and the spread values, in double) outgrow the caches and their
// traffic was most of the op (ResNet-18's first BatchNorm gradient at
// 224x224 moved its tensors at a quarter of the memory bandwidth).
//
// On several threads each takes whole channels, so that its statistics,
// coefficients and output need no other thread's: one parallel region per
// op, no barrier (three regions, one per pass, made ResNet-18's BatchNorms
// slower on 2 threads than on 1).
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace cleave::rt {
namespace {

/// The smallest tensor whose op runs on the OpenMP threads: the elementwise
/// grain, 2^15 floats. A region costs 2-5 us where the threads spin
/// (libgomp's default wait policy) and 25-50 us where they sleep
/// (OMP_WAIT_POLICY=PASSIVE, the 2-core dev machine); an op is one region,
/// and at 2^16 floats (ResNet-18's layer1 at batch 16) its gradient takes
/// about 65 us on one core.
constexpr int64_t kBatchNormGrain = detail::kParallelGrain;

/// Buffers of this thread, kept between calls (a row of doubles can pass
/// glibc's mmap threshold, which would map and fault fresh pages per call).
template <int Slot, typename T> T *scratch(int64_t elements) {
  thread_local std::vector<T> buffer;
  if (static_cast<int64_t>(buffer.size()) < elements)
    buffer.resize(elements);
  return buffer.data();
}

/// Positions of a row each thread takes at a time: a few vectors' worth,
/// so that a thread's accumulators stay in registers or L1.
constexpr int64_t kBlock = 512;

struct Rows {
  int64_t n, channels, s, row;
  explicit Rows(const Shape &shape)
      : n(shape.dims[0]), channels(shape.dims[1]),
        s(shape.product(2, shape.rank)), row(channels * s) {}
  int64_t elements() const { return n * row; }
};

/// This thread's channels [lo, hi): all of them outside a parallel region.
struct Channels {
  int64_t lo, hi;
  explicit Channels(const Rows &r) {
    int64_t t = detail::threadNum(), threads = detail::numThreads();
    lo = r.channels * t / threads;
    hi = r.channels * (t + 1) / threads;
  }
};

/// Runs f(Channels) on the OpenMP threads, each with its share of the
/// channels, or on this one for a small tensor.
template <typename F> void overChannels(const Rows &r, F f) {
#pragma omp parallel if (r.elements() > kBatchNormGrain && r.channels > 1)
  f(Channels(r));
}

/// Planes of at least this many positions go plane by plane (see the file
/// comment).
constexpr int64_t kPlanePositions = 256;

bool planeWise(const Rows &r) { return r.s >= kPlanePositions; }

/// Independent partial sums a plane's loops keep: one chain of dependent
/// double adds per sum was latency-bound (4 cycles an add for 8 lanes),
/// twice as slow as the row loops on ResNet-18's 16x16 planes.
constexpr int kLanes = 32;

/// The sum over channel c's elements (every sample's plane) of f(e), e the
/// element's index, in double, and with g that of g(e) in the same pass.
template <typename F, typename G = std::nullptr_t>
void planeSums(const Rows &r, int64_t c, F f, double &sumF, G g = nullptr,
               double *sumG = nullptr) {
  constexpr bool both = !std::is_null_pointer_v<G>;
  double a[kLanes] = {}, b[kLanes] = {};
  auto add = [&](int k, int64_t e) {
    a[k] += f(e);
    if constexpr (both)
      b[k] += g(e);
  };
  for (int64_t n = 0; n < r.n; ++n) {
    int64_t i = n * r.row + c * r.s, end = i + r.s;
    for (; i + kLanes <= end; i += kLanes) {
      CLEAVE_SIMD
      for (int k = 0; k < kLanes; ++k)
        add(k, i + k);
    }
    for (int k = 0; i < end; ++i, ++k)
      add(k, i);
  }
  sumF = 0.0;
  for (int k = 0; k < kLanes; ++k)
    sumF += a[k];
  if constexpr (both) {
    *sumG = 0.0;
    for (int k = 0; k < kLanes; ++k)
      *sumG += b[k];
  }
}

template <typename F> double planeSum(const Rows &r, int64_t c, F f) {
  double sum;
  planeSums(r, c, f, sum);
  return sum;
}

/// acc[j] = sum over samples b of f(b * row + j, j), for every position j
/// of channels ch's part of a row, in double, and acc2[j] likewise of g
/// where acc2 is given: one pass for both, blocks of positions one after
/// another.
template <typename F, typename G>
void sumOverSamples(const Rows &r, Channels ch, double *acc, F f, double *acc2,
                    G g) {
  int64_t first = ch.lo * r.s, last = ch.hi * r.s;
  for (int64_t lo = first; lo < last; lo += kBlock) {
    int64_t hi = std::min(last, lo + kBlock);
    CLEAVE_SIMD
    for (int64_t j = lo; j < hi; ++j)
      acc[j] = 0.0;
    if (acc2) {
      CLEAVE_SIMD
      for (int64_t j = lo; j < hi; ++j)
        acc2[j] = 0.0;
    }
    for (int64_t b = 0; b < r.n; ++b) {
      int64_t base = b * r.row;
      if (acc2) {
        CLEAVE_SIMD
        for (int64_t j = lo; j < hi; ++j) {
          acc[j] += f(base + j, j);
          acc2[j] += g(base + j, j);
        }
      } else {
        CLEAVE_SIMD
        for (int64_t j = lo; j < hi; ++j)
          acc[j] += f(base + j, j);
      }
    }
  }
}

template <typename F>
void sumOverSamples(const Rows &r, Channels ch, double *acc, F f) {
  sumOverSamples(r, ch, acc, f, nullptr, f);
}

/// The sum of acc over channel c's positions.
double channelSum(const Rows &r, const double *acc, int64_t c) {
  double sum = 0.0;
  const double *p = acc + c * r.s;
  CLEAVE_SIMD_SUM(sum)
  for (int64_t i = 0; i < r.s; ++i)
    sum += p[i];
  return sum;
}

/// row[j] = perChannel[c of j], for channels ch's part of the row.
template <typename T, typename U>
void spread(const Rows &r, Channels ch, const U *perChannel, T *row) {
  for (int64_t c = ch.lo; c < ch.hi; ++c) {
    T v = static_cast<T>(perChannel[c]);
    T *p = row + c * r.s;
    for (int64_t i = 0; i < r.s; ++i)
      p[i] = v;
  }
}

/// Each channel's batch mean and biased variance (two passes, in double)
/// into mean and var; meanRow holds the means spread over a row. With dy
/// (the backward pass), the same two passes also leave sum(dy) in
/// sums[c] and sum(dy * (x - mean)) in sums[channels + c].
void batchStats(const float *x, const Rows &r, Channels ch, double *mean,
                double *var,
                double *meanRow, double *acc, const float *dy = nullptr,
                double *acc2 = nullptr, double *sums = nullptr) {
  double count = static_cast<double>(r.n * r.s);
  if (planeWise(r)) {
    for (int64_t c = ch.lo; c < ch.hi; ++c) {
      auto xOf = [&](int64_t e) { return double(x[e]); };
      double sumX = 0.0, sumDy = 0.0;
      if (dy)
        planeSums(
            r, c, xOf, sumX, [&](int64_t e) { return double(dy[e]); }, &sumDy);
      else
        sumX = planeSum(r, c, xOf);
      double mu = sumX / count;
      mean[c] = mu;
      auto squared = [&](int64_t e) {
        double d = x[e] - mu;
        return d * d;
      };
      double squares = 0.0, centered = 0.0;
      if (dy) {
        planeSums(
            r, c, squared, squares,
            [&](int64_t e) { return double(dy[e]) * (x[e] - mu); }, &centered);
        sums[c] = sumDy;
        sums[r.channels + c] = centered;
      } else {
        squares = planeSum(r, c, squared);
      }
      var[c] = squares / count;
    }
    return;
  }
  sumOverSamples(
      r, ch, acc, [&](int64_t e, int64_t) { return double(x[e]); },
      dy ? acc2 : nullptr, [&](int64_t e, int64_t) { return double(dy[e]); });
  for (int64_t c = ch.lo; c < ch.hi; ++c) {
    mean[c] = channelSum(r, acc, c) / count;
    if (dy)
      sums[c] = channelSum(r, acc2, c);
  }
  spread(r, ch, mean, meanRow);
  sumOverSamples(
      r, ch, acc,
      [&](int64_t e, int64_t j) {
        double d = x[e] - meanRow[j];
        return d * d;
      },
      dy ? acc2 : nullptr,
      [&](int64_t e, int64_t j) { return double(dy[e]) * (x[e] - meanRow[j]); });
  for (int64_t c = ch.lo; c < ch.hi; ++c) {
    var[c] = channelSum(r, acc, c) / count;
    if (dy)
      sums[r.channels + c] = channelSum(r, acc2, c);
  }
}

} // namespace

void batchNorm(const float *x, const Shape &shape, const float *scale,
               const float *bias, const float *runningMean,
               const float *runningVar, float epsilon, float momentum,
               bool training, float *y, float *newRunningMean,
               float *newRunningVar, const float *batchMean,
               const float *batchVar) {
  Rows r(shape);
  double *mean = scratch<0, double>(2 * r.channels), *var = mean + r.channels;
  float *coef = scratch<1, float>(2 * r.channels);
  bool batch = training && (batchMean || r.n * r.s > 0);
  bool planes = planeWise(r);
  double *meanRow = nullptr, *acc = nullptr;
  if (batch && !batchMean && !planes) {
    meanRow = scratch<2, double>(r.row);
    acc = scratch<3, double>(r.row);
  }
  float *aRow = planes ? nullptr : scratch<4, float>(2 * r.row);
  float *bRow = planes ? nullptr : aRow + r.row;
  overChannels(r, [&](Channels ch) {
    if (batch && batchMean) {
      for (int64_t c = ch.lo; c < ch.hi; ++c) {
        mean[c] = batchMean[c];
        var[c] = batchVar[c];
      }
    } else if (batch) {
      batchStats(x, r, ch, mean, var, meanRow, acc);
    }
    for (int64_t c = ch.lo; c < ch.hi; ++c) {
      // As BatchNormChannel (NormalizationBodies.h) computes them.
      float m = batch ? static_cast<float>(mean[c]) : runningMean[c];
      float v = batch ? static_cast<float>(var[c]) : runningVar[c];
      if (newRunningMean)
        newRunningMean[c] =
            batch ? momentum * runningMean[c] + (1.0f - momentum) * m : m;
      if (newRunningVar)
        newRunningVar[c] =
            batch ? momentum * runningVar[c] + (1.0f - momentum) * v : v;
      float a = scale[c] * (1.0f / std::sqrt(v + epsilon));
      coef[c] = a;
      coef[r.channels + c] = bias[c] - m * a;
    }
    if (planes) {
      for (int64_t c = ch.lo; c < ch.hi; ++c) {
        float a = coef[c], b = coef[r.channels + c];
        for (int64_t n = 0; n < r.n; ++n) {
          const float *xp = x + n * r.row + c * r.s;
          float *yp = y + n * r.row + c * r.s;
          CLEAVE_SIMD
          for (int64_t i = 0; i < r.s; ++i)
            yp[i] = xp[i] * a + b;
        }
      }
      return;
    }
    spread(r, ch, coef, aRow);
    spread(r, ch, coef + r.channels, bRow);
    // y = x * a + b along each sample's part of a row.
    int64_t lo = ch.lo * r.s, hi = ch.hi * r.s;
    for (int64_t b = 0; b < r.n; ++b) {
      const float *xb = x + b * r.row;
      float *yb = y + b * r.row;
      CLEAVE_SIMD
      for (int64_t j = lo; j < hi; ++j)
        yb[j] = xb[j] * aRow[j] + bRow[j];
    }
  });
}

namespace {

/// Buffers for gradFromStatistics, taken on the calling thread before its
/// region (scratch is per thread).
struct GradScratch {
  float *k, *rows;
  explicit GradScratch(const Rows &r)
      : k(scratch<1, float>(5 * r.channels)),
        rows(planeWise(r) ? nullptr : scratch<4, float>(5 * r.row)) {}
};

/// Phase 2 of batchNormGrad, from a batch's mean, var, sum(dy) (sums[c])
/// and sum(dy * (x - mean)) (sums[channels + c]) over `count` elements per
/// channel: dScale, dBias (may be null) and dx of channels ch.
void gradFromStatistics(const float *dy, const float *x, const Rows &r,
                        Channels ch, const GradScratch &buf,
                        const float *scale, const double *mean,
                        const double *var, const double *sums, double count,
                        float epsilon, float *dx, float *dScale,
                        float *dBias) {
  // Per channel, as BatchNormGradChannel's coefficients: mean, rstd,
  // scale * rstd, mean(dy), mean(dy * xhat).
  float *k = buf.k;
  for (int64_t c = ch.lo; c < ch.hi; ++c) {
    float rstd = static_cast<float>(1.0 / std::sqrt(var[c] + epsilon));
    double sumDyXhat = sums[r.channels + c] * rstd;
    dScale[c] = static_cast<float>(sumDyXhat);
    if (dBias)
      dBias[c] = static_cast<float>(sums[c]);
    k[c] = static_cast<float>(mean[c]);
    k[r.channels + c] = rstd;
    k[2 * r.channels + c] = scale[c] * rstd;
    k[3 * r.channels + c] = static_cast<float>(sums[c] / count);
    k[4 * r.channels + c] = static_cast<float>(sumDyXhat / count);
  }
  if (r.elements() == 0)
    return;
  if (planeWise(r)) {
    for (int64_t c = ch.lo; c < ch.hi; ++c) {
      float m = k[c], rstd = k[r.channels + c], g = k[2 * r.channels + c],
            mDy = k[3 * r.channels + c], mDyXhat = k[4 * r.channels + c];
      for (int64_t n = 0; n < r.n; ++n) {
        int64_t base = n * r.row + c * r.s;
        const float *xp = x + base, *dyp = dy + base;
        float *dxp = dx + base;
        CLEAVE_SIMD
        for (int64_t i = 0; i < r.s; ++i) {
          float xhat = (xp[i] - m) * rstd;
          dxp[i] = g * (dyp[i] - mDy - xhat * mDyXhat);
        }
      }
    }
    return;
  }
  float *rows = buf.rows;
  for (int i = 0; i < 5; ++i)
    spread(r, ch, k + i * r.channels, rows + i * r.row);
  const float *m = rows, *rstd = rows + r.row, *g = rows + 2 * r.row,
              *mDy = rows + 3 * r.row, *mDyXhat = rows + 4 * r.row;
  // dx = scale * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)).
  int64_t lo = ch.lo * r.s, hi = ch.hi * r.s;
  for (int64_t b = 0; b < r.n; ++b) {
    const float *xb = x + b * r.row, *dyb = dy + b * r.row;
    float *dxb = dx + b * r.row;
    CLEAVE_SIMD
    for (int64_t j = lo; j < hi; ++j) {
      float xhat = (xb[j] - m[j]) * rstd[j];
      dxb[j] = g[j] * (dyb[j] - mDy[j] - xhat * mDyXhat[j]);
    }
  }
}

} // namespace

void batchNormGrad(const float *dy, const float *x, const Shape &shape,
                   const float *scale, float epsilon, float *dx, float *dScale,
                   float *dBias) {
  Rows r(shape);
  if (r.n * r.s == 0) {
    // No elements, so no dx: only the sums are due.
    for (int64_t c = 0; c < r.channels; ++c) {
      dScale[c] = 0.0f;
      if (dBias)
        dBias[c] = 0.0f;
    }
    return;
  }
  double *mean = scratch<0, double>(2 * r.channels), *var = mean + r.channels;
  bool rows = !planeWise(r);
  double *meanRow = rows ? scratch<2, double>(r.row) : nullptr,
         *acc = rows ? scratch<3, double>(r.row) : nullptr,
         *acc2 = rows ? scratch<6, double>(r.row) : nullptr;
  // sum(dy) and sum(dy * (x - mean)) per channel, in the statistics' two
  // passes; xhat = (x - mean) * rstd.
  double *sums = scratch<5, double>(2 * r.channels);
  GradScratch buf(r);
  overChannels(r, [&](Channels ch) {
    batchStats(x, r, ch, mean, var, meanRow, acc, dy, acc2, sums);
    gradFromStatistics(dy, x, r, ch, buf, scale, mean, var, sums,
                       static_cast<double>(r.n * r.s), epsilon, dx, dScale,
                       dBias);
  });
}

void batchNormSum(const float *x, const Shape &shape, double divisor,
                  float *out) {
  Rows r(shape);
  if (planeWise(r)) {
    overChannels(r, [&](Channels ch) {
      for (int64_t c = ch.lo; c < ch.hi; ++c)
        out[c] = static_cast<float>(
            planeSum(r, c, [&](int64_t e) { return double(x[e]); }) / divisor);
    });
    return;
  }
  double *acc = scratch<3, double>(r.row);
  overChannels(r, [&](Channels ch) {
    sumOverSamples(r, ch, acc,
                   [&](int64_t e, int64_t) { return double(x[e]); });
    for (int64_t c = ch.lo; c < ch.hi; ++c)
      out[c] = static_cast<float>(channelSum(r, acc, c) / divisor);
  });
}

void batchNormSquaredDeviationSum(const float *x, const Shape &shape,
                                  const float *mean, double divisor,
                                  float *out) {
  Rows r(shape);
  if (planeWise(r)) {
    overChannels(r, [&](Channels ch) {
      for (int64_t c = ch.lo; c < ch.hi; ++c) {
        double mu = mean[c];
        out[c] = static_cast<float>(planeSum(r, c,
                                             [&](int64_t e) {
                                               double d = x[e] - mu;
                                               return d * d;
                                             }) /
                                    divisor);
      }
    });
    return;
  }
  double *meanRow = scratch<2, double>(r.row), *acc = scratch<3, double>(r.row);
  overChannels(r, [&](Channels ch) {
    spread(r, ch, mean, meanRow);
    sumOverSamples(r, ch, acc, [&](int64_t e, int64_t j) {
      double d = x[e] - meanRow[j];
      return d * d;
    });
    for (int64_t c = ch.lo; c < ch.hi; ++c)
      out[c] = static_cast<float>(channelSum(r, acc, c) / divisor);
  });
}

void batchNormGradSums(const float *dy, const float *x, const Shape &shape,
                       const float *mean, float *sumDy, float *sumDyCentered) {
  Rows r(shape);
  if (planeWise(r)) {
    overChannels(r, [&](Channels ch) {
      for (int64_t c = ch.lo; c < ch.hi; ++c) {
        double mu = mean[c], a = 0.0, b = 0.0;
        planeSums(
            r, c, [&](int64_t e) { return double(dy[e]); }, a,
            [&](int64_t e) { return double(dy[e]) * (x[e] - mu); }, &b);
        sumDy[c] = static_cast<float>(a);
        sumDyCentered[c] = static_cast<float>(b);
      }
    });
    return;
  }
  double *meanRow = scratch<2, double>(r.row), *acc = scratch<3, double>(r.row),
         *acc2 = scratch<6, double>(r.row);
  overChannels(r, [&](Channels ch) {
    spread(r, ch, mean, meanRow);
    sumOverSamples(
        r, ch, acc, [&](int64_t e, int64_t) { return double(dy[e]); }, acc2,
        [&](int64_t e, int64_t j) {
          return double(dy[e]) * (x[e] - meanRow[j]);
        });
    for (int64_t c = ch.lo; c < ch.hi; ++c) {
      sumDy[c] = static_cast<float>(channelSum(r, acc, c));
      sumDyCentered[c] = static_cast<float>(channelSum(r, acc2, c));
    }
  });
}

void batchNormGradFromSums(const float *dy, const float *x, const Shape &shape,
                           const float *scale, const float *mean,
                           const float *var, const float *sumDy,
                           const float *sumDyCentered, double count,
                           float epsilon, float *dx, float *dScale,
                           float *dBias) {
  Rows r(shape);
  double *m = scratch<0, double>(2 * r.channels), *v = m + r.channels;
  double *sums = scratch<5, double>(2 * r.channels);
  GradScratch buf(r);
  overChannels(r, [&](Channels ch) {
    for (int64_t c = ch.lo; c < ch.hi; ++c) {
      m[c] = mean[c];
      v[c] = var[c];
      sums[c] = sumDy[c];
      sums[r.channels + c] = sumDyCentered[c];
    }
    gradFromStatistics(dy, x, r, ch, buf, scale, m, v, sums, count, epsilon,
                       dx, dScale, dBias);
  });
}

} // namespace cleave::rt
