//===- KernelsNormalization.cpp - softmax and layer norm ------------------===//
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

// batchNorm and batchNormGrad: KernelsBatchNorm.cpp.

} // namespace cleave::rt
