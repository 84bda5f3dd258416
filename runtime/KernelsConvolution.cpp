//===- KernelsConvolution.cpp - convolution and pooling -------------------===//
//
// Part of the Cleave runtime. Convolutions lower to im2col + sgemm per
// group and per image, or per few images side by side where an image's
// output is small; 1-, 2- and 3-d ops share one 3-d loop nest (Window3).
// Where oneDNN is the faster of the two for a shape and pass (preferOneDnn,
// OneDnnConvolution.h), conv and its gradients call oneDNN instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/ConvolutionCrop.h"
#include "runtime/ConvolutionShapes.h"
#include "runtime/Elementwise.h"
#include "runtime/ElementwiseBodies.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/OneDnnConvolution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace cleave::rt {
namespace {

using detail::kParallelGrain;
using detail::validRange;
using detail::Window3;
// The AveragePool divisor, the cuda target's too.
using body::avgDivisor;

/// Decomposes a flat kernel position into its three indices.
void kernelIndex(const Window3 &w, int64_t k, int64_t idx[3]) {
  idx[2] = k % w.kernel[2];
  idx[1] = k / w.kernel[2] % w.kernel[1];
  idx[0] = k / (w.kernel[2] * w.kernel[1]);
}

/// The output ranges [lo, hi) per dim whose input position for kernel
/// position `k` is in bounds, and the input offset of output position 0.
void kernelRanges(const Window3 &w, const int64_t k[3], int64_t lo[3],
                  int64_t hi[3], int64_t off[3]) {
  for (int d = 0; d < 3; ++d) {
    off[d] = k[d] * w.dilation[d] - w.padBegin[d];
    validRange(w.out[d], w.stride[d], off[d], w.in[d], lo[d], hi[d]);
  }
}

/// kernelRanges of every tap, for loops that visit the taps once per
/// channel or plane: the ranges are the same for all of them, and their
/// divisions cost more than a small plane's copy (8% of ResNet-18's step).
struct TapRange {
  int64_t lo[3], hi[3], off[3];
  bool full; // every output position in bounds
};

std::vector<TapRange> tapRanges(const Window3 &w) {
  std::vector<TapRange> taps(w.kernelSize());
  for (int64_t t = 0; t < w.kernelSize(); ++t) {
    int64_t k[3];
    TapRange &r = taps[t];
    kernelIndex(w, t, k);
    kernelRanges(w, k, r.lo, r.hi, r.off);
    r.full = true;
    for (int d = 0; d < 3; ++d)
      r.full = r.full && r.lo[d] == 0 && r.hi[d] == w.out[d];
  }
  return taps;
}

/// col[(c, k), o] = x[c, o * stride - padBegin + k * dilation], 0 in the
/// padding; col is [channels * kernelSize, outSize] with rows `ld` apart
/// (ld >= outSize: a sample's block of a batched matrix).
void im2col(const float *x, int64_t channels, const Window3 &w, float *col,
            int64_t ld) {
  int64_t kSize = w.kernelSize(), oSize = w.outSize(), inSize = w.inSize();
  int64_t rows = channels * kSize;
  std::vector<TapRange> taps = tapRanges(w);
  for (int64_t row = 0; row < rows; ++row) {
    const TapRange &t = taps[row % kSize];
    const int64_t *lo = t.lo, *hi = t.hi, *off = t.off;
    const float *xc = x + row / kSize * inSize;
    float *dst = col + row * ld;
    if (!t.full)
      std::fill(dst, dst + oSize, 0.0f);
    for (int64_t o0 = lo[0]; o0 < hi[0]; ++o0) {
      int64_t i0 = o0 * w.stride[0] + off[0];
      for (int64_t o1 = lo[1]; o1 < hi[1]; ++o1) {
        int64_t i1 = o1 * w.stride[1] + off[1];
        const float *src = xc + (i0 * w.in[1] + i1) * w.in[2];
        float *out = dst + (o0 * w.out[1] + o1) * w.out[2];
        int64_t s2 = w.stride[2], off2 = off[2];
        for (int64_t o2 = lo[2]; o2 < hi[2]; ++o2)
          out[o2] = src[o2 * s2 + off2];
      }
    }
  }
}

/// The adjoint of im2col: x[c, ...] += col[(c, k), o] (rows `ld` apart).
void col2im(const float *col, int64_t channels, const Window3 &w, float *x,
            int64_t ld) {
  int64_t kSize = w.kernelSize(), inSize = w.inSize();
  std::vector<TapRange> taps = tapRanges(w);
  for (int64_t c = 0; c < channels; ++c) {
    float *xc = x + c * inSize;
    for (int64_t kk = 0; kk < kSize; ++kk) {
      const int64_t *lo = taps[kk].lo, *hi = taps[kk].hi, *off = taps[kk].off;
      const float *src = col + (c * kSize + kk) * ld;
      for (int64_t o0 = lo[0]; o0 < hi[0]; ++o0) {
        int64_t i0 = o0 * w.stride[0] + off[0];
        for (int64_t o1 = lo[1]; o1 < hi[1]; ++o1) {
          int64_t i1 = o1 * w.stride[1] + off[1];
          float *dst = xc + (i0 * w.in[1] + i1) * w.in[2];
          const float *in = src + (o0 * w.out[1] + o1) * w.out[2];
          int64_t s2 = w.stride[2], off2 = off[2];
          for (int64_t o2 = lo[2]; o2 < hi[2]; ++o2)
            dst[o2 * s2 + off2] += in[o2];
        }
      }
    }
  }
}

/// Floats of scratch a chunk of `per` samples needs: one sample's im2col
/// matrix (none for a pointwise conv, which reads its input in place), or
/// for several the side-by-side im2col matrix and the product (or gathered
/// dy) beside it.
int64_t chunkScratch(const ConvDims &cd, int64_t oSize, int64_t per,
                     bool pointwise) {
  if (per == 1)
    return pointwise ? 0 : cd.kRows * oSize;
  return (cd.kRows + cd.groupOut) * per * oSize;
}

/// The work of one GEMM: samples [first, first + count), each with an
/// oSize-column block of the matrices.
struct SampleChunk {
  int64_t first, count;
};

/// Runs body(chunk, scratch) for every chunk of `per` samples, with
/// `scratch` a buffer of `scratchFloats`: on the OpenMP threads, each with
/// a buffer of its own and single-threaded GEMMs, when there are chunks
/// enough for the threads and work enough to pay for them; otherwise in
/// order, each GEMM split over the threads. (Not an `if` clause on one
/// region: an inactive region still counts as a nesting level, and libgomp
/// starts fresh threads for every region nested in one, here every
/// GEMM's.)
template <typename Body>
void forEachChunk(const ConvDims &cd, int64_t oSize, int64_t per,
                  int64_t scratchFloats, bool mayParallelize,
                  const Body &body) {
  int64_t chunks = (cd.batch + per - 1) / per;
  auto chunk = [&](int64_t i) {
    return SampleChunk{i * per, std::min(per, cd.batch - i * per)};
  };
  bool parallel = mayParallelize && chunks >= detail::maxThreads() &&
                  cd.batch * cd.outChannels * cd.kRows * oSize >
                      kParallelGrain &&
                  !detail::inParallel();
  if (!parallel) {
    std::vector<float> scratch(scratchFloats);
    for (int64_t i = 0; i < chunks; ++i)
      body(chunk(i), scratch.data());
    return;
  }
#pragma omp parallel
  {
    std::vector<float> scratch(scratchFloats);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < chunks; ++i)
      body(chunk(i), scratch.data());
  }
}

/// Planes of fewer floats than this are copied element by element, samples
/// innermost: a copy_n per plane is a memmove call per plane, which on a
/// 1x1 plane (ResNet-18's layer4 at 32x32, 512 channels x 16 samples) cost
/// 5 ns an element, more than the GEMM it feeds.
constexpr int64_t kCopiedPlane = 16;

/// Group g's channels of the chunk's samples as one matrix [channels,
/// count * size] (sample j's block at columns j * size), from or to the
/// [batch, totalChannels, size] tensor t.
void gatherChannels(const float *t, int64_t totalChannels, int64_t first,
                    int64_t channels, int64_t size, SampleChunk chunk,
                    float *m) {
  int64_t ld = chunk.count * size;
  if (size < kCopiedPlane) {
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t o = 0; o < size; ++o)
        for (int64_t j = 0; j < chunk.count; ++j)
          m[c * ld + j * size + o] =
              t[((chunk.first + j) * totalChannels + first + c) * size + o];
    return;
  }
  for (int64_t j = 0; j < chunk.count; ++j)
    for (int64_t c = 0; c < channels; ++c)
      std::copy_n(t + ((chunk.first + j) * totalChannels + first + c) * size,
                  size, m + c * ld + j * size);
}

void scatterChannels(const float *m, int64_t totalChannels, int64_t first,
                     int64_t channels, int64_t size, SampleChunk chunk,
                     float *t) {
  int64_t ld = chunk.count * size;
  if (size < kCopiedPlane) {
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t o = 0; o < size; ++o)
        for (int64_t j = 0; j < chunk.count; ++j)
          t[((chunk.first + j) * totalChannels + first + c) * size + o] =
              m[c * ld + j * size + o];
    return;
  }
  for (int64_t j = 0; j < chunk.count; ++j)
    for (int64_t c = 0; c < channels; ++c)
      std::copy_n(m + c * ld + j * size, size,
                  t + ((chunk.first + j) * totalChannels + first + c) * size);
}

/// For every tap (row-major) and output position, the input position it
/// reads, or -1 in the padding.
std::vector<int32_t> tapTable(const Window3 &w) {
  int64_t oSize = w.outSize();
  std::vector<int32_t> table(w.kernelSize() * oSize, -1);
  std::vector<TapRange> taps = tapRanges(w);
  for (int64_t k = 0; k < w.kernelSize(); ++k) {
    const TapRange &t = taps[k];
    for (int64_t o0 = t.lo[0]; o0 < t.hi[0]; ++o0)
      for (int64_t o1 = t.lo[1]; o1 < t.hi[1]; ++o1)
        for (int64_t o2 = t.lo[2]; o2 < t.hi[2]; ++o2)
          table[k * oSize + (o0 * w.out[1] + o1) * w.out[2] + o2] =
              static_cast<int32_t>(((o0 * w.stride[0] + t.off[0]) * w.in[1] +
                                    o1 * w.stride[1] + t.off[1]) *
                                       w.in[2] +
                                   o2 * w.stride[2] + t.off[2]);
  }
  return table;
}

/// The chunk's im2col matrix of group g, [kRows, count * oSize]: its
/// samples side by side, col[(c, k), (j, o)], rows chunk.count * outSize
/// long. The chunks are small planes (fewer than 256
/// outputs, samplesPerGemm), where im2col's loops over each row's ranges
/// cost more than the copy (4 ns an element on ResNet-18's 2x2 planes):
/// one table of input positions per tap, and each row filled sample by
/// sample from it.
void im2colChunk(const float *x, const ConvDims &cd, int64_t g,
                 const Window3 &win, SampleChunk chunk, float *col) {
  int64_t oSize = win.outSize(), inSize = win.inSize();
  int64_t kSize = win.kernelSize(), ld = chunk.count * oSize;
  std::vector<int32_t> table = tapTable(win);
  const float *first =
      x + (chunk.first * cd.inChannels + g * cd.groupIn) * inSize;
  // Called in order (the weight gradient's chunks, whose GEMMs use the
  // threads), the copy would leave the other threads waiting.
  bool onThreads =
      !detail::inParallel() && cd.groupIn * kSize * ld > kParallelGrain;
#pragma omp parallel for schedule(static) if (onThreads)
  for (int64_t c = 0; c < cd.groupIn; ++c)
    for (int64_t k = 0; k < kSize; ++k) {
      const int32_t *at = table.data() + k * oSize;
      float *row = col + (c * kSize + k) * ld;
      for (int64_t j = 0; j < chunk.count; ++j) {
        const float *xc = first + (j * cd.inChannels + c) * inSize;
        float *out = row + j * oSize;
        for (int64_t o = 0; o < oSize; ++o)
          out[o] = at[o] < 0 ? 0.0f : xc[at[o]];
      }
    }
}

/// The adjoint of im2colChunk: every sample's dx[c, ...] += its columns of
/// dcol[(c, k), (j, o)], through the same table.
void col2imChunk(const float *dcol, const ConvDims &cd, int64_t g,
                 const Window3 &win, SampleChunk chunk, float *dx) {
  int64_t oSize = win.outSize(), inSize = win.inSize();
  int64_t kSize = win.kernelSize(), ld = chunk.count * oSize;
  std::vector<int32_t> table = tapTable(win);
  float *first = dx + (chunk.first * cd.inChannels + g * cd.groupIn) * inSize;
  for (int64_t c = 0; c < cd.groupIn; ++c)
    for (int64_t k = 0; k < kSize; ++k) {
      const int32_t *at = table.data() + k * oSize;
      const float *row = dcol + (c * kSize + k) * ld;
      for (int64_t j = 0; j < chunk.count; ++j) {
        float *xc = first + (j * cd.inChannels + c) * inSize;
        const float *in = row + j * oSize;
        for (int64_t o = 0; o < oSize; ++o)
          if (at[o] >= 0)
            xc[at[o]] += in[o];
      }
    }
}

} // namespace

void im2colConv(const float *x, const Shape &xShape, const float *w,
                const Shape &wShape, const float *bias, const int64_t *strides,
                const int64_t *pads, const int64_t *dilations, int64_t group,
                float *y, const Shape &yShape) {
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  ConvDims cd(xShape, wShape, group, win);
  int64_t inSize = win.inSize(), oSize = win.outSize();
  if (yShape.numElements() == 0)
    return;
  bool pointwise = isPointwise(win);
  int64_t per = samplesPerGemm(cd.batch, cd.kRows, oSize);
  // One sample: the product straight into y. Several: into the scratch,
  // then to y.
  int64_t columns = per * oSize;
  int64_t scratch = chunkScratch(cd, oSize, per, pointwise);
  forEachChunk(cd, oSize, per, scratch, true,
               [&](SampleChunk chunk, float *buf) {
                 for (int64_t g = 0; g < group; ++g) {
                   const float *wg = w + g * cd.groupOut * cd.kRows;
                   if (per == 1) {
                     const float *xg =
                         x + (chunk.first * cd.inChannels + g * cd.groupIn) *
                                 inSize;
                     const float *src = xg;
                     if (!pointwise) {
                       im2col(xg, cd.groupIn, win, buf, oSize);
                       src = buf;
                     }
                     gemm(false, false, cd.groupOut, oSize, cd.kRows, 1.0f,
                          wg, src, 0.0f,
                          y + (chunk.first * cd.outChannels +
                               g * cd.groupOut) *
                                  oSize);
                     continue;
                   }
                   int64_t n = chunk.count * oSize;
                   float *col = buf, *out = buf + cd.kRows * columns;
                   im2colChunk(x, cd, g, win, chunk, col);
                   gemm(false, false, cd.groupOut, n, cd.kRows, 1.0f, wg,
                        col, 0.0f, out);
                   scatterChannels(out, cd.outChannels, g * cd.groupOut,
                                   cd.groupOut, oSize, chunk, y);
                 }
               });
  if (!bias)
    return;
  int64_t planes = cd.batch * cd.outChannels;
#pragma omp parallel for schedule(static) if (planes * oSize > kParallelGrain)
  for (int64_t p = 0; p < planes; ++p) {
    float bv = bias[p % cd.outChannels];
    float *yp = y + p * oSize;
    for (int64_t i = 0; i < oSize; ++i)
      yp[i] += bv;
  }
}

void im2colConvGradInput(const float *dy, const Shape &yShape, const float *w,
                         const Shape &wShape, const int64_t *strides,
                         const int64_t *pads, const int64_t *dilations,
                         int64_t group, float *dx, const Shape &xShape) {
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  ConvDims cd(xShape, wShape, group, win);
  int64_t inSize = win.inSize(), oSize = win.outSize();
  std::fill(dx, dx + xShape.numElements(), 0.0f);
  if (xShape.numElements() == 0 || oSize == 0)
    return;
  bool pointwise = isPointwise(win);
  int64_t per = samplesPerGemm(cd.batch, cd.kRows, oSize);
  int64_t columns = per * oSize;
  int64_t scratch = chunkScratch(cd, oSize, per, pointwise);
  forEachChunk(
      cd, oSize, per, scratch, true, [&](SampleChunk chunk, float *buf) {
        for (int64_t g = 0; g < group; ++g) {
          const float *wg = w + g * cd.groupOut * cd.kRows;
          if (per == 1) {
            const float *dyg =
                dy + (chunk.first * cd.outChannels + g * cd.groupOut) * oSize;
            float *dxg =
                dx + (chunk.first * cd.inChannels + g * cd.groupIn) * inSize;
            // dcol = w_g^T @ dy_g; for a pointwise conv dcol is dx_g itself.
            gemm(true, false, cd.kRows, oSize, cd.groupOut, 1.0f, wg, dyg,
                 0.0f, pointwise ? dxg : buf);
            if (!pointwise)
              col2im(buf, cd.groupIn, win, dxg, oSize);
            continue;
          }
          int64_t n = chunk.count * oSize;
          float *dcol = buf, *dyg = buf + cd.kRows * columns;
          gatherChannels(dy, cd.outChannels, g * cd.groupOut, cd.groupOut,
                         oSize, chunk, dyg);
          gemm(true, false, cd.kRows, n, cd.groupOut, 1.0f, wg, dyg, 0.0f,
               dcol);
          col2imChunk(dcol, cd, g, win, chunk, dx);
        }
      });
}

void im2colConvGradWeight(const float *dy, const Shape &yShape, const float *x,
                          const Shape &xShape, const int64_t *strides,
                          const int64_t *pads, const int64_t *dilations,
                          int64_t group, float *dw, const Shape &wShape) {
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  ConvDims cd(xShape, wShape, group, win);
  int64_t inSize = win.inSize(), oSize = win.outSize();
  if (wShape.numElements() == 0)
    return;
  if (cd.batch * oSize == 0) {
    std::fill(dw, dw + wShape.numElements(), 0.0f);
    return;
  }
  bool pointwise = isPointwise(win);
  int64_t per = samplesPerGemm(cd.batch, cd.kRows, oSize);
  int64_t columns = per * oSize;
  int64_t scratch = chunkScratch(cd, oSize, per, pointwise);
  // In order: the first chunk's products write dw (no zero fill on one
  // thread first), the others accumulate into it (the GEMMs use the
  // threads).
  forEachChunk(
      cd, oSize, per, scratch, false, [&](SampleChunk chunk, float *buf) {
        float beta = chunk.first == 0 ? 0.0f : 1.0f;
        for (int64_t g = 0; g < group; ++g) {
          float *dwg = dw + g * cd.groupOut * cd.kRows;
          if (per == 1) {
            const float *xg =
                x + (chunk.first * cd.inChannels + g * cd.groupIn) * inSize;
            const float *src = xg;
            if (!pointwise) {
              im2col(xg, cd.groupIn, win, buf, oSize);
              src = buf;
            }
            // dw_g += dy_g @ col^T, accumulated over the batch.
            gemm(false, true, cd.groupOut, cd.kRows, oSize, 1.0f,
                 dy + (chunk.first * cd.outChannels + g * cd.groupOut) * oSize,
                 src, beta, dwg);
            continue;
          }
          int64_t n = chunk.count * oSize;
          float *col = buf, *dyg = buf + cd.kRows * columns;
          im2colChunk(x, cd, g, win, chunk, col);
          gatherChannels(dy, cd.outChannels, g * cd.groupOut, cd.groupOut,
                         oSize, chunk, dyg);
          gemm(false, true, cd.groupOut, cd.kRows, n, 1.0f, dyg, col, beta,
               dwg);
        }
      });
}

//===----------------------------------------------------------------------===//
// The dispatch: oneDNN where preferOneDnn says it is faster, else im2col
//===----------------------------------------------------------------------===//

namespace {

/// Whether `pass` runs through oneDNN, and in which layout (choosesOneDnn).
/// Inside an OpenMP region either path runs on the calling thread alone.
bool viaOneDnn(ConvPass pass, const Shape &xShape, const Shape &wShape,
               const Shape &yShape, const int64_t *strides, const int64_t *pads,
               const int64_t *dilations, int64_t group, OneDnnLayout &layout) {
  int threads = detail::inParallel() ? 1 : detail::maxThreads();
  return choosesOneDnn(pass, xShape, wShape, yShape, strides, pads, dilations,
                       group, threads, layout);
}

/// The two paths, for the geometry as given.
void dispatchConv(const float *x, const Shape &xShape, const float *w,
                  const Shape &wShape, const float *bias,
                  const int64_t *strides, const int64_t *pads,
                  const int64_t *dilations, int64_t group, float *y,
                  const Shape &yShape) {
  OneDnnLayout layout;
  if (viaOneDnn(ConvPass::Forward, xShape, wShape, yShape, strides, pads,
                dilations, group, layout) &&
      oneDnnConv(x, xShape, w, wShape, bias, strides, pads, dilations, group,
                 y, yShape, layout))
    return;
  im2colConv(x, xShape, w, wShape, bias, strides, pads, dilations, group, y,
             yShape);
}

void dispatchConvGradInput(const float *dy, const Shape &yShape,
                           const float *w, const Shape &wShape,
                           const int64_t *strides, const int64_t *pads,
                           const int64_t *dilations, int64_t group, float *dx,
                           const Shape &xShape) {
  OneDnnLayout layout;
  if (viaOneDnn(ConvPass::GradInput, xShape, wShape, yShape, strides, pads,
                dilations, group, layout) &&
      oneDnnConvGradInput(dy, yShape, w, wShape, strides, pads, dilations,
                          group, dx, xShape, layout))
    return;
  im2colConvGradInput(dy, yShape, w, wShape, strides, pads, dilations, group,
                      dx, xShape);
}

/// The weight gradient of a depthwise conv (one input and one output
/// channel per group) by direct loops: dw[c, k] = sum over samples and
/// output positions of dy * x at tap k. The planes this runs on are tiny
/// (2x2, 1x1), so x and dy are first laid out channels-last and every
/// product runs along the channels, in vector registers.
void depthwiseGradWeight(const float *dy, const Shape &yShape, const float *x,
                         const Shape &xShape, const int64_t *strides,
                         const int64_t *pads, const int64_t *dilations,
                         float *dw, const Shape &wShape) {
  Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  std::vector<TapRange> taps = tapRanges(win);
  int64_t n = xShape.dims[0], channels = xShape.dims[1];
  int64_t inSize = win.inSize(), oSize = win.outSize(),
          kSize = win.kernelSize();
  std::vector<float> xT(n * inSize * channels), dyT(n * oSize * channels),
      acc(kSize * channels, 0.0f);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < inSize; ++i)
        xT[(b * inSize + i) * channels + c] = x[(b * channels + c) * inSize + i];
      for (int64_t o = 0; o < oSize; ++o)
        dyT[(b * oSize + o) * channels + c] =
            dy[(b * channels + c) * oSize + o];
    }
  for (int64_t b = 0; b < n; ++b)
    for (int64_t t = 0; t < kSize; ++t) {
      const TapRange &tap = taps[t];
      float *at = acc.data() + t * channels;
      for (int64_t o0 = tap.lo[0]; o0 < tap.hi[0]; ++o0)
        for (int64_t o1 = tap.lo[1]; o1 < tap.hi[1]; ++o1)
          for (int64_t o2 = tap.lo[2]; o2 < tap.hi[2]; ++o2) {
            int64_t o = (o0 * win.out[1] + o1) * win.out[2] + o2;
            int64_t i = ((o0 * win.stride[0] + tap.off[0]) * win.in[1] +
                         o1 * win.stride[1] + tap.off[1]) *
                            win.in[2] +
                        o2 * win.stride[2] + tap.off[2];
            const float *xr = xT.data() + (b * inSize + i) * channels;
            const float *dyr = dyT.data() + (b * oSize + o) * channels;
            CLEAVE_SIMD
            for (int64_t c = 0; c < channels; ++c)
              at[c] += dyr[c] * xr[c];
          }
    }
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < kSize; ++t)
      dw[c * kSize + t] = acc[t * channels + c];
}

/// Whether oneDNN computes this depthwise weight gradient with its
/// depthwise kernel (jit_dw). Where it does not (an input smaller than the
/// kernel, as MobileNetV2's 2x2 and 1x1 stages at 32x32), it falls back to
/// a GEMM-based implementation that took 270-670 us per call in
/// bench/conv_bench.cpp, against 5-20 us for the direct loops.
bool oneDnnHasDepthwiseKernel(const Shape &xShape, const Shape &wShape,
                              const Shape &yShape, const int64_t *strides,
                              const int64_t *pads, const int64_t *dilations,
                              int64_t group) {
  return std::string(oneDnnImplementation(
                         ConvPass::GradWeight, xShape, wShape, yShape, strides,
                         pads, dilations, group, false, OneDnnLayout::Blocked))
             .find("jit_dw") != std::string::npos;
}

void dispatchConvGradWeight(const float *dy, const Shape &yShape,
                            const float *x, const Shape &xShape,
                            const int64_t *strides, const int64_t *pads,
                            const int64_t *dilations, int64_t group, float *dw,
                            const Shape &wShape, bool afterGradInput = false) {
  if (xShape.rank == 4 && group > 1 && group == xShape.dims[1] &&
      group == wShape.dims[0] && yShape.numElements() > 0 &&
      !oneDnnHasDepthwiseKernel(xShape, wShape, yShape, strides, pads,
                                dilations, group)) {
    depthwiseGradWeight(dy, yShape, x, xShape, strides, pads, dilations, dw,
                        wShape);
    return;
  }
  OneDnnLayout layout;
  if (viaOneDnn(ConvPass::GradWeight, xShape, wShape, yShape, strides, pads,
                dilations, group, layout) &&
      oneDnnConvGradWeight(dy, yShape, x, xShape, strides, pads, dilations,
                           group, dw, wShape, layout, afterGradInput))
    return;
  im2colConvGradWeight(dy, yShape, x, xShape, strides, pads, dilations, group,
                       dw, wShape);
}

/// A buffer for the cropped weight or its gradient (ConvolutionCrop.h),
/// one per thread, kept between calls.
float *cropBuffer(int64_t elements) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < elements)
    buffer.resize(elements);
  return buffer.data();
}

} // namespace

// Each pass first crops away kernel taps that only ever read padding
// (ConvolutionCrop.h), then takes the faster path for what is left.

namespace {

/// w's live taps for `crop`: `cache`'s, or cropped into this thread's
/// buffer without one.
const float *croppedWeight(const float *w, const Shape &wShape,
                           const ConvCrop &crop, CroppedWeight *cache) {
  if (cache)
    return liveTaps(w, wShape, crop, *cache);
  float *buffer = cropBuffer(crop.wShape.numElements());
  cropWeight(w, wShape, crop, buffer);
  return buffer;
}

/// conv, its weight's live taps from `cache` where given.
void convOfCrop(const float *x, const Shape &xShape, const float *w,
                const Shape &wShape, const float *bias, const int64_t *strides,
                const int64_t *pads, const int64_t *dilations, int64_t group,
                float *y, const Shape &yShape, CroppedWeight *cache) {
  ConvCrop crop;
  if (cropDeadTaps(xShape, wShape, yShape, strides, pads, dilations, crop)) {
    const float *wc = croppedWeight(w, wShape, crop, cache);
    dispatchConv(x, xShape, wc, crop.wShape, bias, strides, crop.pads,
                 dilations, group, y, yShape);
    return;
  }
  dispatchConv(x, xShape, w, wShape, bias, strides, pads, dilations, group, y,
               yShape);
}

/// convGradInput, its weight's live taps from `cache` where given.
void convGradInputOfCrop(const float *dy, const Shape &yShape, const float *w,
                         const Shape &wShape, const int64_t *strides,
                         const int64_t *pads, const int64_t *dilations,
                         int64_t group, float *dx, const Shape &xShape,
                         CroppedWeight *cache) {
  ConvCrop crop;
  if (cropDeadTaps(xShape, wShape, yShape, strides, pads, dilations, crop)) {
    const float *wc = croppedWeight(w, wShape, crop, cache);
    dispatchConvGradInput(dy, yShape, wc, crop.wShape, strides, crop.pads,
                          dilations, group, dx, xShape);
    return;
  }
  dispatchConvGradInput(dy, yShape, w, wShape, strides, pads, dilations, group,
                        dx, xShape);
}

} // namespace

void conv(const float *x, const Shape &xShape, const float *w,
          const Shape &wShape, const float *bias, const int64_t *strides,
          const int64_t *pads, const int64_t *dilations, int64_t group,
          float *y, const Shape &yShape) {
  convOfCrop(x, xShape, w, wShape, bias, strides, pads, dilations, group, y,
             yShape, nullptr);
}

void conv(const float *x, const Shape &xShape, const float *w,
          const Shape &wShape, const float *bias, const int64_t *strides,
          const int64_t *pads, const int64_t *dilations, int64_t group,
          float *y, const Shape &yShape, CroppedWeight &cache) {
  convOfCrop(x, xShape, w, wShape, bias, strides, pads, dilations, group, y,
             yShape, &cache);
}

void convGradInput(const float *dy, const Shape &yShape, const float *w,
                   const Shape &wShape, const int64_t *strides,
                   const int64_t *pads, const int64_t *dilations, int64_t group,
                   float *dx, const Shape &xShape) {
  convGradInputOfCrop(dy, yShape, w, wShape, strides, pads, dilations, group,
                      dx, xShape, nullptr);
}

void convGradInput(const float *dy, const Shape &yShape, const float *w,
                   const Shape &wShape, const int64_t *strides,
                   const int64_t *pads, const int64_t *dilations, int64_t group,
                   float *dx, const Shape &xShape, CroppedWeight &cache) {
  convGradInputOfCrop(dy, yShape, w, wShape, strides, pads, dilations, group,
                      dx, xShape, &cache);
}

void convGradWeight(const float *dy, const Shape &yShape, const float *x,
                    const Shape &xShape, const int64_t *strides,
                    const int64_t *pads, const int64_t *dilations,
                    int64_t group, float *dw, const Shape &wShape) {
  convGradWeight(dy, yShape, x, xShape, strides, pads, dilations, group, dw,
                 wShape, false);
}

void convGradWeight(const float *dy, const Shape &yShape, const float *x,
                    const Shape &xShape, const int64_t *strides,
                    const int64_t *pads, const int64_t *dilations,
                    int64_t group, float *dw, const Shape &wShape,
                    bool afterGradInput) {
  ConvCrop crop;
  if (cropDeadTaps(xShape, wShape, yShape, strides, pads, dilations, crop)) {
    float *dwc = cropBuffer(crop.wShape.numElements());
    dispatchConvGradWeight(dy, yShape, x, xShape, strides, crop.pads, dilations,
                           group, dwc, crop.wShape, afterGradInput);
    uncropWeight(dwc, crop, dw, wShape);
    return;
  }
  dispatchConvGradWeight(dy, yShape, x, xShape, strides, pads, dilations, group,
                         dw, wShape, afterGradInput);
}

void convGradWeightSgd(const float *dy, const Shape &yShape, const float *x,
                       const Shape &xShape, const int64_t *strides,
                       const int64_t *pads, const int64_t *dilations,
                       int64_t group, float lr, float *w, const Shape &wShape,
                       CroppedWeight *cache, bool afterGradInput) {
  // The gradient goes to this thread's buffer (in cache for all but the
  // largest weights), then into w as sgdUpdate adds it: w + -lr * g.
  ConvCrop crop;
  if (cropDeadTaps(xShape, wShape, yShape, strides, pads, dilations, crop)) {
    float *dwc = cropBuffer(crop.wShape.numElements());
    dispatchConvGradWeight(dy, yShape, x, xShape, strides, crop.pads, dilations,
                           group, dwc, crop.wShape, afterGradInput);
    if (cache)
      addCroppedWeight(dwc, -lr, crop, w, wShape, *cache);
    else
      addCroppedWeight(dwc, -lr, crop, w, wShape);
    return;
  }
  int64_t n = wShape.numElements();
  float *g = cropBuffer(n);
  dispatchConvGradWeight(dy, yShape, x, xShape, strides, pads, dilations, group,
                         g, wShape, afterGradInput);
#pragma omp parallel for simd schedule(static) if (parallel : n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    w[i] = w[i] + -lr * g[i];
}

void sgdLiveTaps(const float *taps, const Shape &tapsShape,
                 const int64_t *offsets, float lr, float *w,
                 const Shape &wShape, CroppedWeight *cache) {
  ConvCrop crop;
  crop.wShape = tapsShape;
  for (int d = 0; d < 2; ++d) {
    crop.lo[d] = offsets[2 + d];
    crop.hi[d] = offsets[2 + d] + tapsShape.dims[2 + d];
  }
  if (cache)
    addCroppedWeight(taps, -lr, crop, w, wShape, *cache);
  else
    addCroppedWeight(taps, -lr, crop, w, wShape);
}

void sgdUpdateLiveTaps(const float *taps, const Shape &tapsShape,
                       const int64_t *offsets, float *w, const Shape &wShape,
                       float *buffer, float lr, float momentum, float dampening,
                       bool nesterov, float weightDecay, int64_t step) {
  body::SgdStep sgd{lr,          momentum, dampening,
                    weightDecay, nesterov, /*firstStep=*/step == 0};
  int64_t planes = wShape.dims[0] * wShape.dims[1];
  int64_t columns = wShape.dims[3];
  int64_t planeSize = wShape.dims[2] * columns;
  int64_t tapRows = tapsShape.dims[2], tapColumns = tapsShape.dims[3];
  int64_t tapsPlane = tapRows * tapColumns;
  int64_t firstTap = offsets[2] * columns + offsets[3];
  // Every element as sgdUpdate steps it, the gradient of a dead tap zero
  // (decay and momentum change the dead taps too): a few planes at a time,
  // their gradient spread into a small block that stays in the cache, then
  // the update over the planes in one loop in vector registers.
  int64_t chunkPlanes =
      std::max<int64_t>(1, 4096 / std::max<int64_t>(planeSize, 1));
  int64_t chunks = (planes + chunkPlanes - 1) / chunkPlanes;
  auto run = [&](auto hasMomentumTag, auto hasDecayTag) {
    constexpr bool kMomentum = decltype(hasMomentumTag)::value;
    constexpr bool kDecay = decltype(hasDecayTag)::value;
#pragma omp parallel if (planes * planeSize > kParallelGrain)
    {
      std::vector<float> grad(chunkPlanes * planeSize);
#pragma omp for schedule(static)
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        int64_t first = chunk * chunkPlanes;
        int64_t count = std::min(chunkPlanes, planes - first);
        std::fill_n(grad.data(), count * planeSize, 0.0f);
        // Tap by tap across the planes: a few live taps a plane (one, the
        // centre of a 3x3 kernel on a 1x1 image) make short rows.
        for (int64_t r = 0; r < tapRows; ++r)
          for (int64_t c = 0; c < tapColumns; ++c) {
            const float *from = taps + first * tapsPlane + r * tapColumns + c;
            float *to = grad.data() + firstTap + r * columns + c;
            for (int64_t p = 0; p < count; ++p)
              to[p * planeSize] = from[p * tapsPlane];
          }
        float *__restrict wp = w + first * planeSize;
        float *__restrict bp = kMomentum ? buffer + first * planeSize : nullptr;
        const float *__restrict gp = grad.data();
        int64_t n = count * planeSize;
        for (int64_t i = 0; i < n; ++i) {
          float unused = 0.0f;
          float &buf = kMomentum ? bp[i] : unused;
          wp[i] = sgd.template apply<kMomentum, kDecay>(wp[i], gp[i], buf);
        }
      }
    }
  };
  detail::withSgdCombination(momentum != 0.0f && buffer, weightDecay != 0.0f,
                             run);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

/// Calls f(outIndex, inIndex) for every output of one plane and every
/// kernel tap whose input lies inside the plane: tap after tap (row-major),
/// and for each tap the outputs in row-major order. Each output still sees
/// its window's taps in the window's order, while the inner loop runs along
/// a row of outputs rather than over a window's few taps (4 for a 2x2
/// pool), which costs the loop more than the taps.
template <typename F>
void forEachTap(const Window3 &w, const std::vector<TapRange> &taps, F f) {
  for (const TapRange &tap : taps) {
    const int64_t *lo = tap.lo, *hi = tap.hi, *off = tap.off;
    for (int64_t o0 = lo[0]; o0 < hi[0]; ++o0) {
      int64_t i0 = o0 * w.stride[0] + off[0];
      for (int64_t o1 = lo[1]; o1 < hi[1]; ++o1) {
        int64_t out = (o0 * w.out[1] + o1) * w.out[2];
        int64_t in =
            (i0 * w.in[1] + o1 * w.stride[1] + off[1]) * w.in[2] + off[2];
        // Distinct outputs and (stride >= 1) distinct inputs per o2: the
        // callers' updates are independent, and run in vector registers.
        CLEAVE_SIMD
        for (int64_t o2 = lo[2]; o2 < hi[2]; ++o2)
          f(out + o2, in + o2 * w.stride[2]);
      }
    }
  }
}

/// The AveragePool divisor of every output position of a plane.
std::vector<float> avgDivisors(const Window3 &w, bool countIncludePad) {
  std::vector<float> divisors(w.outSize());
  for (int64_t o = 0; o < w.outSize(); ++o)
    divisors[o] = static_cast<float>(avgDivisor(w, o, countIncludePad));
  return divisors;
}

} // namespace

void avgPool(const float *x, const Shape &xShape, const int64_t *kernel,
             const int64_t *strides, const int64_t *pads, bool countIncludePad,
             float *y, const Shape &yShape) {
  Window3 win(xShape, yShape, kernel, strides, pads, nullptr);
  std::vector<TapRange> taps = tapRanges(win);
  std::vector<float> divisors = avgDivisors(win, countIncludePad);
  int64_t planes = xShape.dims[0] * xShape.dims[1];
  int64_t inSize = win.inSize(), oSize = win.outSize();
  bool parallel = planes * oSize * win.kernelSize() > kParallelGrain;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t p = 0; p < planes; ++p) {
    const float *xp = x + p * inSize;
    float *yp = y + p * oSize;
    std::fill(yp, yp + oSize, 0.0f);
    forEachTap(win, taps, [&](int64_t o, int64_t i) { yp[o] += xp[i]; });
    for (int64_t o = 0; o < oSize; ++o)
      yp[o] /= divisors[o];
  }
}

void avgPoolGrad(const float *dy, const Shape &yShape, const int64_t *kernel,
                 const int64_t *strides, const int64_t *pads,
                 bool countIncludePad, float *dx, const Shape &xShape) {
  Window3 win(xShape, yShape, kernel, strides, pads, nullptr);
  std::vector<TapRange> taps = tapRanges(win);
  std::vector<float> divisors = avgDivisors(win, countIncludePad);
  int64_t planes = xShape.dims[0] * xShape.dims[1];
  int64_t inSize = win.inSize(), oSize = win.outSize();
  std::fill(dx, dx + planes * inSize, 0.0f);
  bool parallel = planes * oSize * win.kernelSize() > kParallelGrain;
#pragma omp parallel if (parallel)
  {
    std::vector<float> g(oSize);
#pragma omp for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      const float *dyp = dy + p * oSize;
      float *dxp = dx + p * inSize;
      for (int64_t o = 0; o < oSize; ++o)
        g[o] = dyp[o] / divisors[o];
      forEachTap(win, taps, [&](int64_t o, int64_t i) { dxp[i] += g[o]; });
    }
  }
}

} // namespace cleave::rt
