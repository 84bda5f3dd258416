// RUN: cleave-opt %s --cleave-autodiff | FileCheck %s
// RUN: cleave-opt %s --cleave-autodiff="freeze=b*" | FileCheck %s --check-prefix=FROZEN

// loss = sum(x * w + b): dw = sum over rows of x, db = 4 (the broadcast rows).
// CHECK-LABEL: func.func @affine(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x3xf32> {cleave.input = "x"}
// CHECK-SAME: %[[W:[^:]+]]: tensor<3xf32> {cleave.param = "w"}
// CHECK-SAME: -> (tensor<f32> {cleave.loss, cleave.output = "loss"}, tensor<3xf32> {cleave.grad = "w"}, tensor<3xf32> {cleave.grad = "b"})
// CHECK: %[[SEED:.*]] = cleave.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[R:.*]] = cleave.reshape %[[SEED]] : tensor<f32> -> tensor<1x1xf32>
// CHECK: %[[DY:.*]] = cleave.broadcast_to %[[R]] : tensor<1x1xf32> -> tensor<4x3xf32>
// CHECK: %[[DB:.*]] = cleave.reduce_sum %[[DY]] {axes = array<i64: 0>, keepdims = false}
// CHECK: %[[XDY:.*]] = cleave.mul %[[DY]], %[[X]]
// CHECK: %[[DW:.*]] = cleave.reduce_sum %[[XDY]] {axes = array<i64: 0>, keepdims = false}
// CHECK: return %{{.*}}, %[[DW]], %[[DB]]
// FROZEN-LABEL: func.func @affine(
// FROZEN-SAME: -> (tensor<f32> {cleave.loss, cleave.output = "loss"}, tensor<3xf32> {cleave.grad = "w"})
func.func @affine(%x: tensor<4x3xf32> {cleave.input = "x"}, %w: tensor<3xf32> {cleave.param = "w"},
                  %b: tensor<3xf32> {cleave.param = "b"})
    -> (tensor<f32> {cleave.loss, cleave.output = "loss"}) {
  %0 = cleave.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = cleave.add %0, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %2 = cleave.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// Functions without a loss are left alone.
// CHECK-LABEL: func.func @inference(
// CHECK-NEXT: return
func.func @inference(%x: tensor<2xf32> {cleave.input = "x"}) -> (tensor<2xf32> {cleave.output = "y"}) {
  return %x : tensor<2xf32>
}

// Relu's gradient reads the Relu's output (x > 0 exactly where relu(x) > 0),
// so its input is read by nothing else and the memory plan computes the
// Relu in place (on the cuda target, in its GEMM's epilogue).
// CHECK-LABEL: func.func @relu(
// CHECK: %[[Y:.*]] = cleave.relu %[[H:.*]] :
// CHECK-NOT: %[[H]]
// CHECK: cleave.less %{{.*}}, %[[Y]] :
func.func @relu(%x: tensor<4x3xf32> {cleave.input = "x"}, %w: tensor<3xf32> {cleave.param = "w"})
    -> (tensor<f32> {cleave.loss, cleave.output = "loss"}) {
  %0 = cleave.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = cleave.relu %0 : tensor<4x3xf32>
  %2 = cleave.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %2 : tensor<f32>
}
