//===- KernelsConvolution.cu - convolution and pooling on the GPU ---------===//
//
// Part of the Cleave runtime's cuda backend, with the semantics of the cpu
// KernelsConvolution.cpp: a convolution is im2col + a cuBLAS sgemm per
// (sample, group), its input gradient an sgemm + col2im, its weight gradient
// im2col + an accumulating sgemm; pooling is one work item per output (or,
// for avgPoolGrad, per input) element. The element-wise phases are the work
// items of ConvolutionBodies.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/ConvolutionBodies.h"

namespace cleave::rt::cuda {
namespace {

using body::Window3;

/// True when the convolution reads x unchanged as its im2col matrix.
bool isPointwise(const Window3 &w) {
  for (int d = 0; d < 3; ++d)
    if (w.kernel[d] != 1 || w.stride[d] != 1 || w.padBegin[d] != 0 ||
        w.out[d] != w.in[d])
      return false;
  return true;
}

/// Shapes of a grouped convolution.
struct ConvDims {
  int64_t batch, inChannels, outChannels, groupIn, groupOut, kRows;
  ConvDims(const Shape &xShape, const Shape &wShape, int64_t group,
           const Window3 &w) {
    batch = xShape.dims[0];
    inChannels = xShape.dims[1];
    outChannels = wShape.dims[0];
    groupIn = inChannels / group;
    groupOut = outChannels / group;
    kRows = groupIn * w.kernelSize();
  }
};

/// Bytes of the im2col matrix of one (sample, group), [kRows, outSize],
/// which every (sample, group) reuses in stream order; none for a pointwise
/// convolution, whose im2col matrix is x itself.
int64_t columnBytes(const ConvDims &cd, const Window3 &w) {
  return isPointwise(w)
             ? 0
             : cd.kRows * w.outSize() * static_cast<int64_t>(sizeof(float));
}

} // namespace

void conv(const float *x, const Shape &xShape, const float *w,
          const Shape &wShape, const float *bias, const int64_t *strides,
          const int64_t *pads, const int64_t *dilations, int64_t group,
          float *y, const Shape &yShape) {
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  ConvDims cd(xShape, wShape, group, win);
  int64_t inSize = win.inSize(), oSize = win.outSize();
  if (yShape.numElements() == 0)
    return;
  DeviceScratch col(columnBytes(cd, win));
  bool pointwise = isPointwise(win);
  for (int64_t b = 0; b < cd.batch; ++b) {
    for (int64_t g = 0; g < group; ++g) {
      const float *xg = x + (b * cd.inChannels + g * cd.groupIn) * inSize;
      const float *src = xg;
      if (!pointwise) {
        body::Im2col im2col{xg, col.as<float>(), cd.groupIn, win};
        launch(im2col.numItems(), im2col);
        src = col.as<float>();
      }
      gemm(false, false, cd.groupOut, oSize, cd.kRows, 1.0f,
           w + g * cd.groupOut * cd.kRows, src, 0.0f,
           y + (b * cd.outChannels + g * cd.groupOut) * oSize);
    }
  }
  if (bias)
    launch(yShape.numElements(),
           body::AddChannelBias{y, bias, cd.outChannels, oSize});
}

void convGradInput(const float *dy, const Shape &yShape, const float *w,
                   const Shape &wShape, const int64_t *strides,
                   const int64_t *pads, const int64_t *dilations, int64_t group,
                   float *dx, const Shape &xShape) {
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  ConvDims cd(xShape, wShape, group, win);
  int64_t inSize = win.inSize(), oSize = win.outSize();
  if (xShape.numElements() == 0)
    return;
  if (oSize == 0) {
    launch(xShape.numElements(), body::FillZero<float>{dx});
    return;
  }
  // Every dx element is written below (col2im overwrites, the pointwise
  // gemm has beta 0), so dx needs no zero-fill first.
  DeviceScratch col(columnBytes(cd, win));
  bool pointwise = isPointwise(win);
  for (int64_t b = 0; b < cd.batch; ++b) {
    for (int64_t g = 0; g < group; ++g) {
      const float *dyg = dy + (b * cd.outChannels + g * cd.groupOut) * oSize;
      const float *wg = w + g * cd.groupOut * cd.kRows;
      float *dxg = dx + (b * cd.inChannels + g * cd.groupIn) * inSize;
      // dcol = w_g^T @ dy_g; for a pointwise conv dcol is dx_g itself.
      if (pointwise) {
        gemm(true, false, cd.kRows, oSize, cd.groupOut, 1.0f, wg, dyg, 0.0f,
             dxg);
        continue;
      }
      gemm(true, false, cd.kRows, oSize, cd.groupOut, 1.0f, wg, dyg, 0.0f,
           col.as<float>());
      body::Col2im col2im{col.as<float>(), dxg, cd.groupIn, win};
      launch(col2im.numItems(), col2im);
    }
  }
}

void convGradWeight(const float *dy, const Shape &yShape, const float *x,
                    const Shape &xShape, const int64_t *strides,
                    const int64_t *pads, const int64_t *dilations,
                    int64_t group, float *dw, const Shape &wShape) {
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  ConvDims cd(xShape, wShape, group, win);
  int64_t inSize = win.inSize(), oSize = win.outSize();
  launch(wShape.numElements(), body::FillZero<float>{dw});
  if (wShape.numElements() == 0 || cd.batch * oSize == 0)
    return;
  DeviceScratch col(columnBytes(cd, win));
  bool pointwise = isPointwise(win);
  for (int64_t b = 0; b < cd.batch; ++b) {
    for (int64_t g = 0; g < group; ++g) {
      const float *xg = x + (b * cd.inChannels + g * cd.groupIn) * inSize;
      const float *src = xg;
      if (!pointwise) {
        body::Im2col im2col{xg, col.as<float>(), cd.groupIn, win};
        launch(im2col.numItems(), im2col);
        src = col.as<float>();
      }
      // dw_g += dy_g @ col^T, accumulated over the batch.
      gemm(false, true, cd.groupOut, cd.kRows, oSize, 1.0f,
           dy + (b * cd.outChannels + g * cd.groupOut) * oSize, src, 1.0f,
           dw + g * cd.groupOut * cd.kRows);
    }
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

void maxPool(const float *x, const Shape &xShape, const int64_t *kernel,
             const int64_t *strides, const int64_t *pads,
             const int64_t *dilations, float *y, const Shape &yShape) {
  Window3 win(xShape, yShape, kernel, strides, pads, dilations);
  launch(yShape.numElements(), body::MaxPool{x, y, win});
}

void maxPoolGrad(const float *dy, const Shape &yShape, const float *x,
                 const Shape &xShape, const int64_t *kernel,
                 const int64_t *strides, const int64_t *pads,
                 const int64_t *dilations, float *dx) {
  Window3 win(xShape, yShape, kernel, strides, pads, dilations);
  launch(xShape.numElements(), body::FillZero<float>{dx});
  launch(yShape.numElements(), body::MaxPoolGradAdd{dy, x, dx, win});
}

void avgPool(const float *x, const Shape &xShape, const int64_t *kernel,
             const int64_t *strides, const int64_t *pads, bool countIncludePad,
             float *y, const Shape &yShape) {
  Window3 win(xShape, yShape, kernel, strides, pads, nullptr);
  launch(yShape.numElements(), body::AvgPool{x, y, win, countIncludePad});
}

void avgPoolGrad(const float *dy, const Shape &yShape, const int64_t *kernel,
                 const int64_t *strides, const int64_t *pads,
                 bool countIncludePad, float *dx, const Shape &xShape) {
  Window3 win(xShape, yShape, kernel, strides, pads, nullptr);
  launch(xShape.numElements(), body::AvgPoolGrad{dy, dx, win, countIncludePad});
}

} // namespace cleave::rt::cuda
