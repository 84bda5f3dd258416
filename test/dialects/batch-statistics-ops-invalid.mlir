// RUN: cleave-opt %s -split-input-file -verify-diagnostics

// Every verifier error of the split-batch BatchNorm sums
// (CleaveBatchStatisticsOps.cpp).

func.func @sum_rank(%x: tensor<16xf32>) {
  // expected-error @+1 {{expects an input of rank >= 2 ([N, C, ...]) but got rank 1}}
  %s = cleave.batch_norm_sum %x {divisor = 16 : i64} : tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @sum_result_shape(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{result has shape [4] but [16] (one value per channel) was expected}}
  %s = cleave.batch_norm_sum %x {divisor = 4 : i64} : tensor<4x16xf32> -> tensor<4xf32>
  return
}

// -----

func.func @sum_element_type(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{result has element type 'f64' but 'f32' was expected}}
  %s = cleave.batch_norm_sum %x {divisor = 4 : i64} : tensor<4x16xf32> -> tensor<16xf64>
  return
}

// -----

func.func @sum_divisor(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{divisor 0 must be >= 1}}
  %s = cleave.batch_norm_sum %x {divisor = 0 : i64} : tensor<4x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @deviation_mean_shape(%x: tensor<4x16x2xf32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{mean has shape [8] but [16] (one value per channel) was expected}}
  %s = cleave.batch_norm_squared_deviation_sum %x, %m {divisor = 8 : i64} : (tensor<4x16x2xf32>, tensor<8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @deviation_divisor(%x: tensor<4x16xf32>, %m: tensor<16xf32>) {
  // expected-error @+1 {{divisor -4 must be >= 1}}
  %s = cleave.batch_norm_squared_deviation_sum %x, %m {divisor = -4 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @grad_sums_types(%dy: tensor<2x16xf32>, %x: tensor<4x16xf32>, %m: tensor<16xf32>) {
  // expected-error @+1 {{output_grad must have the input's type}}
  %a, %b = cleave.batch_norm_grad_sums %dy, %x, %m : (tensor<2x16xf32>, tensor<4x16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @grad_sums_result(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %m: tensor<16xf32>) {
  // expected-error @+1 {{sum_grad_centered has shape [4, 16] but [16] (one value per channel) was expected}}
  %a, %b = cleave.batch_norm_grad_sums %dy, %x, %m : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @from_sums_types(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{output_grad and input_grad must have the input's type}}
  %dx, %ds, %db = cleave.batch_norm_grad_from_sums %dy, %x, %c, %c, %c, %c, %c {count = 8 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @from_sums_variance(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %c: tensor<16xf32>, %v: tensor<4xf32>) {
  // expected-error @+1 {{variance has shape [4] but [16] (one value per channel) was expected}}
  %dx, %ds, %db = cleave.batch_norm_grad_from_sums %dy, %x, %c, %c, %v, %c, %c {count = 8 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @from_sums_epsilon(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{epsilon -1.000000e+00 must be finite and >= 0}}
  %dx, %ds, %db = cleave.batch_norm_grad_from_sums %dy, %x, %c, %c, %c, %c, %c {count = 8 : i64, epsilon = -1.0 : f32}
      : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @from_sums_count(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{count 2 is less than the input's 4 elements per channel}}
  %dx, %ds, %db = cleave.batch_norm_grad_from_sums %dy, %x, %c, %c, %c, %c, %c {count = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @from_sums_count_zero(%dy: tensor<0x16xf32>, %x: tensor<0x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{count 0 must be >= 1}}
  %dx, %ds, %db = cleave.batch_norm_grad_from_sums %dy, %x, %c, %c, %c, %c, %c {count = 0 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<0x16xf32>, tensor<0x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<0x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}
