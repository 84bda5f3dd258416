// RUN: cleave-opt %s --split-input-file --cleave-propagate-sharding --cleave-partition \
// RUN:   | FileCheck %s --implicit-check-not=cleave.all_gather --implicit-check-not=cleave.reduce_sum \
// RUN:       --implicit-check-not=cleave.sub --implicit-check-not=cleave.mul --implicit-check-not=cleave.broadcast_to \
// RUN:       --implicit-check-not=cleave.batch_norm_grad

// A training BatchNorm and its gradient on a batch split over dp: each
// rank sums its own rows per channel, one op (one pass over the rows, no
// temporary of their size) per sum: the mean's share, then the squared
// deviations' around the all-reduced mean (divided by the whole batch's
// 2 x 4 x 3 x 3 / 4 = 72 elements per channel, so that the all-reduces
// give the mean and the variance), and for the gradient sum(dy) and
// sum(dy * (x - mean)) at once. The gradient takes the all-reduced sums
// and the forward pass's statistics; no rows are gathered, and no
// full-size sub, mul or reduce_sum is left (implicit-check-not).

// CHECK-LABEL: func.func @split_batch
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x4x3x3xf32>
// CHECK: %[[SUM:.*]] = cleave.batch_norm_sum %[[X]] {divisor = 72 : i64} : tensor<4x4x3x3xf32> -> tensor<4xf32>
// CHECK: %[[MEAN:.*]] = cleave.all_reduce %[[SUM]] over ["dp"] : tensor<4xf32>
// CHECK: %[[DEV:.*]] = cleave.batch_norm_squared_deviation_sum %[[X]], %[[MEAN]] {divisor = 72 : i64}
// CHECK: %[[VAR:.*]] = cleave.all_reduce %[[DEV]] over ["dp"] : tensor<4xf32>
// CHECK: %[[Y:.*]], %[[RM:.*]], %[[RV:.*]] = cleave.batch_norm %[[X]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN]], %[[VAR]]
// CHECK-SAME: (tensor<4x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[DY:.*]] = cleave.relu %[[Y]]
// CHECK: %[[GS:.*]], %[[GC:.*]] = cleave.batch_norm_grad_sums %[[DY]], %[[X]], %[[MEAN]] : (tensor<4x4x3x3xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[R:.*]]:2 = cleave.all_reduce %[[GS]], %[[GC]] over ["dp"]
// CHECK: %{{.*}}, %[[DS:.*]], %[[DB:.*]] = cleave.batch_norm_grad_from_sums %[[DY]], %[[X]], %{{.*}}, %[[MEAN]], %[[VAR]], %[[R]]#0, %[[R]]#1 {count = 72 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-SAME: -> (tensor<4x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: return %[[DS]], %[[DB]], %[[RM]], %[[RV]]
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @split_batch(%x: tensor<8x4x3x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], [], [], []]>}, %scale: tensor<4xf32> {cleave.param = "bn.weight"}, %bias: tensor<4xf32> {cleave.param = "bn.bias"}, %mean: tensor<4xf32> {cleave.state = "bn.running_mean"}, %var: tensor<4xf32> {cleave.state = "bn.running_var"})
      -> (tensor<4xf32> {cleave.grad = "bn.weight"}, tensor<4xf32> {cleave.grad = "bn.bias"}, tensor<4xf32> {cleave.update = "bn.running_mean"}, tensor<4xf32> {cleave.update = "bn.running_var"}) {
    %y, %rm, %rv = cleave.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true} : (tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
    %dy = cleave.relu %y : tensor<8x4x3x3xf32>
    %dx, %ds, %db = cleave.batch_norm_grad %dy, %x, %scale {epsilon = 1.0e-05 : f32} : (tensor<8x4x3x3xf32>, tensor<8x4x3x3xf32>, tensor<4xf32>) -> (tensor<8x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
    return %ds, %db, %rm, %rv : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// The same BatchNorm on one rank's whole batch (its batch not split) keeps
// its own kernels: no sums, no all-reduce.

// CHECK-LABEL: func.func @whole_batch
// CHECK-NOT: cleave.all_reduce
// CHECK: cleave.batch_norm %arg0, %arg1, %arg2, %arg3, %arg4 {
// CHECK: cleave.batch_norm_grad %{{.*}}, %arg0, %arg1
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @whole_batch(%x: tensor<8x4xf32> {cleave.input = "x"}, %scale: tensor<4xf32> {cleave.param = "bn.weight"}, %bias: tensor<4xf32> {cleave.param = "bn.bias"}, %mean: tensor<4xf32> {cleave.state = "bn.running_mean"}, %var: tensor<4xf32> {cleave.state = "bn.running_var"})
      -> (tensor<8x4xf32>, tensor<4xf32> {cleave.grad = "bn.weight"}, tensor<4xf32> {cleave.update = "bn.running_mean"}) {
    %y, %rm, %rv = cleave.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true} : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
    %dx, %ds, %db = cleave.batch_norm_grad %y, %x, %scale {epsilon = 1.0e-05 : f32} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
    return %dx, %ds, %rm : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
