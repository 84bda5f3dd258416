// RUN: cleave-opt %s -split-input-file -verify-diagnostics

func.func @softmax_grad_axis(%y: tensor<4x10xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = cleave.softmax_grad %y, %y {axis = 2 : i64, log = false} : tensor<4x10xf32>
  return
}

// -----

func.func @layer_norm_grad_types(%dy: tensor<2x16xf32>, %x: tensor<2x8xf32>, %s: tensor<16xf32>, %m: tensor<2x1xf32>) {
  // expected-error @+1 {{output_grad, input and input_grad must have one type}}
  %0:3 = cleave.layer_norm_grad %dy, %x, %s, %m, %m {axis = 1 : i64}
      : (tensor<2x16xf32>, tensor<2x8xf32>, tensor<16xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
        -> (tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_grad_types(%dy: tensor<2x4x3xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{scale, scale_grad and bias_grad must have one type}}
  %0:3 = cleave.batch_norm_grad %dy, %dy, %s {epsilon = 1.0e-5 : f32}
      : (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<4xf32>) -> (tensor<2x4x3xf32>, tensor<4xf32>, tensor<5xf32>)
  return
}

// -----

func.func @max_pool_grad_type(%dy: tensor<1x1x2x2xf32>, %x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{input and input_grad must have one type}}
  %0 = cleave.max_pool_grad %dy, %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<1x1x2x2xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x5xf32>
  return
}

// -----

func.func @gather_grad_shape(%de: tensor<2x3x16xf32>, %ids: tensor<2x3xi64>) {
  // expected-error @+1 {{output_grad has shape [2, 3, 16] but [2, 3, 8] was expected}}
  %0 = cleave.gather_grad %de, %ids {axis = 0 : i64} : (tensor<2x3x16xf32>, tensor<2x3xi64>) -> tensor<50x8xf32>
  return
}

// -----

func.func @sce_grad_type(%d: tensor<f32>, %lp: tensor<4x10xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{scores_grad must have the type of log_prob}}
  %0 = cleave.softmax_cross_entropy_grad %d, %lp, %l {reduction = #cleave.reduction<mean>}
      : (tensor<f32>, tensor<4x10xf32>, tensor<4xi64>) -> tensor<4x9xf32>
  return
}

// -----

func.func @sgd_buffer_without_momentum(%w: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{has a momentum buffer exactly when momentum != 0}}
  %0:2 = cleave.sgd %w, %w momentum_buffer(%w) step(%t)
      {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @sgd_results(%w: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{yields 2 results but 1 were expected (the parameter)}}
  %0:2 = cleave.sgd %w, %w step(%t)
      {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @sgd_types(%w: tensor<8xf32>, %g: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{param, grad, buffer and results must have one type}}
  %0 = cleave.sgd %w, %g step(%t)
      {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32}
      : (tensor<8xf32>, tensor<4xf32>, tensor<i64>) -> tensor<8xf32>
  return
}

// -----

func.func @adamw_types(%w: tensor<8xf32>, %m: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{param, grad, moments and results must have one type}}
  %0:3 = cleave.adamw %w, %w, %m, %w step(%t)
      {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32, lr = 3.0e-4 : f32, weight_decay = 0.1 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @schedule_kind(%t: tensor<i64>) {
  // expected-error @+1 {{schedule 'step' is not one of constant, linear, cosine}}
  %0 = cleave.lr_schedule %t {min_factor = 0.0 : f32, schedule = "step", total_steps = 10 : i64, warmup_steps = 0 : i64} : tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @schedule_total(%t: tensor<i64>) {
  // expected-error @+1 {{total_steps 5 must exceed warmup_steps 10 for a decaying schedule}}
  %0 = cleave.lr_schedule %t {min_factor = 0.0 : f32, schedule = "linear", total_steps = 5 : i64, warmup_steps = 10 : i64} : tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @schedule_min(%t: tensor<i64>) {
  // expected-error @+1 {{min_factor 2.000000e+00 must be in [0, 1]}}
  %0 = cleave.lr_schedule %t {min_factor = 2.0 : f32, schedule = "constant", total_steps = 0 : i64, warmup_steps = 0 : i64} : tensor<i64> -> tensor<f32>
  return
}
