//===- KernelsNormalization.cu - softmax, layer and batch norm on the GPU -===//
//
// Part of the Cleave runtime's cuda backend: the work items of
// NormalizationBodies.h launched over lines, rows, columns and channels.
// Kernels of several phases (layer-norm gradients, batch norm) launch their
// phases one after the other on the compute stream, which orders them.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/NormalizationBodies.h"

namespace cleave::rt::cuda {

using namespace cleave::body;

void softmax(const float *x, const Shape &shape, int axis, bool log, float *y) {
  AxisView view(shape, axis);
  launch(view.lines(), SoftmaxLine{x, y, view, log});
}

void softmaxMasked(const float *x, const Shape &shape, int axis, bool log,
                   const SoftmaxMasking &masking, float *y) {
  AxisView view(shape, axis);
  launch(view.lines(),
         MaskedSoftmaxLine{x, y, view, log, LineMasking(masking, shape, axis)});
}

void softmaxGrad(const float *y, const float *dy, const Shape &shape, int axis,
                 bool log, float *dx) {
  AxisView view(shape, axis);
  launch(view.lines(), SoftmaxGradLine{y, dy, dx, view, log});
}

void softmaxGradMasked(const float *y, const float *dy, const Shape &shape,
                       int axis, bool log, const SoftmaxMasking &masking,
                       float *dx) {
  AxisView view(shape, axis);
  launch(view.lines(),
         MaskedSoftmaxGradLine{y, dy, dx, view, log,
                               LineMasking(masking, shape, axis)});
}

void layerNorm(const float *x, const Shape &shape, int axis, const float *scale,
               const float *bias, float epsilon, float *y, float *mean,
               float *invStd) {
  RowView view(shape, axis);
  launch(view.rows,
         LayerNormRow{x, scale, bias, y, mean, invStd, view.d, epsilon});
}

void layerNormGrad(const float *dy, const float *x, const Shape &shape,
                   int axis, const float *scale, const float *mean,
                   const float *invStd, float *dx, float *dScale,
                   float *dBias) {
  RowView view(shape, axis);
  launch(view.rows, LayerNormGradRow{dy, x, scale, mean, invStd, dx, view.d});
  launch(view.d, LayerNormGradColumn{dy, x, mean, invStd, dScale, dBias, view});
}

void batchNorm(const float *x, const Shape &shape, const float *scale,
               const float *bias, const float *runningMean,
               const float *runningVar, float epsilon, float momentum,
               bool training, float *y, float *newRunningMean,
               float *newRunningVar, const float *batchMean,
               const float *batchVar) {
  ChannelView view(shape);
  DeviceScratch coef(2 * view.channels * sizeof(float));
  launch(view.channels,
         BatchNormChannel{x, scale, bias, runningMean, runningVar,
                          newRunningMean, newRunningVar, coef.as<float>(), view,
                          epsilon, momentum, training, batchMean, batchVar});
  launch(view.elements(), BatchNormApply{x, coef.as<float>(), y, view});
}

void batchNormGrad(const float *dy, const float *x, const Shape &shape,
                   const float *scale, float epsilon, float *dx, float *dScale,
                   float *dBias) {
  ChannelView view(shape);
  DeviceScratch coef(kBatchNormGradCoefs * view.channels * sizeof(float));
  launch(view.channels, BatchNormGradChannel{dy, x, scale, dScale, dBias,
                                             coef.as<float>(), view, epsilon});
  launch(view.elements(),
         BatchNormGradApply{dy, x, coef.as<float>(), dx, view});
}

void batchNormSum(const float *x, const Shape &shape, double divisor,
                  float *out) {
  ChannelView view(shape);
  launch(view.channels, BatchNormSumChannel{x, nullptr, out, view, divisor});
}

void batchNormSquaredDeviationSum(const float *x, const Shape &shape,
                                  const float *mean, double divisor,
                                  float *out) {
  ChannelView view(shape);
  launch(view.channels, BatchNormSumChannel{x, mean, out, view, divisor});
}

void batchNormGradSums(const float *dy, const float *x, const Shape &shape,
                       const float *mean, float *sumDy, float *sumDyCentered) {
  ChannelView view(shape);
  launch(view.channels,
         BatchNormGradSumsChannel{dy, x, mean, sumDy, sumDyCentered, view});
}

void batchNormGradFromSums(const float *dy, const float *x, const Shape &shape,
                           const float *scale, const float *mean,
                           const float *var, const float *sumDy,
                           const float *sumDyCentered, double count,
                           float epsilon, float *dx, float *dScale,
                           float *dBias) {
  ChannelView view(shape);
  DeviceScratch coef(kBatchNormGradCoefs * view.channels * sizeof(float));
  BatchNormGradChannel channel{
      dy, x, scale, dScale, dBias, coef.as<float>(), view, epsilon};
  channel.batchMean = mean;
  channel.batchVar = var;
  channel.batchSumDy = sumDy;
  channel.batchSumDyCentered = sumDyCentered;
  channel.batchCount = count;
  launch(view.channels, channel);
  launch(view.elements(),
         BatchNormGradApply{dy, x, coef.as<float>(), dx, view});
}

} // namespace cleave::rt::cuda
