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

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_ONEDNNCONVOLUTION_H
