//===- OneDnnConvolution.h - the cpu convolution's two paths ---*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The cpu target computes
// a convolution and its two gradients either as im2col + OpenBLAS sgemm
// (KernelsConvolution.cpp) or with oneDNN's convolution primitives
// (OneDnnConvolution.cpp), and rt::conv, convGradInput and convGradWeight
// pick one per shape and pass with preferOneDnn (ConvolutionPath.h), a fixed
// rule drawn from measurements (bench/conv_bench.cpp), never from a timer at
// run time: a program computes the same way every run.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_ONEDNNCONVOLUTION_H
#define CLEAVE_RUNTIME_ONEDNNCONVOLUTION_H

#include "runtime/ConvolutionPath.h"
#include "runtime/Shape.h"

#include <atomic>
#include <cstdint>

namespace cleave::rt {

// The im2col + sgemm path, whatever the rule says (rt::conv and its
// gradients dispatch between this and oneDNN; tests and the benchmark call
// each path directly).

void im2colConv(const float *x, const Shape &xShape, const float *w,
                const Shape &wShape, const float *bias, const int64_t *strides,
                const int64_t *pads, const int64_t *dilations, int64_t group,
                float *y, const Shape &yShape);

void im2colConvGradInput(const float *dy, const Shape &yShape, const float *w,
                         const Shape &wShape, const int64_t *strides,
                         const int64_t *pads, const int64_t *dilations,
                         int64_t group, float *dx, const Shape &xShape);

void im2colConvGradWeight(const float *dy, const Shape &yShape, const float *x,
                          const Shape &xShape, const int64_t *strides,
                          const int64_t *pads, const int64_t *dilations,
                          int64_t group, float *dw, const Shape &wShape);

// The oneDNN path: the same contracts (y, dx, dw overwritten). Each returns
// false, having written nothing, when oneDNN rejects the geometry; the
// caller then takes the im2col path. Primitives are created once per
// geometry, pass and layout and kept for the life of the process.

bool oneDnnConv(const float *x, const Shape &xShape, const float *w,
                const Shape &wShape, const float *bias, const int64_t *strides,
                const int64_t *pads, const int64_t *dilations, int64_t group,
                float *y, const Shape &yShape, OneDnnLayout layout);

bool oneDnnConvGradInput(const float *dy, const Shape &yShape, const float *w,
                         const Shape &wShape, const int64_t *strides,
                         const int64_t *pads, const int64_t *dilations,
                         int64_t group, float *dx, const Shape &xShape,
                         OneDnnLayout layout);

/// afterGradInput: the caller knows that dy holds what it held when the
/// same convolution's oneDnnConvGradInput last read it (the same value of
/// the program, not only the same buffer). Where that call was the last
/// oneDNN call and left dy in the layout this one takes, dy's reorder is
/// not done again (18.9 MB, 1.5-2.5 ms, for Keras' MNIST convnet at batch
/// 128).
bool oneDnnConvGradWeight(const float *dy, const Shape &yShape, const float *x,
                          const Shape &xShape, const int64_t *strides,
                          const int64_t *pads, const int64_t *dilations,
                          int64_t group, float *dw, const Shape &wShape,
                          OneDnnLayout layout, bool afterGradInput = false);

/// The name of the oneDNN implementation a pass of a geometry runs (e.g.
/// "jit:avx512_core", "gemm:jit"), or "" when oneDNN rejects it: for the
/// benchmark's table.
const char *oneDnnImplementation(ConvPass pass, const Shape &xShape,
                                 const Shape &wShape, const Shape &yShape,
                                 const int64_t *strides, const int64_t *pads,
                                 const int64_t *dilations, int64_t group,
                                 bool hasBias, OneDnnLayout layout);

/// The runtime's oneDNN workspaces: the reordered copies of a primitive's
/// operands, by the operand's place in its argument list (src, weights,
/// bias, dst forward; diff_dst, weights, diff_src and diff_dst, src,
/// diff_weights backward), then its scratchpad. All calls share them, so
/// each is as large as the largest call's, and a rank holds their sum.
constexpr int kOneDnnWorkspaces = 5;
constexpr int kScratchpadWorkspace = kOneDnnWorkspaces - 1;

/// The bytes a call of `pass` takes in each workspace, with the scratchpad
/// oneDNN sizes for `threads` OpenMP threads (an operand the primitive
/// takes in the program's plain layout takes none); false, all 0, where
/// oneDNN rejects the geometry (the call runs on im2col). Describes the
/// primitive without creating it: the planner's prediction of a rank's
/// memory (planner/CpuWorkspace.h).
bool oneDnnConvWorkspaces(ConvPass pass, const Shape &xShape,
                          const Shape &wShape, const Shape &yShape,
                          const int64_t *strides, const int64_t *pads,
                          const int64_t *dilations, int64_t group, bool hasBias,
                          OneDnnLayout layout, int threads,
                          int64_t (&bytes)[kOneDnnWorkspaces]);

namespace detail {
/// Kept by the workspaces as they grow; here, not in the .cpp, so that
/// reading it (RunReports.cpp) links no oneDNN into a program that runs no
/// oneDNN convolution (the cuda target's).
inline std::atomic<int64_t> oneDnnWorkspaceBytes{0};
/// Counted as convolution primitives are created (their reorders with them).
inline std::atomic<int64_t> oneDnnPrimitiveCount{0};
} // namespace detail

/// The bytes the workspaces hold now (allocated; oneDNN may not have
/// touched all of a scratchpad): what --print-memory-peak reports beside
/// the measurement.
inline int64_t oneDnnWorkspaceBytes() {
  return detail::oneDnnWorkspaceBytes.load();
}

/// The convolution primitives created so far: one per geometry, pass and
/// layout run, kept for the life of the process with their operands'
/// reorders (objects and generated code: what the planner predicts as
/// Cluster::oneDnnPrimitiveBytes each, --print-memory-peak's count).
inline int64_t oneDnnPrimitives() {
  return detail::oneDnnPrimitiveCount.load();
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_ONEDNNCONVOLUTION_H
