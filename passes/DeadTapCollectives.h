//===- DeadTapCollectives.h - dead kernel taps never sent -------*- C++ -*-===//
//
// Part of cleave-partition. A convolution kernel tap that reads only
// padding at every output position (a 3x3 kernel on a 1x1 image, as in
// ResNet-18's last stage at 32x32) contributes nothing to the output or
// the input gradient, and its weight gradient is exactly zero on every
// rank. Collectives that move such a kernel move the live taps alone:
//  - a sum of the weight gradient over ranks (data parallelism, ZeRO):
//    each rank computes the gradient of the live taps (a convolution
//    gradient with the cropped kernel and shifted pads,
//    runtime/ConvolutionLiveTaps.h), the collective sums that, and a
//    slice_grad puts the sum back in the whole kernel, zeros at the dead
//    taps, where the optimizer first reads it;
//  - a gather of the weight's shards (ZeRO-3): each rank slices the live
//    taps of its shard, the gather moves those, and the convolutions that
//    read the gathered weight take the cropped kernel with shifted pads.
// The same values, fewer bytes: in ResNet-18 at 32x32, 17 instead of 45 MB
// of gradients. On both targets (the rule is the shapes', not a kernel's).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_DEADTAPCOLLECTIVES_H
#define CLEAVE_PASSES_DEADTAPCOLLECTIVES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::cleave {

/// Rewrites, as described above, every single-input all_reduce and every
/// reduce_scatter whose input is the only use of a conv_grad_weight with
/// dead taps, and every all_gather whose readers are all convolution
/// passes reading it as their weight with the same dead taps; scatters and
/// gathers along a kernel dimension stay as they are. Runs on the
/// partitioned program before gradients are bucketed, so that buckets
/// count the bytes actually sent.
void keepDeadTapsOutOfCollectives(func::FuncOp func);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_DEADTAPCOLLECTIVES_H
