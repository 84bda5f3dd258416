//===- KernelsNormalization.cpp - softmax, layer and batch norm -----------===//
//
// Part of the Cleave runtime. Sums accumulate in double: rows are long
// (vocabulary-sized softmaxes, whole channels of a batch) and the cost is
// negligible next to the exps.
//
//===----------------------------------------------------------------------===//

#include "runtime/Elementwise.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/NormalizationBodies.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace cleave::rt {
namespace {

using detail::kParallelGrain;

/// Columns of a strided (inner > 1) softmax handled together, so that the
/// loops over the axis run over contiguous memory.
constexpr int64_t kColumns = 256;

} // namespace

void softmax(const float *x, const Shape &shape, int axis, bool log, float *y) {
  axis = detail::normalizeAxis(axis, shape.rank);
  int64_t outer = shape.product(0, axis);
  int64_t d = shape.dims[axis];
  int64_t inner = shape.product(axis + 1, shape.rank);
  int64_t total = outer * d * inner;
  if (total == 0)
    return;

  if (inner == 1) {
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
    for (int64_t r = 0; r < outer; ++r) {
      const float *xr = x + r * d;
      float *yr = y + r * d;
      float maxVal = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < d; ++i)
        maxVal = std::max(maxVal, xr[i]);
      double sum = 0.0;
      for (int64_t i = 0; i < d; ++i) {
        float e = std::exp(xr[i] - maxVal);
        sum += e;
        if (!log)
          yr[i] = e;
      }
      if (log) {
        // (x - max) - log(sum): folding max into the shift first would
        // round at the magnitude of x.
        float logSum = static_cast<float>(std::log(sum));
        for (int64_t i = 0; i < d; ++i)
          yr[i] = (xr[i] - maxVal) - logSum;
      } else {
        float scale = static_cast<float>(1.0 / sum);
        for (int64_t i = 0; i < d; ++i)
          yr[i] *= scale;
      }
    }
    return;
  }

  int64_t chunks = (inner + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
  for (int64_t t = 0; t < outer * chunks; ++t) {
    int64_t r = t / chunks;
    int64_t c0 = t % chunks * kColumns;
    int64_t len = std::min(kColumns, inner - c0);
    const float *xb = x + r * d * inner + c0;
    float *yb = y + r * d * inner + c0;
    float maxVal[kColumns];
    double sum[kColumns];
    std::fill(maxVal, maxVal + len, -std::numeric_limits<float>::infinity());
    std::fill(sum, sum + len, 0.0);
    for (int64_t i = 0; i < d; ++i)
      for (int64_t c = 0; c < len; ++c)
        maxVal[c] = std::max(maxVal[c], xb[i * inner + c]);
    for (int64_t i = 0; i < d; ++i)
      for (int64_t c = 0; c < len; ++c) {
        float e = std::exp(xb[i * inner + c] - maxVal[c]);
        sum[c] += e;
        if (!log)
          yb[i * inner + c] = e;
      }
    float factor[kColumns];
    for (int64_t c = 0; c < len; ++c)
      factor[c] = static_cast<float>(log ? std::log(sum[c]) : 1.0 / sum[c]);
    for (int64_t i = 0; i < d; ++i)
      for (int64_t c = 0; c < len; ++c) {
        if (log)
          yb[i * inner + c] = (xb[i * inner + c] - maxVal[c]) - factor[c];
        else
          yb[i * inner + c] *= factor[c];
      }
  }
}

void softmaxGrad(const float *y, const float *dy, const Shape &shape, int axis,
                 bool log, float *dx) {
  axis = detail::normalizeAxis(axis, shape.rank);
  int64_t outer = shape.product(0, axis);
  int64_t d = shape.dims[axis];
  int64_t inner = shape.product(axis + 1, shape.rank);
  int64_t total = outer * d * inner;
  if (total == 0)
    return;
  // softmax: dx = y * (dy - sum(dy * y)); log-softmax: dx = dy - exp(y) *
  // sum(dy).
  int64_t chunks = (inner + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
  for (int64_t t = 0; t < outer * chunks; ++t) {
    int64_t r = t / chunks;
    int64_t c0 = t % chunks * kColumns;
    int64_t len = std::min(kColumns, inner - c0);
    int64_t base = r * d * inner + c0;
    double sum[kColumns];
    std::fill(sum, sum + len, 0.0);
    for (int64_t i = 0; i < d; ++i)
      for (int64_t c = 0; c < len; ++c) {
        int64_t k = base + i * inner + c;
        sum[c] += log ? dy[k] : dy[k] * y[k];
      }
    for (int64_t i = 0; i < d; ++i)
      for (int64_t c = 0; c < len; ++c) {
        int64_t k = base + i * inner + c;
        float s = static_cast<float>(sum[c]);
        dx[k] = log ? dy[k] - std::exp(y[k]) * s : y[k] * (dy[k] - s);
      }
  }
}

void layerNorm(const float *x, const Shape &shape, int axis, const float *scale,
               const float *bias, float epsilon, float *y, float *mean,
               float *invStd) {
  axis = detail::normalizeAxis(axis, shape.rank);
  int64_t rows = shape.product(0, axis);
  int64_t d = shape.product(axis, shape.rank);
  if (rows * d == 0)
    return;
  // The row is the cuda target's work item too.
  body::LayerNormRow row{x, scale, bias, y, mean, invStd, d, epsilon};
#pragma omp parallel for schedule(static) if (rows * d > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r)
    row(r);
}

void layerNormGrad(const float *dy, const float *x, const Shape &shape,
                   int axis, const float *scale, const float *mean,
                   const float *invStd, float *dx, float *dScale,
                   float *dBias) {
  axis = detail::normalizeAxis(axis, shape.rank);
  int64_t rows = shape.product(0, axis);
  int64_t d = shape.product(axis, shape.rank);
  std::fill(dScale, dScale + d, 0.0f);
  if (dBias)
    std::fill(dBias, dBias + d, 0.0f);
  if (rows * d == 0)
    return;
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * scale.
  // dScale and dBias sum over rows: each thread keeps its own partial sums,
  // merged in thread order afterwards (deterministic).
  int threads = detail::maxThreads();
  std::vector<double> partial(static_cast<size_t>(threads) * 2 * d, 0.0);
#pragma omp parallel if (rows * d > kParallelGrain)
  {
    double *pScale = partial.data() + detail::threadNum() * 2 * d;
    double *pBias = pScale + d;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * d;
      const float *dyr = dy + r * d;
      float *dxr = dx + r * d;
      float m = mean[r], rstd = invStd[r];
      double sumG = 0.0, sumGX = 0.0;
      for (int64_t i = 0; i < d; ++i) {
        float xhat = (xr[i] - m) * rstd;
        float g = dyr[i] * scale[i];
        sumG += g;
        sumGX += static_cast<double>(g) * xhat;
        pScale[i] += static_cast<double>(dyr[i]) * xhat;
        pBias[i] += dyr[i];
      }
      float meanG = static_cast<float>(sumG / d);
      float meanGX = static_cast<float>(sumGX / d);
      for (int64_t i = 0; i < d; ++i) {
        float xhat = (xr[i] - m) * rstd;
        dxr[i] = rstd * (dyr[i] * scale[i] - meanG - xhat * meanGX);
      }
    }
  }
  for (int64_t i = 0; i < d; ++i) {
    double s = 0.0, b = 0.0;
    for (int t = 0; t < threads; ++t) {
      s += partial[t * 2 * d + i];
      b += partial[t * 2 * d + d + i];
    }
    dScale[i] = static_cast<float>(s);
    if (dBias)
      dBias[i] = static_cast<float>(b);
  }
}

namespace {

/// Biased mean and variance of channel c of [N, C, S].
void channelStats(const float *x, int64_t n, int64_t c, int64_t channels,
                  int64_t s, double &mean, double &var) {
  double sum = 0.0;
  for (int64_t b = 0; b < n; ++b) {
    const float *p = x + (b * channels + c) * s;
    for (int64_t i = 0; i < s; ++i)
      sum += p[i];
  }
  int64_t count = n * s;
  mean = sum / count;
  double sq = 0.0;
  for (int64_t b = 0; b < n; ++b) {
    const float *p = x + (b * channels + c) * s;
    for (int64_t i = 0; i < s; ++i) {
      double dv = p[i] - mean;
      sq += dv * dv;
    }
  }
  var = sq / count;
}

} // namespace

void batchNorm(const float *x, const Shape &shape, const float *scale,
               const float *bias, const float *runningMean,
               const float *runningVar, float epsilon, float momentum,
               bool training, float *y, float *newRunningMean,
               float *newRunningVar) {
  int64_t n = shape.dims[0], channels = shape.dims[1];
  int64_t s = shape.product(2, shape.rank);
#pragma omp parallel for schedule(static) if (n * channels * s > kParallelGrain)
  for (int64_t c = 0; c < channels; ++c) {
    float m, var;
    if (training && n * s > 0) {
      double dm, dv;
      channelStats(x, n, c, channels, s, dm, dv);
      m = static_cast<float>(dm);
      var = static_cast<float>(dv);
      if (newRunningMean)
        newRunningMean[c] = momentum * runningMean[c] + (1.0f - momentum) * m;
      if (newRunningVar)
        newRunningVar[c] = momentum * runningVar[c] + (1.0f - momentum) * var;
    } else {
      m = runningMean[c];
      var = runningVar[c];
      if (newRunningMean)
        newRunningMean[c] = runningMean[c];
      if (newRunningVar)
        newRunningVar[c] = runningVar[c];
    }
    float rstd = 1.0f / std::sqrt(var + epsilon);
    float a = scale[c] * rstd;
    float b = bias[c] - m * a;
    for (int64_t bi = 0; bi < n; ++bi) {
      const float *xp = x + (bi * channels + c) * s;
      float *yp = y + (bi * channels + c) * s;
      for (int64_t i = 0; i < s; ++i)
        yp[i] = xp[i] * a + b;
    }
  }
}

void batchNormGrad(const float *dy, const float *x, const Shape &shape,
                   const float *scale, float epsilon, float *dx, float *dScale,
                   float *dBias) {
  int64_t n = shape.dims[0], channels = shape.dims[1];
  int64_t s = shape.product(2, shape.rank);
  int64_t count = n * s;
#pragma omp parallel for schedule(static) if (n * channels * s > kParallelGrain)
  for (int64_t c = 0; c < channels; ++c) {
    if (count == 0) {
      dScale[c] = 0.0f;
      if (dBias)
        dBias[c] = 0.0f;
      continue;
    }
    double dm, dv;
    channelStats(x, n, c, channels, s, dm, dv);
    float m = static_cast<float>(dm);
    float rstd = static_cast<float>(1.0 / std::sqrt(dv + epsilon));
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      const float *xp = x + (b * channels + c) * s;
      const float *dyp = dy + (b * channels + c) * s;
      for (int64_t i = 0; i < s; ++i) {
        sumDy += dyp[i];
        sumDyXhat += static_cast<double>(dyp[i]) * ((xp[i] - m) * rstd);
      }
    }
    dScale[c] = static_cast<float>(sumDyXhat);
    if (dBias)
      dBias[c] = static_cast<float>(sumDy);
    // dx = scale * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)).
    float k = scale[c] * rstd;
    float meanDy = static_cast<float>(sumDy / count);
    float meanDyXhat = static_cast<float>(sumDyXhat / count);
    for (int64_t b = 0; b < n; ++b) {
      const float *xp = x + (b * channels + c) * s;
      const float *dyp = dy + (b * channels + c) * s;
      float *dxp = dx + (b * channels + c) * s;
      for (int64_t i = 0; i < s; ++i) {
        float xhat = (xp[i] - m) * rstd;
        dxp[i] = k * (dyp[i] - meanDy - xhat * meanDyXhat);
      }
    }
  }
}

} // namespace cleave::rt
