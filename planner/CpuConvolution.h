//===- CpuConvolution.h - the cpu runtime's convolution calls ---*- C++ -*-===//
//
// The cpu runtime crops a convolution's kernel taps that read only padding
// (runtime/ConvolutionLiveTaps.h), then sends each pass to oneDNN or to
// im2col + GEMMs by a fixed rule of shapes (runtime/ConvolutionPath.h).
// The cost model (OpCost.cpp) and the prediction of the kernels' memory
// (CpuWorkspace.h) apply the same rules to the ops of a partitioned step.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_CPUCONVOLUTION_H
#define CLEAVE_PLANNER_CPUCONVOLUTION_H

#include "runtime/ConvolutionPath.h"
#include "runtime/Shape.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace cleave::planner {

/// One pass of a 2-d convolution with the operands the runtime's kernel
/// receives.
struct CpuConvCall {
  rt::ConvPass pass = rt::ConvPass::Forward;
  /// The input, the kernel after the crop, the output (of the forward
  /// pass: x is the input gradient's shape for GradInput).
  rt::Shape x, w, y;
  int64_t pads[4] = {0, 0, 0, 0};
  const int64_t *strides = nullptr, *dilations = nullptr;
  int64_t group = 1;
  bool bias = false;
  /// The kernel's taps kept, as a share of all.
  double liveTaps = 1;
  /// Whether the rule sends it to oneDNN, and in which layout.
  bool oneDnn = false;
  rt::OneDnnLayout layout = rt::OneDnnLayout::Blocked;
};

/// `op`'s call when it is a 2-d convolution pass (conv, conv_grad_input,
/// conv_grad_weight) with static shapes, as the runtime makes it on
/// `threads` OpenMP threads; nullopt otherwise.
std::optional<CpuConvCall> cpuConvCall(mlir::Operation *op, int threads);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_CPUCONVOLUTION_H
