// RUN: cleave-opt %s --split-input-file --cleave-decompose-means | FileCheck %s

// Means over samples become sums divided by a count that is itself a sum
// (so that partitioning can all-reduce both).

// The example of Passes.td: the count is the number of labels that are not
// ignore_index.
// CHECK-LABEL: func.func @softmax_cross_entropy_ignore_index
// CHECK-SAME: (%[[S:[^:]+]]: tensor<8x10xf32>, %[[Y:[^:]+]]: tensor<8xi64>)
func.func @softmax_cross_entropy_ignore_index(%s: tensor<8x10xf32>, %y: tensor<8xi64>)
    -> (tensor<f32>, tensor<8x10xf32>) {
  // CHECK: %[[LOSS:.*]], %[[LP:.*]] = cleave.softmax_cross_entropy %[[S]], %[[Y]]
  // CHECK-SAME: reduction = #cleave.reduction<sum>
  // CHECK-SAME: -> (tensor<f32>, tensor<8x10xf32>)
  // CHECK: %[[IGNORE:.*]] = cleave.constant dense<-100> : tensor<i64>
  // CHECK: %[[IS_IGNORED:.*]] = cleave.equal %[[Y]], %[[IGNORE]] : (tensor<8xi64>, tensor<i64>) -> tensor<8xi1>
  // CHECK-DAG: %[[ONE:.*]] = cleave.constant dense<1.000000e+00> : tensor<f32>
  // CHECK-DAG: %[[ZERO:.*]] = cleave.constant dense<0.000000e+00> : tensor<f32>
  // CHECK: %[[COUNTS:.*]] = cleave.where %[[IS_IGNORED]], %[[ZERO]], %[[ONE]] : {{.*}} -> tensor<8xf32>
  // CHECK: %[[N:.*]] = cleave.reduce_sum %[[COUNTS]] {axes = array<i64: 0>, keepdims = false} : tensor<8xf32> -> tensor<f32>
  // CHECK: %[[MEAN:.*]] = cleave.div %[[LOSS]], %[[N]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // CHECK: return %[[MEAN]], %[[LP]]
  %loss, %lp = cleave.softmax_cross_entropy %s, %y
      {ignore_index = -100 : i64, reduction = #cleave.reduction<mean>}
      : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
  return %loss, %lp : tensor<f32>, tensor<8x10xf32>
}

// -----

// Without ignore_index the count is the number of labels, a constant.
// CHECK-LABEL: func.func @softmax_cross_entropy_constant_count
// CHECK-SAME: (%[[S:[^:]+]]: tensor<2x5x3x4xf32>, %[[Y:[^:]+]]: tensor<2x3x4xi32>)
func.func @softmax_cross_entropy_constant_count(%s: tensor<2x5x3x4xf32>, %y: tensor<2x3x4xi32>)
    -> tensor<f32> {
  // CHECK: %[[LOSS:.*]], %{{.*}} = cleave.softmax_cross_entropy %[[S]], %[[Y]]
  // CHECK-SAME: reduction = #cleave.reduction<sum>
  // CHECK-NOT: cleave.equal
  // CHECK: %[[N:.*]] = cleave.constant dense<2.400000e+01> : tensor<f32>
  // CHECK: %[[MEAN:.*]] = cleave.div %[[LOSS]], %[[N]]
  // CHECK: return %[[MEAN]]
  %loss, %lp = cleave.softmax_cross_entropy %s, %y {reduction = #cleave.reduction<mean>}
      : (tensor<2x5x3x4xf32>, tensor<2x3x4xi32>) -> (tensor<f32>, tensor<2x5x3x4xf32>)
  return %loss : tensor<f32>
}

// -----

// Every use of the loss, not only the return, reads the mean.
// CHECK-LABEL: func.func @nll_loss_uses
// CHECK-SAME: (%[[LP:[^:]+]]: tensor<8x10xf32>, %[[Y:[^:]+]]: tensor<8xi64>)
func.func @nll_loss_uses(%lp: tensor<8x10xf32>, %y: tensor<8xi64>) -> tensor<f32> {
  // CHECK: %[[LOSS:.*]] = cleave.nll_loss %[[LP]], %[[Y]]
  // CHECK-SAME: ignore_index = 0 : i64
  // CHECK-SAME: reduction = #cleave.reduction<sum>
  // CHECK: %[[IGNORE:.*]] = cleave.constant dense<0> : tensor<i64>
  // CHECK: %[[IS_IGNORED:.*]] = cleave.equal %[[Y]], %[[IGNORE]]
  // CHECK: %[[COUNTS:.*]] = cleave.where %[[IS_IGNORED]]
  // CHECK: %[[N:.*]] = cleave.reduce_sum %[[COUNTS]]
  // CHECK: %[[MEAN:.*]] = cleave.div %[[LOSS]], %[[N]]
  // CHECK: %[[TWICE:.*]] = cleave.add %[[MEAN]], %[[MEAN]]
  // CHECK: return %[[TWICE]]
  %loss = cleave.nll_loss %lp, %y {ignore_index = 0 : i64, reduction = #cleave.reduction<mean>}
      : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %0 = cleave.add %loss, %loss : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Class weights make the count a weighted sum: such a mean stays. Sum and
// none reductions are no means.
// CHECK-LABEL: func.func @losses_kept
func.func @losses_kept(%lp: tensor<8x10xf32>, %y: tensor<8xi64>, %w: tensor<10xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<8xf32>) {
  // CHECK: cleave.nll_loss {{.*}}reduction = #cleave.reduction<mean>
  // CHECK: cleave.nll_loss {{.*}}reduction = #cleave.reduction<sum>
  // CHECK: cleave.nll_loss {{.*}}reduction = #cleave.reduction<none>
  // CHECK-NOT: cleave.div
  // CHECK: return
  %a = cleave.nll_loss %lp, %y, %w {reduction = #cleave.reduction<mean>}
      : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32>
  %b = cleave.nll_loss %lp, %y {reduction = #cleave.reduction<sum>}
      : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %c = cleave.nll_loss %lp, %y {reduction = #cleave.reduction<none>}
      : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
  return %a, %b, %c : tensor<f32>, tensor<f32>, tensor<8xf32>
}

// -----

// reduce_mean becomes reduce_sum (same axes and keepdims) times 1 / count,
// the count being the product of the reduced dimensions.
// CHECK-LABEL: func.func @reduce_mean
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8x3xf32>)
func.func @reduce_mean(%x: tensor<4x8x3xf32>) -> (tensor<4x1x1xf32>, tensor<f32>) {
  // CHECK-NOT: cleave.reduce_mean
  // CHECK: %[[S0:.*]] = cleave.reduce_sum %[[X]] {axes = array<i64: 1, 2>, keepdims = true} : tensor<4x8x3xf32> -> tensor<4x1x1xf32>
  // CHECK: %[[C0:.*]] = cleave.constant dense<0.0416666679> : tensor<f32>
  // CHECK: %[[M0:.*]] = cleave.mul %[[S0]], %[[C0]] : (tensor<4x1x1xf32>, tensor<f32>) -> tensor<4x1x1xf32>
  // CHECK: %[[S1:.*]] = cleave.reduce_sum %[[X]] {axes = array<i64: 0, 1, 2>, keepdims = false} : tensor<4x8x3xf32> -> tensor<f32>
  // CHECK: %[[C1:.*]] = cleave.constant dense<0.010416667> : tensor<f32>
  // CHECK: %[[M1:.*]] = cleave.mul %[[S1]], %[[C1]]
  // CHECK-NOT: cleave.reduce_mean
  // CHECK: return %[[M0]], %[[M1]]
  %0 = cleave.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true}
      : tensor<4x8x3xf32> -> tensor<4x1x1xf32>
  %1 = cleave.reduce_mean %x {axes = array<i64: 0, 1, 2>, keepdims = false}
      : tensor<4x8x3xf32> -> tensor<f32>
  return %0, %1 : tensor<4x1x1xf32>, tensor<f32>
}
