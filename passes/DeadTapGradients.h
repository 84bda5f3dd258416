//===- DeadTapGradients.h - weight gradients summed without dead taps -*- C++
//-*-===//
//
// Part of cleave-partition. A convolution kernel tap that reads only
// padding at every output position (a 3x3 kernel on a 1x1 image, as in
// ResNet-18's last stage at 32x32) has a weight gradient of exactly zero,
// on every rank. Summing such a gradient over ranks sends those zeros: in
// ResNet-18 at 32x32, 28 of its 45 MB of gradients. Here the rank computes
// the gradient of the live taps alone (a convolution gradient with the
// cropped kernel and shifted pads, runtime/ConvolutionLiveTaps.h), the
// collective sums that, and a slice_grad puts the sum back in the whole
// kernel, zeros at the dead taps: the same values, fewer bytes sent, on
// both targets (the rule is the shapes', not a kernel's).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_DEADTAPGRADIENTS_H
#define CLEAVE_PASSES_DEADTAPGRADIENTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::cleave {

/// Rewrites every single-input all_reduce, and every reduce_scatter that
/// does not split a kernel dimension, whose input is the only use of a
/// conv_grad_weight with dead taps, as described above. Runs on the
/// partitioned program before gradients are bucketed, so that buckets
/// count the bytes actually sent.
void sumLiveTapGradientsOnly(func::FuncOp func);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_DEADTAPGRADIENTS_H
