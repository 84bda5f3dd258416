// RUN: cleave-opt %s --split-input-file --cleave-schedule-updates | FileCheck %s

// AdamW updates move up to where their gradient is complete, but never
// before an op that may still read what they overwrite.

// Two layers' backward pass, the updates appended at the end (as
// cleave-apply-optimizer leaves them), the learning-rate schedule before
// them: the schedule goes first, w2's update follows its last reader (the
// input gradient dx2), w1's its gradient.
// CHECK-LABEL: func.func @two_layers
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x3xf32>, %[[DY:[^:]+]]: tensor<4x2xf32>, %[[W1:[^:]+]]: tensor<5x3xf32>, %[[W2:[^:]+]]: tensor<2x5xf32>, %[[H:[^:]+]]: tensor<4x5xf32>
func.func @two_layers(%x: tensor<4x3xf32>, %dy: tensor<4x2xf32>,
                      %w1: tensor<5x3xf32>, %w2: tensor<2x5xf32>,
                      %h: tensor<4x5xf32>,
                      %m1: tensor<5x3xf32>, %v1: tensor<5x3xf32>,
                      %m2: tensor<2x5xf32>, %v2: tensor<2x5xf32>,
                      %t: tensor<i64>)
    -> (tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>,
        tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
  // CHECK: %[[LR:.*]] = cleave.lr_schedule
  // CHECK-NEXT: %[[DW2:.*]] = cleave.gemm %[[DY]], %[[H]]
  // CHECK-NEXT: %[[DX2:.*]] = cleave.gemm %[[DY]], %[[W2]]
  // CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = cleave.adamw %[[W2]], %[[DW2]]
  // CHECK-NEXT: %[[DW1:.*]] = cleave.gemm %[[DX2]], %[[X]]
  // CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = cleave.adamw %[[W1]], %[[DW1]]
  // CHECK-NEXT: return
  %dw2 = cleave.gemm %dy, %h
      {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = false}
      : (tensor<4x2xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  %dx2 = cleave.gemm %dy, %w2
      {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
      : (tensor<4x2xf32>, tensor<2x5xf32>) -> tensor<4x5xf32>
  %dw1 = cleave.gemm %dx2, %x
      {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = false}
      : (tensor<4x5xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %lr = cleave.lr_schedule %t {min_factor = 0.0 : f32, schedule = "linear",
                               total_steps = 100 : i64, warmup_steps = 10 : i64}
      : tensor<i64> -> tensor<f32>
  %p1, %m1n, %v1n = cleave.adamw %w1, %dw1, %m1, %v1 step(%t) lr_factor(%lr)
      {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32,
       lr = 1.0e-3 : f32, weight_decay = 0.01 : f32}
      : (tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>,
         tensor<i64>, tensor<f32>)
      -> (tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>)
  %p2, %m2n, %v2n = cleave.adamw %w2, %dw2, %m2, %v2 step(%t) lr_factor(%lr)
      {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32,
       lr = 1.0e-3 : f32, weight_decay = 0.01 : f32}
      : (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>,
         tensor<i64>, tensor<f32>)
      -> (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>)
  return %p1, %m1n, %v1n, %p2, %m2n, %v2n
      : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>,
        tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>
}

// -----

// A parameter read through a reshape (a view of its buffer) by an
// elementwise op that starts a chain of single-use elementwise ops: the
// emitter may run the whole chain as one loop at its last op, so the update
// waits for the chain's end, not for the first reader.
// CHECK-LABEL: func.func @view_and_chain
// CHECK-SAME: (%[[G:[^:]+]]: tensor<6xf32>, %[[W:[^:]+]]: tensor<6xf32>
func.func @view_and_chain(%g: tensor<6xf32>, %w: tensor<6xf32>,
                          %m: tensor<6xf32>, %v: tensor<6xf32>,
                          %y: tensor<2x3xf32>, %t: tensor<i64>)
    -> (tensor<2x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  // CHECK: %[[VIEW:.*]] = cleave.reshape %[[W]]
  // CHECK-NEXT: %[[A:.*]] = cleave.mul %[[VIEW]],
  // CHECK-NEXT: %[[B:.*]] = cleave.exp %[[A]]
  // CHECK-NEXT: %[[C:.*]] = cleave.neg %[[B]]
  // CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = cleave.adamw %[[W]], %[[G]]
  // CHECK-NEXT: cleave.reduce_sum %[[C]]
  // CHECK-NEXT: cleave.broadcast_to
  // CHECK-NEXT: return
  %view = cleave.reshape %w : tensor<6xf32> -> tensor<2x3xf32>
  %a = cleave.mul %view, %y
      : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = cleave.exp %a : tensor<2x3xf32>
  %c = cleave.neg %b : tensor<2x3xf32>
  %d = cleave.reduce_sum %c {axes = array<i64: 0>, keepdims = true}
      : tensor<2x3xf32> -> tensor<1x3xf32>
  %e = cleave.broadcast_to %d : tensor<1x3xf32> -> tensor<2x3xf32>
  %p, %mn, %vn = cleave.adamw %w, %g, %m, %v step(%t)
      {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32,
       lr = 1.0e-3 : f32, weight_decay = 0.01 : f32}
      : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>,
         tensor<i64>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  return %e, %p, %mn, %vn
      : tensor<2x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}
