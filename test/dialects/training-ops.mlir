// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s

// Round trip of the ops cleave-autodiff and cleave-apply-optimizer produce.

// CHECK-LABEL: func.func @gradients
func.func @gradients(%y: tensor<4x10xf32>, %dy: tensor<4x10xf32>,
                     %x: tensor<2x8x16xf32>, %scale: tensor<16xf32>,
                     %mean: tensor<2x8x1xf32>, %rstd: tensor<2x8x1xf32>,
                     %dx3: tensor<2x8x16xf32>, %ids: tensor<2x3xi64>,
                     %de: tensor<2x3x16xf32>, %ds: tensor<4x4xf32>,
                     %dloss: tensor<f32>, %labels: tensor<4xi64>) {
  // CHECK: cleave.softmax_grad %{{.*}}, %{{.*}} {axis = 1 : i64, log = true} : tensor<4x10xf32>
  %0 = cleave.softmax_grad %y, %dy {axis = 1 : i64, log = true} : tensor<4x10xf32>
  // CHECK: cleave.layer_norm_grad {{.*}} {axis = 2 : i64}
  %1:3 = cleave.layer_norm_grad %dx3, %x, %scale, %mean, %rstd {axis = 2 : i64}
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x1xf32>,
         tensor<2x8x1xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  // CHECK: cleave.gather_grad {{.*}} {axis = 0 : i64} : (tensor<2x3x16xf32>, tensor<2x3xi64>) -> tensor<50x16xf32>
  %2 = cleave.gather_grad %de, %ids {axis = 0 : i64}
      : (tensor<2x3x16xf32>, tensor<2x3xi64>) -> tensor<50x16xf32>
  // CHECK: cleave.slice_grad {{.*}} {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>} : tensor<4x4xf32> -> tensor<4x10xf32>
  %3 = cleave.slice_grad %ds {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>}
      : tensor<4x4xf32> -> tensor<4x10xf32>
  // CHECK: cleave.softmax_cross_entropy_grad {{.*}} {reduction = #cleave.reduction<mean>}
  %4 = cleave.softmax_cross_entropy_grad %dloss, %y, %labels {reduction = #cleave.reduction<mean>}
      : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  // CHECK: cleave.nll_loss_grad {{.*}} {ignore_index = -100 : i64, reduction = #cleave.reduction<sum>}
  %5 = cleave.nll_loss_grad %dloss, %labels {ignore_index = -100 : i64, reduction = #cleave.reduction<sum>}
      : (tensor<f32>, tensor<4xi64>) -> tensor<4x10xf32>
  return
}

// CHECK-LABEL: func.func @updates
func.func @updates(%w: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                   %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>) {
  // CHECK: %[[F:.*]] = cleave.lr_schedule %{{.*}} {min_factor = 1.000000e-01 : f32, schedule = "cosine", total_steps = 100 : i64, warmup_steps = 10 : i64} : tensor<i64> -> tensor<f32>
  %f = cleave.lr_schedule %t {min_factor = 0.1 : f32, schedule = "cosine", total_steps = 100 : i64, warmup_steps = 10 : i64}
      : tensor<i64> -> tensor<f32>
  // CHECK: cleave.sgd %{{.*}}, %{{.*}} momentum_buffer(%{{.*}}) step(%{{.*}}) lr_factor(%[[F]])
  %0:2 = cleave.sgd %w, %g momentum_buffer(%b) step(%t) lr_factor(%f)
      {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.9 : f32, nesterov = false, weight_decay = 0.0 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>)
  // CHECK: cleave.sgd %{{.*}}, %{{.*}} step(%{{.*}}) {
  %1 = cleave.sgd %w, %g step(%t)
      {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.01 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> tensor<8xf32>
  // CHECK: cleave.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} step(%{{.*}}) {beta1
  %2:3 = cleave.adamw %w, %g, %m, %v step(%t)
      {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, lr = 3.0e-4 : f32, weight_decay = 0.1 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>)
        -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}
