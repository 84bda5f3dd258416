//===- ConvolutionPath.h - which path a cpu convolution takes ---*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR), header only. The cpu
// target computes a convolution pass either as im2col + OpenBLAS sgemm or
// with oneDNN's direct or Winograd kernels (OneDnnConvolution.h); this is
// the rule that picks one, here so that the planner's cost model times the
// path the program takes (planner/OpCost.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CONVOLUTIONPATH_H
#define CLEAVE_RUNTIME_CONVOLUTIONPATH_H

#include "runtime/ConvolutionShapes.h"
#include "runtime/Shape.h"

#include <algorithm>
#include <cstdint>

namespace cleave::rt {

enum class ConvPass { Forward, GradInput, GradWeight };

/// How oneDNN sees the tensors, and so which kernels it runs. Plain: the
/// program's own NCHW activations and OIHW weights, which restricts oneDNN
/// to its GEMM-based or reference implementations. Blocked: the layouts
/// oneDNN prefers (nChw16c, ...), reached by reorders on the way in and out
/// of every call, for its direct kernels. Winograd: the blocked layouts for
/// its Winograd kernels (F(4x4, 3x3): 36 products per 4x4 output tile
/// where a direct 3x3 kernel does 144; see winogradApplies).
enum class OneDnnLayout { Plain, Blocked, Winograd };

/// Whether a convolution that runs through oneDNN's blocked kernels runs
/// Winograd's instead. oneDNN has them for 3x3 kernels at stride 1, no
/// dilation, padding of at most 1, one group and channels in whole blocks
/// of 16. Faster where the planes and channels are large enough to fill
/// its tiles (README.md, "Winograd convolutions": 1 / 2 threads, ms
/// for forward + input gradient + weight gradient, direct vs Winograd):
/// 32 -> 64 channels on 26x26 at batch 128 (Keras' MNIST convnet) 44.0 vs
/// 26.0 at 2 threads; 64 -> 64 on 16x16 at batch 16 7.2 vs 4.3 / 2.6 vs
/// 1.8; 128 -> 128 on 28x28 at batch 8 32.7 vs 15.4 / 16.6 vs 7.8; 32 ->
/// 32 on 24x24 at batch 32 9.6 vs 5.5 / 4.9 vs 3.2; 64 -> 64 on 12x12 at
/// batch 16 3.7 vs 2.4 / 2.0 vs 1.7. Not on small planes or few channels:
/// 128 -> 128 on 4x4 loses (0.83 vs 1.11 on 2 threads; the 4x4 tile holds
/// the whole plane), 256 -> 256 on 2x2 loses 4x, 512 -> 512 on 7x7 at
/// batch 8 (ResNet's last stage at 224x224) 34.1 vs 40.8 / 16.6 vs 18.0,
/// 32 -> 32 on 16x16 loses on 2 threads (0.65 vs 0.68), 16 -> 16 on 32x32
/// too (1.04 vs 1.43). Its
/// error is that of float32's rounding: against the direct kernels at most
/// 2-5e-6 of the largest element in all three passes on these shapes.
inline bool winogradApplies(const ConvDims &cd, const body::Window3 &w) {
  if (cd.groupIn != cd.inChannels || cd.inChannels % 16 != 0 ||
      cd.outChannels % 16 != 0 || w.in[0] != 1 || w.out[0] != 1)
    return false;
  for (int d = 1; d < 3; ++d)
    if (w.kernel[d] != 3 || w.stride[d] != 1 || w.dilation[d] != 1 ||
        w.padBegin[d] > 1 || w.padEnd[d] > 1)
      return false;
  int64_t channels = std::min(cd.inChannels, cd.outChannels);
  int64_t side = std::min(w.out[1], w.out[2]);
  return (channels >= 64 && side >= 12) || (channels >= 32 && side >= 24);
}

/// Whether `pass` of this convolution runs through oneDNN, and in which
/// layout, on `threads` OpenMP threads: the rule of KernelsConvolution's
/// dispatch.
//
// The rule, from bench/conv_bench.cpp on every conv of ResNet-18 and
// MobileNetV2 (32x32, batch 16) and the MNIST CNN (batch 8), 1 and 2
// threads, AVX-512 (oneDNN picks jit:avx512_core, jit_1x1 and jit_dw);
// bench/README.md has the tables. Microseconds are 1-thread times, im2col
// vs oneDNN blocked unless said otherwise.
// - Depthwise (one input and one output channel per group): oneDNN's
//   jit_dw kernels, 10-60x faster in all three passes (48x8x8 forward 251
//   vs 18); where its backward-weights kernel does not apply oneDNN falls
//   back to its GEMM one, still faster (96x2x2: 322 vs 212). Other grouped
//   convs were not measured and stay with im2col.
// - Blocked layouts beat the plain ones almost everywhere: on NCHW oneDNN
//   can only run im2col + its own GEMM (gemm:jit), no faster than ours
//   (64x8x8 3x3: 528 plain, 317 blocked, 713 im2col), while the reorders
//   cost far less than the direct kernels save.
// - A GEMM depth (input channels x kernel taps) under 16 stays with
//   im2col: blocked layouts pad channels to 16, and the reorders outweigh
//   the product (8x16x16 1x1 -> 8: 5 vs 26; MNIST's 1-channel 3x3: 16 vs
//   26).
// - The input gradient of a conv with fewer than 8 input channels (a first
//   layer) stays with im2col (ResNet's 7x7 on 3 channels: 616 vs 1729).
// - The weight gradient of a conv with at most 4 output positions, not
//   pointwise, stays with im2col: one GEMM over the batch's samples side
//   by side, whose im2col reads a table of each tap's positions
//   (im2colChunk). ResNet-18 at batch 16, 1 / 2 threads, im2col vs
//   blocked: 256x2x2 3x3 -> 256 868 vs 1196 / 544 vs 599; 128x4x4 3x3
//   stride 2 -> 256 440 vs 689 / 289 vs 353; 256x2x2 3x3 stride 2 -> 512
//   533 vs 1717; 256x2x2 1x1 stride 2 -> 512 80 vs 152 / 80 vs 97. At 16
//   positions oneDNN wins (128x4x4 3x3 -> 128: 937 vs 770); pointwise
//   convs go either way by thread count (MobileNetV2's 80x1x1 -> 1280: 99
//   vs 114 at 1 thread, 110 vs 74 at 2) and keep the rules below, but
//   for the weight gradient on a 1x1 output (2026-11-28, 1 / 2 threads):
//   one GEMM over the samples, where oneDNN's blocked kernels lose most
//   (ResNet-18's layer4 3x3 convolutions on a 1x1 image, cropped to their
//   centre tap, 512x1x1 1x1 -> 512 at batch 16: 144 vs 602 / 115 vs 319;
//   MobileNetV2's 240x1x1 -> 80: 24 vs 45 / 28 vs 67 plain; its 80x1x1
//   -> 1280: 129 vs 212 / 172 vs 161, the one loss).
// - So does the input gradient of such a conv with a 1x1 output (its
//   col2im by the same table): 256x2x2 3x3 stride 2 -> 512 589 vs 902 /
//   360 vs 473; at 4 outputs they tie (128x4x4 3x3 stride 2 -> 256: 474
//   vs 476 / 322 vs 271).
// - Small planes (2026-11-28, an Intel Xeon with AVX-512, batch 16, 1 / 2
//   threads, once the im2col path stopped copying 1-float planes by a
//   memmove each): where every output is a single position, or a pointwise
//   conv has at most 4, a conv is a linear layer over the samples, one
//   GEMM of the samples side by side, and oneDNN's blocked kernels spend
//   most of their time reordering. Every pass goes to im2col (ResNet-18's
//   layer4 cropped to its centre tap, 512x1x1 -> 512: forward 150 vs 208
//   / 155 vs 292, input gradient 109 vs 212 / 118 vs 239; its 256x2x2 3x3
//   stride 2 -> 512 forward 762 vs 920 / 446 vs 645; MobileNetV2's 144x1x1
//   -> 40 forward 11.7 vs 16.6 / 8.1 vs 13.6 plain; its 48x2x2 -> 16 5.9 vs
//   12.9 / 9.7 vs 19.0), except the forward pass of a conv with more than
//   twice as many outputs as products' depth, whose output scatter then
//   outweighs the GEMM (MobileNetV2's 80x1x1 -> 1280: 138 vs 89 / 165 vs
//   116; 24x2x2 -> 144: 21 vs 13 / 31 vs 26). 2x2 outputs of a 3x3 kernel
//   keep the rules above (256x2x2 -> 256 forward 874 vs 759 / 782 vs 589).
// - On 2 threads each of oneDNN's parallel regions (a conv and up to three
//   reorders) wakes a sleeping thread (the benchmarks' OMP_WAIT_POLICY=
//   PASSIVE), and its backward-weights kernels wait at barriers: below
//   ~2 MFLOP per pass that costs more than it saves (24x2x2 1x1 -> 144:
//   15 im2col, 37 blocked; MobileNetV2's first conv's weight gradient: 48
//   vs 2400). There only pointwise convs of 48 or more input channels go to
//   oneDNN, in the plain layout (one region: 240x1x1 -> 40: 81 im2col, 30
//   plain, 33 blocked).
inline bool preferOneDnn(ConvPass pass, const ConvDims &cd,
                         const body::Window3 &w, int threads,
                         OneDnnLayout &layout) {
  layout = OneDnnLayout::Blocked;
  if (cd.groupIn != cd.inChannels)
    return cd.groupIn == 1 && cd.groupOut == 1;
  if (cd.kRows < 16)
    return false;
  if (pass == ConvPass::GradInput && cd.groupIn < 8)
    return false;
  if (w.outSize() == 1 || (isPointwise(w) && w.outSize() <= 4))
    return pass == ConvPass::Forward && cd.outChannels > 2 * cd.kRows;
  if (pass == ConvPass::GradWeight && w.outSize() <= 4)
    return false;
  double flops = 2.0 * cd.batch * cd.outChannels * w.outSize() * cd.kRows;
  if (threads > 1 && flops < 2e6) {
    layout = OneDnnLayout::Plain;
    return isPointwise(w) && cd.groupIn >= 48;
  }
  if (winogradApplies(cd, w))
    layout = OneDnnLayout::Winograd;
  return true;
}

/// Whether `pass` of the convolution with these operands runs through
/// oneDNN on `threads` threads, and in which layout: the rule was measured
/// on 2-d convs; 1- and 3-d ones, and empty tensors, stay with im2col.
inline bool choosesOneDnn(ConvPass pass, const Shape &xShape,
                          const Shape &wShape, const Shape &yShape,
                          const int64_t *strides, const int64_t *pads,
                          const int64_t *dilations, int64_t group, int threads,
                          OneDnnLayout &layout) {
  if (xShape.rank != 4 || xShape.numElements() == 0 ||
      wShape.numElements() == 0 || yShape.numElements() == 0)
    return false;
  body::Window3 win(xShape, yShape, wShape.dims + 2, strides, pads, dilations);
  ConvDims cd(xShape, wShape, group, win);
  return preferOneDnn(pass, cd, win, threads, layout);
}

/// The multiply-adds oneDNN's direct kernels do for `pass` of a dense
/// convolution with weight `wShape` and window `w`, as a share of the
/// convolution's count (every output position times every tap): they skip
/// the taps that read padding, where im2col multiplies its zeros; in the
/// blocked layout they hold channels in blocks of 16 (nChw16c), so the
/// forward pass computes its output channels and the input gradient its
/// input channels rounded up to 16 (measured on 16x16 images, 1 thread:
/// 8 -> 16 channels forward at 0.92 of 64 -> 64's rate, 8 -> 8 at 0.46,
/// the input gradient of 8 -> 16 at 0.47; the weight gradient of 8 -> 16
/// at 0.79, not blocked so).
inline double directConvWork(ConvPass pass, const Shape &wShape,
                             OneDnnLayout layout, const body::Window3 &w) {
  double share = 1;
  for (int d = 0; d < 3; ++d) {
    int64_t onInput = 0;
    for (int64_t o = 0; o < w.out[d]; ++o)
      for (int64_t k = 0; k < w.kernel[d]; ++k) {
        int64_t i = o * w.stride[d] + k * w.dilation[d] - w.padBegin[d];
        onInput += i >= 0 && i < w.in[d];
      }
    int64_t pairs = w.out[d] * w.kernel[d];
    share *= pairs > 0 ? double(onInput) / double(pairs) : 1.0;
  }
  int64_t channels = pass == ConvPass::Forward     ? wShape.dims[0]
                     : pass == ConvPass::GradInput ? wShape.dims[1]
                                                   : 0;
  constexpr int64_t kBlock = 16;
  if (layout == OneDnnLayout::Blocked && channels > 0)
    share *=
        double((channels + kBlock - 1) / kBlock * kBlock) / double(channels);
  return share;
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CONVOLUTIONPATH_H
