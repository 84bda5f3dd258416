// RUN: cleave-opt %s --cleave-expand-gradient | FileCheck %s

func.func @model(%x: tensor<2xf32> {cleave.input = "X"}, %w: tensor<2xf32> {cleave.param = "W"})
    -> (tensor<f32> {cleave.output = "loss"}) {
  %0 = cleave.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = cleave.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// The model is copied in, fed by xs/zs, then differentiated; its loss
// becomes a cleave.loss result.
// CHECK-LABEL: func.func @algorithm(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2xf32> {cleave.input = "X"}
// CHECK-SAME: %[[W:[^:]+]]: tensor<2xf32> {cleave.param = "W"}
// CHECK-SAME: -> (tensor<2xf32> {cleave.update = "W"}, tensor<f32> {cleave.loss, cleave.output = "loss"})
// CHECK-NOT: cleave.gradient
// CHECK: %[[P:.*]] = cleave.mul %[[X]], %[[W]]
// CHECK: %[[L:.*]] = cleave.reduce_sum %[[P]]
// CHECK: %[[DW:.*]] = cleave.mul %{{.*}}, %[[X]]
// CHECK: %[[NEW:.*]] = cleave.sub %[[W]], %[[DW]]
// CHECK: return %[[NEW]], %[[L]]
func.func @algorithm(%x: tensor<2xf32> {cleave.input = "X"}, %w: tensor<2xf32> {cleave.param = "W"})
    -> (tensor<2xf32> {cleave.update = "W"}) {
  %g = cleave.gradient @model(%w, %x) {xs = ["W"], y = "loss", zs = ["X"]}
      : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %0 = cleave.sub %w, %g : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
