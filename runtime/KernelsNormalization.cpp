//===- KernelsNormalization.cpp - softmax, layer and batch norm -----------===//
//
// Part of the Cleave runtime. The work items of NormalizationBodies.h, the
// same ones the cuda target launches, run on the OpenMP threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/NormalizationBodies.h"

#include <vector>

namespace cleave::rt {

using namespace cleave::body;
using detail::runItems;

void softmax(const float *x, const Shape &shape, int axis, bool log, float *y) {
  AxisView view(shape, axis);
  runItems(view.lines(), shape.numElements(), SoftmaxLine{x, y, view, log});
}

void softmaxGrad(const float *y, const float *dy, const Shape &shape, int axis,
                 bool log, float *dx) {
  AxisView view(shape, axis);
  runItems(view.lines(), shape.numElements(),
           SoftmaxGradLine{y, dy, dx, view, log});
}

void layerNorm(const float *x, const Shape &shape, int axis, const float *scale,
               const float *bias, float epsilon, float *y, float *mean,
               float *invStd) {
  RowView view(shape, axis);
  runItems(view.rows, shape.numElements(),
           LayerNormRow{x, scale, bias, y, mean, invStd, view.d, epsilon});
}

void layerNormGrad(const float *dy, const float *x, const Shape &shape,
                   int axis, const float *scale, const float *mean,
                   const float *invStd, float *dx, float *dScale,
                   float *dBias) {
  RowView view(shape, axis);
  runItems(view.rows, shape.numElements(),
           LayerNormGradRow{dy, x, scale, mean, invStd, dx, view.d});
  LayerNormGradColumn columns{dy, x, mean, invStd, dScale, dBias, view};
  int64_t blocks = (view.d + LayerNormGradColumn::kBlock - 1) /
                   LayerNormGradColumn::kBlock;
  runItems(blocks, shape.numElements(),
           [&](int64_t block) { columns.columns(block); });
}

void batchNorm(const float *x, const Shape &shape, const float *scale,
               const float *bias, const float *runningMean,
               const float *runningVar, float epsilon, float momentum,
               bool training, float *y, float *newRunningMean,
               float *newRunningVar) {
  ChannelView view(shape);
  std::vector<float> coef(2 * view.channels);
  runItems(view.channels, view.elements(),
           BatchNormChannel{x, scale, bias, runningMean, runningVar,
                            newRunningMean, newRunningVar, coef.data(), view,
                            epsilon, momentum, training});
  BatchNormApply apply{x, coef.data(), y, view};
  runItems(view.planes(), view.elements(), [&](int64_t p) { apply.plane(p); });
}

void batchNormGrad(const float *dy, const float *x, const Shape &shape,
                   const float *scale, float epsilon, float *dx, float *dScale,
                   float *dBias) {
  ChannelView view(shape);
  std::vector<float> coef(kBatchNormGradCoefs * view.channels);
  runItems(view.channels, view.elements(),
           BatchNormGradChannel{dy, x, scale, dScale, dBias, coef.data(), view,
                                epsilon});
  BatchNormGradApply apply{dy, x, coef.data(), dx, view};
  runItems(view.planes(), view.elements(), [&](int64_t p) { apply.plane(p); });
}

} // namespace cleave::rt
