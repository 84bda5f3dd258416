//===- CudnnHostEmulation.cpp - the cuDNN calls, on the host --------------===//
//
// Part of the host emulation of the cuda target (see CudaHostEmulation.cpp):
// the cuDNN functions the runtime calls, with cuDNN's documented semantics,
// on host memory. The descriptors are the structs of CudnnHostEmulation.h,
// set by CudnnDescriptorsHostEmulation.cpp; the three convolutions, here,
// are computed from the geometry the descriptors hold (NCHW
// tensor extents, a KCRS filter, per-dim pads, strides and dilations, the
// group count), as a cross-correlation with zero padding and
// y = alpha * result + beta * y, by a plain loop over every product with
// double accumulators. That loop shares nothing with the runtime's kernels,
// so a descriptor the runtime sets wrongly shows up as wrong numbers. What
// the emulation does not implement (data types other than float, strided
// or NHWC layouts, the flipped-kernel mode, math types that allow TF32) it
// refuses with an error status, naming the reason in cudnnGetErrorString,
// rather than compute something a GPU would not.
//
// Each convolution call prints its name, geometry, algorithm and workspace
// to stderr (each distinct line once), so that tests can check which cuDNN
// calls a program makes.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudnnHostEmulation.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace cleave::rt::cuda::emulation;

namespace {

/// Prints `line` to stderr, the first time it comes only.
void trace(const std::string &line) {
  static std::set<std::string> seen;
  if (seen.insert(line).second)
    std::fprintf(stderr, "%s\n", line.c_str());
}

/// "[v0,v1,...]".
std::string list(const int *values, int n) {
  std::string text = "[";
  for (int i = 0; i < n; ++i)
    text += (i ? "," : "") + std::to_string(values[i]);
  return text + "]";
}

/// A convolution's geometry, read from its descriptors and checked against
/// one another; a 2-d convolution as a 3-d one with a leading size-1 dim.
struct Geometry {
  int64_t batch, inChannels, outChannels, groups;
  int64_t in[3], out[3], kernel[3], pad[3], stride[3], dilation[3];
  int64_t xCount, wCount, yCount;
  /// As the trace prints it: the descriptors' own extents.
  std::string text;

  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
};

/// True when t's strides are those of a packed row-major (NCHW) tensor.
bool isPacked(const cudnnTensorStruct &t) {
  int64_t expected = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.strides[d] != expected)
      return false;
    expected *= t.dims[d];
  }
  return true;
}

/// Reads the geometry of the convolution of x by w into y (for the
/// backward calls: of the forward convolution they differentiate), or
/// says why it is not one cuDNN (or this emulation) computes.
cudnnStatus_t readGeometry(cudnnHandle_t handle, const cudnnTensorStruct *x,
                           const cudnnFilterStruct *w,
                           const cudnnConvolutionStruct *conv,
                           const cudnnTensorStruct *y, Geometry &g) {
  if (!handle || !x || !w || !conv || !y)
    return fail(CUDNN_STATUS_BAD_PARAM, "a null handle or descriptor");
  if (!x->rank || !y->rank || !w->rank || !conv->spatial)
    return fail(CUDNN_STATUS_BAD_PARAM, "a descriptor that was never set");
  if (x->type != CUDNN_DATA_FLOAT || y->type != CUDNN_DATA_FLOAT ||
      w->type != CUDNN_DATA_FLOAT || conv->computeType != CUDNN_DATA_FLOAT)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "the emulation computes float data in float only");
  if (w->format != CUDNN_TENSOR_NCHW)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "the emulation takes NCHW (KCRS) filters only");
  if (!isPacked(*x) || !isPacked(*y))
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "the emulation takes packed NCHW tensors only");
  if (conv->mode != CUDNN_CROSS_CORRELATION)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "the emulation computes CUDNN_CROSS_CORRELATION only");
  // Under the other math types a GPU may round float inputs to TF32, which
  // the emulation's float products would not show.
  if (conv->math != CUDNN_FMA_MATH)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "the emulation computes CUDNN_FMA_MATH only");
  int rank = x->rank;
  if (y->rank != rank || w->rank != rank || conv->spatial != rank - 2)
    return fail(CUDNN_STATUS_BAD_PARAM,
                "x, w, y and the convolution disagree on the rank");
  if (rank != 4 && rank != 5)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "convolutions have 2 or 3 spatial dims");
  g.batch = x->dims[0];
  g.inChannels = x->dims[1];
  g.outChannels = w->dims[0];
  g.groups = conv->groups;
  if (g.inChannels != w->dims[1] * g.groups || g.outChannels % g.groups != 0 ||
      y->dims[0] != g.batch || y->dims[1] != g.outChannels)
    return fail(CUDNN_STATUS_BAD_PARAM,
                "the channels and batch of x, w and y do not match the "
                "group count");
  int spatial = rank - 2, shift = 3 - spatial;
  for (int d = 0; d < 3; ++d) {
    g.in[d] = g.out[d] = g.kernel[d] = g.stride[d] = g.dilation[d] = 1;
    g.pad[d] = 0;
  }
  for (int i = 0; i < spatial; ++i) {
    int d = shift + i;
    g.in[d] = x->dims[2 + i];
    g.out[d] = y->dims[2 + i];
    g.kernel[d] = w->dims[2 + i];
    g.pad[d] = conv->pad[i];
    g.stride[d] = conv->stride[i];
    g.dilation[d] = conv->dilation[i];
    // cuDNN's output extent: 1 + (in + 2 pad - ((kernel - 1) dilation + 1))
    // / stride, the same pad at both ends.
    int64_t span = (g.kernel[d] - 1) * g.dilation[d] + 1;
    int64_t padded = g.in[d] + 2 * g.pad[d];
    if (padded < span || g.out[d] != 1 + (padded - span) / g.stride[d])
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "y's spatial dims are not the convolution's output dims");
  }
  g.xCount = count(x->dims, rank);
  g.wCount = count(w->dims, rank);
  g.yCount = count(y->dims, rank);
  g.text = "x=" + list(x->dims, rank) + " w=" + list(w->dims, rank) +
           " y=" + list(y->dims, rank) + " pad=" + list(conv->pad, spatial) +
           " stride=" + list(conv->stride, spatial) +
           " dilation=" + list(conv->dilation, spatial) +
           " groups=" + std::to_string(conv->groups);
  clearFailure();
  return CUDNN_STATUS_SUCCESS;
}

/// Calls f(xi, wi, yi), with packed indices into x, w and y, for every
/// product x[xi] * w[wi] that the forward convolution adds into y[yi]:
/// output channel k of group k / (K / G) reads that group's input channels
/// with its filter's second dim, tap t of output position o reads input
/// position o * stride - pad + t * dilation (no flip), and a tap in the
/// padding adds nothing.
template <typename F> void forEachProduct(const Geometry &g, F f) {
  int64_t groupIn = g.inChannels / g.groups;
  int64_t groupOut = g.outChannels / g.groups;
  int64_t inSize = g.inSize(), outSize = g.outSize(), kSize = g.kernelSize();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t k = 0; k < g.outChannels; ++k)
      for (int64_t cg = 0; cg < groupIn; ++cg) {
        int64_t c = k / groupOut * groupIn + cg;
        int64_t xBase = (n * g.inChannels + c) * inSize;
        int64_t wBase = (k * groupIn + cg) * kSize;
        int64_t yBase = (n * g.outChannels + k) * outSize;
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
            for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
              int64_t yi = yBase + (o0 * g.out[1] + o1) * g.out[2] + o2;
              for (int64_t t0 = 0; t0 < g.kernel[0]; ++t0) {
                int64_t i0 = o0 * g.stride[0] - g.pad[0] + t0 * g.dilation[0];
                if (i0 < 0 || i0 >= g.in[0])
                  continue;
                for (int64_t t1 = 0; t1 < g.kernel[1]; ++t1) {
                  int64_t i1 = o1 * g.stride[1] - g.pad[1] + t1 * g.dilation[1];
                  if (i1 < 0 || i1 >= g.in[1])
                    continue;
                  for (int64_t t2 = 0; t2 < g.kernel[2]; ++t2) {
                    int64_t i2 =
                        o2 * g.stride[2] - g.pad[2] + t2 * g.dilation[2];
                    if (i2 < 0 || i2 >= g.in[2])
                      continue;
                    f(xBase + (i0 * g.in[1] + i1) * g.in[2] + i2,
                      wBase + (t0 * g.kernel[1] + t1) * g.kernel[2] + t2, yi);
                  }
                }
              }
            }
      }
}

/// out = alpha * result + beta * out; with beta 0, out is not read (cuDNN's
/// rule: whatever it held, NaN included, is overwritten).
void blend(const void *alpha, const std::vector<double> &result,
           const void *beta, void *out) {
  float a = *static_cast<const float *>(alpha);
  float b = *static_cast<const float *>(beta);
  auto *o = static_cast<float *>(out);
  for (size_t i = 0; i < result.size(); ++i)
    o[i] = static_cast<float>(a * result[i] + (b == 0.0f ? 0.0 : b * o[i]));
}

/// The workspace the emulation asks of an algorithm: none for those marked
/// `free`, else the bytes of one (sample, group)'s im2col matrix. Stand-ins
/// for what real algorithms need, so that the runtime's size query and the
/// workspace it passes are checked.
size_t workspaceBytes(const Geometry &g, bool free) {
  if (free)
    return 0;
  return static_cast<size_t>(g.inChannels / g.groups * g.kernelSize() *
                             g.outSize()) *
         sizeof(float);
}

/// The workspace of `algo` (of `algoCount` algorithms, `freeAlgo` the one
/// needing none), or why there is none.
cudnnStatus_t algorithmWorkspace(const Geometry &g, int algo, int algoCount,
                                 int freeAlgo, size_t *bytes) {
  if (algo < 0 || algo >= algoCount || !bytes)
    return fail(CUDNN_STATUS_BAD_PARAM, "an unknown algorithm or a null size");
  *bytes = workspaceBytes(g, algo == freeAlgo);
  return CUDNN_STATUS_SUCCESS;
}

/// Checks a convolution call's pointers and workspace, fills the workspace
/// with NaN (as a real algorithm overwrites its scratch, so that an operand
/// overlapping it shows) and traces the call.
cudnnStatus_t startCall(const char *name, const Geometry &g, int algo,
                        size_t needed, void *workspace, size_t bytes,
                        const void *alpha, const void *beta,
                        std::initializer_list<const void *> operands) {
  for (const void *operand : operands)
    if (!operand)
      return fail(CUDNN_STATUS_BAD_PARAM, "a null tensor pointer");
  if (!alpha || !beta)
    return fail(CUDNN_STATUS_BAD_PARAM, "a null alpha or beta");
  if (bytes < needed || (needed && !workspace))
    return fail(CUDNN_STATUS_BAD_PARAM,
                "a workspace of " + std::to_string(bytes) + " bytes at " +
                    (workspace ? "a buffer" : "null") + " where algorithm " +
                    std::to_string(algo) + " needs " + std::to_string(needed));
  if (bytes && reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "a workspace not aligned to 256 bytes");
  auto *scratch = static_cast<float *>(workspace);
  for (size_t i = 0; i < bytes / sizeof(float); ++i)
    scratch[i] = std::numeric_limits<float>::quiet_NaN();
  trace(std::string(name) + " (host emulation): " + g.text + " algo=" +
        std::to_string(algo) + " workspace=" + std::to_string(bytes));
  return CUDNN_STATUS_SUCCESS;
}

/// An algorithm of the emulated heuristics: whether cuDNN documents it as
/// deterministic, and whether the emulation asks workspace of it.
template <typename Algo> struct Ranked {
  Algo algo;
  cudnnDeterminism_t determinism;
  bool workspaceFree;
};

/// cudnnGet*Algorithm_v7: `ranked` as the heuristic results, best first.
template <typename Perf, typename Algo>
cudnnStatus_t heuristics(const Geometry &g, const cudnnConvolutionStruct *conv,
                         std::initializer_list<Ranked<Algo>> ranked,
                         int requested, int *returned, Perf *results) {
  if (requested < 1 || !returned || !results)
    return fail(CUDNN_STATUS_BAD_PARAM, "no room for the results");
  int n = 0;
  for (const Ranked<Algo> &r : ranked) {
    if (n == requested)
      break;
    Perf &perf = results[n++];
    std::memset(&perf, 0, sizeof perf);
    perf.algo = r.algo;
    perf.status = CUDNN_STATUS_SUCCESS;
    perf.time = -1.0f; // a heuristic, not a measurement
    perf.memory = workspaceBytes(g, r.workspaceFree);
    perf.determinism = r.determinism;
    perf.mathType = conv->math;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

// The algorithms the emulation asks no workspace of. The rankings, in the
// cudnnGet*Algorithm_v7 functions below, are an order, not a measurement;
// the backward ones put a non-deterministic algorithm first (as cuDNN's
// heuristics may), so that the runtime's preference for deterministic ones
// is exercised.
constexpr Ranked<cudnnConvolutionFwdAlgo_t> kForwardFree = {
    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_DETERMINISTIC, true};
constexpr Ranked<cudnnConvolutionBwdDataAlgo_t> kBackwardDataFree = {
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_NON_DETERMINISTIC, true};
constexpr Ranked<cudnnConvolutionBwdFilterAlgo_t> kBackwardFilterFree = {
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_NON_DETERMINISTIC, true};

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Forward: y = alpha * conv(x, w) + beta * y
//===----------------------------------------------------------------------===//

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t y, const int requested, int *returned,
    cudnnConvolutionFwdAlgoPerf_t *results) {
  Geometry g;
  if (cudnnStatus_t status = readGeometry(handle, x, w, conv, y, g))
    return status;
  return heuristics<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      g, conv,
      {{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_DETERMINISTIC,
        false},
       kForwardFree,
       {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_DETERMINISTIC, false}},
      requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
    size_t *bytes) {
  Geometry g;
  if (cudnnStatus_t status = readGeometry(handle, x, w, conv, y, g))
    return status;
  return algorithmWorkspace(g, algo, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                            kForwardFree.algo, bytes);
}

cudnnStatus_t cudnnConvolutionForward(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xd,
    const void *x, const cudnnFilterDescriptor_t wd, const void *w,
    const cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t algo,
    void *workspace, size_t workspaceBytes, const void *beta,
    const cudnnTensorDescriptor_t yd, void *y) {
  Geometry g;
  size_t needed = 0;
  if (cudnnStatus_t status = readGeometry(handle, xd, wd, conv, yd, g))
    return status;
  if (cudnnStatus_t status = cudnnGetConvolutionForwardWorkspaceSize(
          handle, xd, wd, conv, yd, algo, &needed))
    return status;
  if (cudnnStatus_t status =
          startCall("cudnnConvolutionForward", g, algo, needed, workspace,
                    workspaceBytes, alpha, beta, {x, w, y}))
    return status;
  const auto *xs = static_cast<const float *>(x);
  const auto *ws = static_cast<const float *>(w);
  std::vector<double> result(g.yCount, 0.0);
  forEachProduct(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    result[yi] += static_cast<double>(xs[xi]) * ws[wi];
  });
  blend(alpha, result, beta, y);
  return CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Backward data: dx = alpha * (the adjoint of conv(., w))(dy) + beta * dx
//===----------------------------------------------------------------------===//

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t dx, const int requested, int *returned,
    cudnnConvolutionBwdDataAlgoPerf_t *results) {
  Geometry g;
  if (cudnnStatus_t status = readGeometry(handle, dx, w, conv, dy, g))
    return status;
  return heuristics<cudnnConvolutionBwdDataAlgoPerf_t,
                    cudnnConvolutionBwdDataAlgo_t>(
      g, conv,
      {kBackwardDataFree,
       {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_DETERMINISTIC, false}},
      requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t dx, cudnnConvolutionBwdDataAlgo_t algo,
    size_t *bytes) {
  Geometry g;
  if (cudnnStatus_t status = readGeometry(handle, dx, w, conv, dy, g))
    return status;
  return algorithmWorkspace(g, algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                            kBackwardDataFree.algo, bytes);
}

cudnnStatus_t cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wd,
    const void *w, const cudnnTensorDescriptor_t dyd, const void *dy,
    const cudnnConvolutionDescriptor_t conv, cudnnConvolutionBwdDataAlgo_t algo,
    void *workspace, size_t workspaceBytes, const void *beta,
    const cudnnTensorDescriptor_t dxd, void *dx) {
  Geometry g;
  size_t needed = 0;
  if (cudnnStatus_t status = readGeometry(handle, dxd, wd, conv, dyd, g))
    return status;
  if (cudnnStatus_t status = cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, wd, dyd, conv, dxd, algo, &needed))
    return status;
  if (cudnnStatus_t status =
          startCall("cudnnConvolutionBackwardData", g, algo, needed, workspace,
                    workspaceBytes, alpha, beta, {w, dy, dx}))
    return status;
  const auto *ws = static_cast<const float *>(w);
  const auto *dys = static_cast<const float *>(dy);
  std::vector<double> result(g.xCount, 0.0);
  forEachProduct(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    result[xi] += static_cast<double>(dys[yi]) * ws[wi];
  });
  blend(alpha, result, beta, dx);
  return CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Backward filter: dw = alpha * (the adjoint of conv(x, .))(dy) + beta * dw
//===----------------------------------------------------------------------===//

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnFilterDescriptor_t dw, const int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *results) {
  Geometry g;
  if (cudnnStatus_t status = readGeometry(handle, x, dw, conv, dy, g))
    return status;
  return heuristics<cudnnConvolutionBwdFilterAlgoPerf_t,
                    cudnnConvolutionBwdFilterAlgo_t>(
      g, conv,
      {kBackwardFilterFree,
       {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_DETERMINISTIC, false},
       {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, CUDNN_NON_DETERMINISTIC, false}},
      requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
    const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnFilterDescriptor_t dw, cudnnConvolutionBwdFilterAlgo_t algo,
    size_t *bytes) {
  Geometry g;
  if (cudnnStatus_t status = readGeometry(handle, x, dw, conv, dy, g))
    return status;
  // cuDNN's header marks this one "not implemented".
  if (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD");
  return algorithmWorkspace(g, algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                            kBackwardFilterFree.algo, bytes);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xd,
    const void *x, const cudnnTensorDescriptor_t dyd, const void *dy,
    const cudnnConvolutionDescriptor_t conv,
    cudnnConvolutionBwdFilterAlgo_t algo, void *workspace,
    size_t workspaceBytes, const void *beta, const cudnnFilterDescriptor_t dwd,
    void *dw) {
  Geometry g;
  size_t needed = 0;
  if (cudnnStatus_t status = readGeometry(handle, xd, dwd, conv, dyd, g))
    return status;
  if (cudnnStatus_t status = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, xd, dyd, conv, dwd, algo, &needed))
    return status;
  if (cudnnStatus_t status =
          startCall("cudnnConvolutionBackwardFilter", g, algo, needed,
                    workspace, workspaceBytes, alpha, beta, {x, dy, dw}))
    return status;
  const auto *xs = static_cast<const float *>(x);
  const auto *dys = static_cast<const float *>(dy);
  std::vector<double> result(g.wCount, 0.0);
  forEachProduct(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    result[wi] += static_cast<double>(xs[xi]) * dys[yi];
  });
  blend(alpha, result, beta, dw);
  return CUDNN_STATUS_SUCCESS;
}

} // extern "C"
