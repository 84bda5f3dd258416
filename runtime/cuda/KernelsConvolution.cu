//===- KernelsConvolution.cu - convolution and pooling on the GPU ---------===//
//
// Part of the Cleave runtime's cuda backend, with the semantics of the cpu
// KernelsConvolution.cpp. A convolution, its input gradient and its weight
// gradient are one cuDNN call each (cudnnConvolutionForward, BackwardData,
// BackwardFilter) whenever cuDNN can take the ONNX convolution: symmetric
// pads, no empty tensor. The others (asymmetric pads) keep the im2col path:
// im2col + a cuBLAS sgemm per (sample, group), sgemm + col2im for the input
// gradient, im2col + an accumulating sgemm for the weight gradient. Pooling
// is one work item per output (or, for avgPoolGrad, per input) element. The
// element-wise phases are the work items of ConvolutionBodies.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/KernelScratch.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/ConvolutionBodies.h"
#include "runtime/ConvolutionShapes.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

namespace cleave::rt::cuda {
namespace {

using body::Window3;

/// Bytes of the im2col matrix of one (sample, group), [kRows, outSize],
/// which every (sample, group) reuses in stream order; none for a pointwise
/// convolution, whose im2col matrix is x itself.
int64_t columnBytes(const ConvDims &cd, const Window3 &w) {
  return isPointwise(w)
             ? 0
             : cd.kRows * w.outSize() * static_cast<int64_t>(sizeof(float));
}

//===----------------------------------------------------------------------===//
// The cuDNN path
//===----------------------------------------------------------------------===//

// cuDNN 9 deprecates the legacy descriptor API used here in favour of its
// graph API, but still ships and supports it; one call per convolution needs
// nothing the graph API adds.

/// A convolution as cuDNN's legacy descriptor API takes it: packed NCHW (or
/// NCDHW) tensors, a KCRS filter, int extents and window parameters. cuDNN
/// convolves 2 or 3 spatial dims, so a 1-d convolution is a 2-d one whose
/// height, kernel height and output height are 1.
struct CudnnGeometry {
  int rank = 0; ///< 4 or 5
  std::array<int, 5> x{}, w{}, y{};
  std::array<int, 3> pad{}, stride{}, dilation{};
  int group = 1;

  auto key() const {
    return std::tie(rank, x, w, y, pad, stride, dilation, group);
  }
  bool operator<(const CudnnGeometry &other) const {
    return key() < other.key();
  }
};

/// The geometry cuDNN gets for an ONNX convolution, or none when cuDNN
/// cannot compute it with ONNX semantics:
///  - asymmetric pads: cuDNN pads both ends of a dim alike (one pad per dim
///    in cudnnSetConvolutionNdDescriptor); ONNX lets them differ (explicit
///    pads, or auto_pad SAME_* with an even kernel), which the im2col path
///    handles;
///  - an empty tensor: cuDNN rejects zero extents; the im2col path writes
///    the zeros (or nothing) such a convolution produces;
///  - a tensor of 2^31 elements or more, or a stride, pad or dilation beyond
///    an int: the legacy API's extents and strides are ints.
std::optional<CudnnGeometry>
cudnnGeometry(const Shape &xShape, const Shape &wShape, const Shape &yShape,
              const int64_t *strides, const int64_t *pads,
              const int64_t *dilations, int64_t group) {
  for (const Shape *shape : {&xShape, &wShape, &yShape})
    if (shape->numElements() == 0 || shape->numElements() > INT_MAX)
      return std::nullopt;
  int spatial = xShape.rank - 2;
  CudnnGeometry g;
  g.rank = spatial == 3 ? 5 : 4;
  // A 1-d convolution gets a size-1 dim in front of its one spatial dim.
  int shift = g.rank - 2 - spatial;
  g.x.fill(1);
  g.w.fill(1);
  g.y.fill(1);
  g.stride.fill(1);
  g.dilation.fill(1);
  for (int d = 0; d < 2; ++d) {
    g.x[d] = static_cast<int>(xShape.dims[d]);
    g.w[d] = static_cast<int>(wShape.dims[d]);
    g.y[d] = static_cast<int>(yShape.dims[d]);
  }
  for (int i = 0; i < spatial; ++i) {
    int64_t padBegin = pads ? pads[i] : 0,
            padEnd = pads ? pads[spatial + i] : 0;
    int64_t stride = strides ? strides[i] : 1;
    int64_t dilation = dilations ? dilations[i] : 1;
    if (padBegin != padEnd || padBegin > INT_MAX || stride > INT_MAX ||
        dilation > INT_MAX)
      return std::nullopt;
    int d = shift + i;
    g.x[2 + d] = static_cast<int>(xShape.dims[2 + i]);
    g.w[2 + d] = static_cast<int>(wShape.dims[2 + i]);
    g.y[2 + d] = static_cast<int>(yShape.dims[2 + i]);
    g.pad[d] = static_cast<int>(padBegin);
    g.stride[d] = static_cast<int>(stride);
    g.dilation[d] = static_cast<int>(dilation);
  }
  g.group = static_cast<int>(group);
  return g;
}

/// A packed NCHW tensor descriptor of `rank` dims.
void setPackedTensor(cudnnTensorDescriptor_t desc, int rank, const int *dims) {
  int strides[5];
  strides[rank - 1] = 1;
  for (int d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  CLEAVE_CUDNN_CHECK(
      cudnnSetTensorNdDescriptor(desc, CUDNN_DATA_FLOAT, rank, dims, strides));
}

/// An algorithm of one direction and the workspace it needs.
template <typename Algo> struct AlgorithmChoice {
  Algo algo;
  size_t workspace;
};

/// The first of cuDNN's heuristic results (best first) that is usable here:
///  - deterministic: ranks holding replicas of a tensor (over a mesh axis
///    the model is not split on) compute the same convolution on the same
///    data and must get the same bits, and so must reruns;
///  - not Tensor Core math: the descriptor asks for FMA math (FP32, as the
///    cpu target), under which an algorithm heuristics found for Tensor
///    Cores may be unsupported;
///  - a workspace cuDNN will size for it, of at most `limit` bytes.
/// Else `fallback`, which cuDNN supports for every geometry we give it.
template <typename Algo, typename Perf, typename Workspace>
AlgorithmChoice<Algo> pickAlgorithm(const Perf *results, int count,
                                    Algo fallback, size_t limit,
                                    Workspace workspaceSize) {
  for (int i = 0; i < count; ++i) {
    const Perf &r = results[i];
    if (r.status != CUDNN_STATUS_SUCCESS ||
        r.determinism != CUDNN_DETERMINISTIC ||
        r.mathType == CUDNN_TENSOR_OP_MATH ||
        r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;
    size_t bytes = 0;
    if (workspaceSize(r.algo, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= limit)
      return {r.algo, bytes};
  }
  size_t bytes = 0;
  CLEAVE_CUDNN_CHECK(workspaceSize(fallback, &bytes));
  return {fallback, bytes};
}

/// What one convolution geometry needs from cuDNN: its descriptors, made
/// once, and each direction's algorithm, chosen by cuDNN's heuristics
/// (cudnnGet*Algorithm_v7, no benchmarking) on first use.
class CudnnPlan {
public:
  explicit CudnnPlan(const CudnnGeometry &g) {
    CLEAVE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    CLEAVE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    CLEAVE_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    CLEAVE_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    setPackedTensor(x, g.rank, g.x.data());
    setPackedTensor(y, g.rank, g.y.data());
    CLEAVE_CUDNN_CHECK(cudnnSetFilterNdDescriptor(
        w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.rank, g.w.data()));
    // ONNX's Conv is a cross-correlation (the kernel is not flipped).
    CLEAVE_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(
        conv, g.rank - 2, g.pad.data(), g.stride.data(), g.dilation.data(),
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CLEAVE_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, g.group));
    // FP32 products, as the cpu target and the cuBLAS sgemms: cuDNN's
    // CUDNN_DEFAULT_MATH lets Ampere and later GPUs round FP32 inputs to
    // TF32 on Tensor Cores; CUDNN_FMA_MATH does not.
    CLEAVE_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));
    // An algorithm may use as much scratch as the im2col path it replaces,
    // or 64 MiB if that is more; a faster one that asks for more than that
    // could run the device out of the memory the program planned for.
    int64_t im2col = g.w[1] * static_cast<int64_t>(sizeof(float));
    for (int d = 2; d < g.rank; ++d)
      im2col *= static_cast<int64_t>(g.w[d]) * g.y[d];
    workspaceLimit_ = scratch::convolution(im2col);
  }
  ~CudnnPlan() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  CudnnPlan(const CudnnPlan &) = delete;
  CudnnPlan &operator=(const CudnnPlan &) = delete;

  const AlgorithmChoice<cudnnConvolutionFwdAlgo_t> &forward() {
    if (!forward_) {
      cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int count = 0;
      CLEAVE_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          cudnnHandle(), x, w, conv, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
          &count, results));
      forward_ = pickAlgorithm(
          results, count, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
          workspaceLimit_, [&](cudnnConvolutionFwdAlgo_t algo, size_t *bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(
                cudnnHandle(), x, w, conv, y, algo, bytes);
          });
    }
    return *forward_;
  }

  const AlgorithmChoice<cudnnConvolutionBwdDataAlgo_t> &backwardData() {
    if (!backwardData_) {
      cudnnConvolutionBwdDataAlgoPerf_t
          results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      int count = 0;
      CLEAVE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          cudnnHandle(), w, y, conv, x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
          &count, results));
      backwardData_ = pickAlgorithm(
          results, count, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, workspaceLimit_,
          [&](cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(
                cudnnHandle(), w, y, conv, x, algo, bytes);
          });
    }
    return *backwardData_;
  }

  const AlgorithmChoice<cudnnConvolutionBwdFilterAlgo_t> &backwardFilter() {
    if (!backwardFilter_) {
      cudnnConvolutionBwdFilterAlgoPerf_t
          results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      int count = 0;
      CLEAVE_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          cudnnHandle(), x, y, conv, w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
          &count, results));
      backwardFilter_ = pickAlgorithm(
          results, count, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, workspaceLimit_,
          [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                cudnnHandle(), x, y, conv, w, algo, bytes);
          });
    }
    return *backwardFilter_;
  }

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

private:
  size_t workspaceLimit_;
  std::optional<AlgorithmChoice<cudnnConvolutionFwdAlgo_t>> forward_;
  std::optional<AlgorithmChoice<cudnnConvolutionBwdDataAlgo_t>> backwardData_;
  std::optional<AlgorithmChoice<cudnnConvolutionBwdFilterAlgo_t>>
      backwardFilter_;
};

/// The plan of a geometry, made on its first convolution and kept for the
/// program's life (a training step repeats the same few geometries). The
/// kernels are enqueued by the one thread that runs the step, so the cache
/// takes no lock; it is never destroyed, as the descriptors need no freeing
/// before the process exits.
CudnnPlan &cudnnPlan(const CudnnGeometry &g) {
  static auto *plans = new std::map<CudnnGeometry, std::unique_ptr<CudnnPlan>>;
  std::unique_ptr<CudnnPlan> &plan = (*plans)[g];
  if (!plan)
    plan = std::make_unique<CudnnPlan>(g);
  return *plan;
}

//===----------------------------------------------------------------------===//
// The im2col path, for the convolutions cuDNN cannot take
//===----------------------------------------------------------------------===//

/// y = conv(x, w): im2col + an sgemm per (sample, group).
void convIm2col(const float *x, const Shape &xShape, const float *w,
                const Shape &wShape, int64_t group, const Window3 &win,
                float *y) {
  ConvDims cd(xShape, wShape, group, win);
  int64_t inSize = win.inSize(), oSize = win.outSize();
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
}

/// dx of conv: an sgemm + col2im per (sample, group).
void convGradInputIm2col(const float *dy, const float *w, const Shape &wShape,
                         int64_t group, const Window3 &win, float *dx,
                         const Shape &xShape) {
  ConvDims cd(xShape, wShape, group, win);
  int64_t inSize = win.inSize(), oSize = win.outSize();
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

/// dw of conv: im2col + an sgemm accumulating over the batch.
void convGradWeightIm2col(const float *dy, const float *x, const Shape &xShape,
                          int64_t group, const Window3 &win, float *dw,
                          const Shape &wShape) {
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

} // namespace

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

// On the cuDNN path each call overwrites its output (beta 0: cuDNN does not
// read it), so none needs a zero-fill first.

void conv(const float *x, const Shape &xShape, const float *w,
          const Shape &wShape, const float *bias, const int64_t *strides,
          const int64_t *pads, const int64_t *dilations, int64_t group,
          float *y, const Shape &yShape) {
  if (yShape.numElements() == 0)
    return;
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  if (auto geometry = cudnnGeometry(xShape, wShape, yShape, strides, pads,
                                    dilations, group)) {
    CudnnPlan &plan = cudnnPlan(*geometry);
    const auto &choice = plan.forward();
    DeviceScratch workspace(choice.workspace);
    float one = 1.0f, zero = 0.0f;
    CLEAVE_CUDNN_CHECK(cudnnConvolutionForward(
        cudnnHandle(), &one, plan.x, x, plan.w, w, plan.conv, choice.algo,
        workspace.as<void>(), choice.workspace, &zero, plan.y, y));
  } else {
    convIm2col(x, xShape, w, wShape, group, win, y);
  }
  if (bias)
    launch(yShape.numElements(),
           body::AddChannelBias{y, bias, wShape.dims[0], win.outSize()});
}

void convGradInput(const float *dy, const Shape &yShape, const float *w,
                   const Shape &wShape, const int64_t *strides,
                   const int64_t *pads, const int64_t *dilations, int64_t group,
                   float *dx, const Shape &xShape) {
  if (xShape.numElements() == 0)
    return;
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  if (auto geometry = cudnnGeometry(xShape, wShape, yShape, strides, pads,
                                    dilations, group)) {
    CudnnPlan &plan = cudnnPlan(*geometry);
    const auto &choice = plan.backwardData();
    DeviceScratch workspace(choice.workspace);
    float one = 1.0f, zero = 0.0f;
    CLEAVE_CUDNN_CHECK(cudnnConvolutionBackwardData(
        cudnnHandle(), &one, plan.w, w, plan.y, dy, plan.conv, choice.algo,
        workspace.as<void>(), choice.workspace, &zero, plan.x, dx));
    return;
  }
  convGradInputIm2col(dy, w, wShape, group, win, dx, xShape);
}

void convGradWeight(const float *dy, const Shape &yShape, const float *x,
                    const Shape &xShape, const int64_t *strides,
                    const int64_t *pads, const int64_t *dilations,
                    int64_t group, float *dw, const Shape &wShape) {
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  if (auto geometry = cudnnGeometry(xShape, wShape, yShape, strides, pads,
                                    dilations, group)) {
    CudnnPlan &plan = cudnnPlan(*geometry);
    const auto &choice = plan.backwardFilter();
    DeviceScratch workspace(choice.workspace);
    float one = 1.0f, zero = 0.0f;
    CLEAVE_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        cudnnHandle(), &one, plan.x, x, plan.y, dy, plan.conv, choice.algo,
        workspace.as<void>(), choice.workspace, &zero, plan.w, dw));
    return;
  }
  convGradWeightIm2col(dy, x, xShape, group, win, dw, wShape);
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
