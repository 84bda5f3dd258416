// RUN: cleave-opt %s -split-input-file -verify-diagnostics

// Every user-reachable verifier error of the cleave dialect: the Broadcasting
// trait, the hand-written verifiers in CleaveOps.cpp, and a sample of the
// ODS-generated type and trait constraints.

//===----------------------------------------------------------------------===//
// Broadcasting trait
//===----------------------------------------------------------------------===//

func.func @broadcast_incompatible(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operand shapes do not broadcast: [4] and [3]}}
  %0 = cleave.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @broadcast_incompatible_where(%m: tensor<2x1xi1>, %a: tensor<3x4xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{operand shapes do not broadcast: [2, 1] and [3, 4]}}
  %0 = cleave.where %m, %a, %b : (tensor<2x1xi1>, tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @broadcast_result_shape(%a: tensor<4x1xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{the result has shape [4, 1] but [4, 8] was expected}}
  %0 = cleave.mul %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @compare_result_shape(%a: tensor<4xi64>, %b: tensor<i64>) {
  // expected-error @+1 {{the result has shape [] but [4] was expected}}
  %0 = cleave.less %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<i1>
  return
}

// -----

//===----------------------------------------------------------------------===//
// ODS type and trait constraints (a sample)
//===----------------------------------------------------------------------===//

func.func @dynamic_shape(%a: tensor<?xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of any type values, but got 'tensor<?xf32>'}}
  %0 = cleave.add %a, %b : (tensor<?xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unranked(%a: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of any type values, but got 'tensor<*xf32>'}}
  %0 = "cleave.relu"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xf64>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = cleave.sub %a, %b : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return
}

// -----

func.func @compare_not_i1(%a: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = cleave.equal %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_condition_not_i1(%m: tensor<4xi32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi32>'}}
  %0 = cleave.where %m, %a, %a : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @float_op_on_integers(%a: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values, but got 'tensor<4xi64>'}}
  %0 = cleave.sqrt %a : tensor<4xi64>
  return
}

// -----

func.func @constant_type_mismatch() {
  // expected-error @+1 {{failed to verify that all of {value, result} have same type}}
  %0 = "cleave.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<4xi64>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = cleave.cast %a : tensor<4xi64> to tensor<2x2xf32>
  return
}

// -----

func.func @gather_bool_indices(%d: tensor<10x4xf32>, %i: tensor<3xi1>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xi1>'}}
  %0 = cleave.gather %d, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xi1>) -> tensor<3x4xf32>
  return
}

// -----

func.func @loss_float_labels(%s: tensor<4x3xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = cleave.nll_loss %s, %l {reduction = #cleave.reduction<mean>}
      : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @optimizer_lr_not_scalar(%lr: tensor<1xf32>, %t: tensor<i64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be 0-d tensor of floating-point values, but got 'tensor<1xf32>'}}
  %0:2 = "cleave.adagrad"(%lr, %t, %w, %w, %w) <{decay_factor = 0.0 : f32, epsilon = 1.0e-5 : f32, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
      : (tensor<1xf32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

func.func @pow_result_type(%x: tensor<4xf32>, %e: tensor<f32>) {
  // expected-error @+1 {{result element type must be the base's element type}}
  %0 = cleave.pow %x, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf64>
  return
}

// -----

func.func @random_uniform_empty_range() {
  // expected-error @+1 {{needs finite low < high, not [1.000000e+00, 1.000000e+00)}}
  %u = cleave.random_uniform {high = 1.0 : f32, low = 1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @random_normal_negative_scale() {
  // expected-error @+1 {{needs a finite mean and a finite scale >= 0, not 0.000000e+00 and -1.000000e+00}}
  %n = cleave.random_normal {mean = 0.0 : f32, scale = -1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio_one(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{ratio 1.000000e+00 must be in [0, 1)}}
  %y, %m = cleave.dropout %x {ratio = 1.0 : f32, training = true}
      : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return
}

// -----

func.func @dropout_ratio_negative(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{ratio -5.000000e-01 must be in [0, 1)}}
  %y, %m = cleave.dropout %x {ratio = -0.5 : f32, training = true}
      : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return
}

// -----

func.func @dropout_output_type(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{output must have the input's type}}
  %y, %m = cleave.dropout %x {ratio = 0.5 : f32, training = true}
      : tensor<2x8xf32> -> (tensor<2x8xf16>, tensor<2x8xi1>)
  return
}

// -----

func.func @dropout_row_dim_alone(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{row_dim and row_stride come together}}
  %y, %m = cleave.dropout %x {ratio = 0.5 : f32, training = true, row_dim = 1 : i64}
      : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return
}

// -----

func.func @dropout_row_dim_range(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{row_dim 0 must be in [1, 2)}}
  %y, %m = cleave.dropout %x {ratio = 0.5 : f32, training = true, row_dim = 0 : i64, row_stride = 16 : i64}
      : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return
}

// -----

func.func @dropout_row_stride_short(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{row_stride 4 is less than a row's 8 elements}}
  %y, %m = cleave.dropout %x {ratio = 0.5 : f32, training = true, row_dim = 1 : i64, row_stride = 4 : i64}
      : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// matmul, gemm
//===----------------------------------------------------------------------===//

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operands must have rank >= 1}}
  %0 = cleave.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_contracted(%a: tensor<8x64xf32>, %b: tensor<32x16xf32>) {
  // expected-error @+1 {{contracted dimensions differ: lhs [8, 64] has 64, rhs [32, 16] has 32}}
  %0 = cleave.matmul %a, %b : (tensor<8x64xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @matmul_contracted_vector(%a: tensor<8x64xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{contracted dimensions differ: lhs [8, 64] has 64, rhs [8] has 8}}
  %0 = cleave.matmul %a, %v : (tensor<8x64xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x8x64xf32>, %b: tensor<3x64x16xf32>) {
  // expected-error @+1 {{batch dimensions of [2, 8, 64] and [3, 64, 16] do not broadcast}}
  %0 = cleave.matmul %a, %b : (tensor<2x8x64xf32>, tensor<3x64x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<2x8x64xf32>, %b: tensor<64x16xf32>) {
  // expected-error @+1 {{the result has shape [16, 16] but [2, 8, 16] was expected}}
  %0 = cleave.matmul %a, %b : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
  return
}

// -----

func.func @matmul_vector_result_keeps_dim(%v: tensor<64xf32>, %b: tensor<64x16xf32>) {
  // expected-error @+1 {{the result has shape [1, 16] but [16] was expected}}
  %0 = cleave.matmul %v, %b : (tensor<64xf32>, tensor<64x16xf32>) -> tensor<1x16xf32>
  return
}

// -----

func.func @gemm_not_2d(%a: tensor<2x8x64xf32>, %b: tensor<64x16xf32>) {
  // expected-error @+1 {{expects 2-d operands but got [2, 8, 64] and [64, 16]}}
  %0 = cleave.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false}
      : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @gemm_contracted(%a: tensor<32x784xf32>, %b: tensor<128x784xf32>) {
  // expected-error @+1 {{contracted dimensions differ: 784 vs 128}}
  %0 = cleave.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false}
      : (tensor<32x784xf32>, tensor<128x784xf32>) -> tensor<32x128xf32>
  return
}

// -----

func.func @gemm_result(%a: tensor<784x32xf32>, %b: tensor<784x128xf32>) {
  // expected-error @+1 {{the result has shape [784, 128] but [32, 128] was expected}}
  %0 = cleave.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = true, trans_b = false}
      : (tensor<784x32xf32>, tensor<784x128xf32>) -> tensor<784x128xf32>
  return
}

// -----

func.func @gemm_c_incompatible(%a: tensor<32x64xf32>, %b: tensor<64x128xf32>, %c: tensor<32xf32>) {
  // expected-error @+1 {{c of shape [32] does not broadcast to [32, 128]}}
  %0 = cleave.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false}
      : (tensor<32x64xf32>, tensor<64x128xf32>, tensor<32xf32>) -> tensor<32x128xf32>
  return
}

// -----

func.func @gemm_c_grows(%a: tensor<32x64xf32>, %b: tensor<64x128xf32>, %c: tensor<2x1x128xf32>) {
  // expected-error @+1 {{c of shape [2, 1, 128] does not broadcast to [32, 128]}}
  %0 = cleave.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false}
      : (tensor<32x64xf32>, tensor<64x128xf32>, tensor<2x1x128xf32>) -> tensor<32x128xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// softmax, layer_norm, batch_norm
//===----------------------------------------------------------------------===//

func.func @softmax_axis(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0 <= axis < 2)}}
  %0 = cleave.softmax %x {axis = 2 : i64} : tensor<4x10xf32>
  return
}

// -----

func.func @log_softmax_negative_axis(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{axis -1 is out of range for rank 2 (expected 0 <= axis < 2)}}
  %0 = cleave.log_softmax %x {axis = -1 : i64} : tensor<4x10xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0 <= axis < 2)}}
  %y, %m, %r = cleave.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{epsilon -1.000000e+00 must be finite and >= 0}}
  %y, %m, %r = cleave.layer_norm %x, %g {axis = 1 : i64, epsilon = -1.0 : f32}
      : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{scale has shape [64] but [8, 64] was expected}}
  %y, %m, %r = cleave.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %b: tensor<1x64xf32>) {
  // expected-error @+1 {{bias has shape [1, 64] but [64] was expected}}
  %y, %m, %r = cleave.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<1x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  return
}

// -----

func.func @layer_norm_y(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{y must have the input's type}}
  %y, %m, %r = cleave.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<16x64xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  return
}

// -----

func.func @layer_norm_mean(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{mean has shape [2, 8] but [2, 8, 1] was expected}}
  %y, %m, %r = cleave.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8xf32>, tensor<2x8x1xf32>)
  return
}

// -----

func.func @layer_norm_inv_std_dev(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{inv_std_dev has shape [2, 1, 1] but [2, 8, 1] was expected}}
  %y, %m, %r = cleave.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x8x64xf32>, tensor<64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x1xf32>, tensor<2x1x1xf32>)
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<16xf32>, %s: tensor<16xf32>) {
  // expected-error @+1 {{expects an input of rank >= 2 ([N, C, ...]) but got rank 1}}
  %y, %rm, %rv = cleave.batch_norm %x, %s, %s, %s, %s {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = false}
      : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_momentum(%x: tensor<8x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{momentum 1.500000e+00 must be in [0, 1]}}
  %y, %rm, %rv = cleave.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32, momentum = 1.5 : f32, training = true}
      : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_epsilon(%x: tensor<8x16xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{epsilon nan must be finite and >= 0}}
  %y, %rm, %rv = cleave.batch_norm %x, %c, %c, %c, %c {epsilon = 0x7FC00000 : f32, momentum = 0.9 : f32, training = true}
      : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_scale(%x: tensor<8x16x4x4xf32>, %s: tensor<4xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{scale has shape [4] but [16] was expected}}
  %y, %rm, %rv = cleave.batch_norm %x, %s, %c, %c, %c {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true}
      : (tensor<8x16x4x4xf32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_running_var(%x: tensor<8x16x4x4xf32>, %c: tensor<16xf32>, %v: tensor<1x16xf32>) {
  // expected-error @+1 {{running_var has shape [1, 16] but [16] was expected}}
  %y, %rm, %rv = cleave.batch_norm %x, %c, %c, %c, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true}
      : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<1x16xf32>) -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_new_running_mean(%x: tensor<8x16x4x4xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{new_running_mean has shape [8] but [16] was expected}}
  %y, %rm, %rv = cleave.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true}
      : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x4x4xf32>, tensor<8xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_y(%x: tensor<8x16x4x4xf32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{y must have the input's type}}
  %y, %rm, %rv = cleave.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true}
      : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

func.func @reduce_axis_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{reduction axis 2 is out of range for rank 2 (expected 0 <= reduction axis < 2)}}
  %0 = cleave.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false}
      : tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_axis_negative(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{reduction axis -1 is out of range for rank 2 (expected 0 <= reduction axis < 2)}}
  %0 = cleave.reduce_max %x {axes = array<i64: -1>, keepdims = false}
      : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axes_descending(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{axes [1, 0] must be strictly ascending}}
  %0 = cleave.reduce_mean %x {axes = array<i64: 1, 0>, keepdims = false}
      : tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_axes_duplicate(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{axes [1, 1] must be strictly ascending}}
  %0 = cleave.reduce_sum %x {axes = array<i64: 1, 1>, keepdims = false}
      : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_result_keepdims(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{the result has shape [4] but [4, 1] was expected}}
  %0 = cleave.reduce_sum %x {axes = array<i64: 1>, keepdims = true}
      : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_result_no_keepdims(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{the result has shape [1, 8] but [8] was expected}}
  %0 = cleave.reduce_max %x {axes = array<i64: 0>, keepdims = false}
      : tensor<4x8xf32> -> tensor<1x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

func.func @reshape_count(%x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{cannot reshape 1024 elements [2, 8, 64] into 512 elements [16, 32]}}
  %0 = cleave.reshape %x : tensor<2x8x64xf32> -> tensor<16x32xf32>
  return
}

// -----

func.func @transpose_length(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{permutation has 2 entries but 3 were expected}}
  %0 = cleave.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return
}

// -----

func.func @transpose_duplicate(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{permutation [0, 2, 2] is not a permutation of 0..2}}
  %0 = cleave.transpose %x {permutation = array<i64: 0, 2, 2>}
      : tensor<2x3x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @transpose_out_of_range(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{permutation [0, 3, 1] is not a permutation of 0..2}}
  %0 = cleave.transpose %x {permutation = array<i64: 0, 3, 1>}
      : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{the result has shape [4, 3, 2] but [4, 2, 3] was expected}}
  %0 = cleave.transpose %x {permutation = array<i64: 2, 0, 1>}
      : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  return
}

// -----

func.func @broadcast_to_incompatible(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{cannot broadcast [3, 8] to [4, 8]}}
  %0 = cleave.broadcast_to %x : tensor<3x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_to_shrinks(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{cannot broadcast [4, 8] to [8]}}
  %0 = cleave.broadcast_to %x : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

// SameOperandsAndResultElementType rejects this before ConcatOp::verify.
func.func @concat_empty() {
  // expected-error @+1 {{expected 1 or more operands, but found 0}}
  %0 = "cleave.concat"() <{axis = 0 : i64}> : () -> tensor<0xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0 <= axis < 2)}}
  %0 = cleave.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{input #1 has shape [3, 5], which differs from input #0 [2, 3] outside axis 1}}
  %0 = cleave.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{input #1 has rank 3 but input #0 has rank 2}}
  %0 = cleave.concat %a, %b {axis = 1 : i64}
      : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) {
  // expected-error @+1 {{the result has shape [2, 9] but [2, 8] was expected}}
  %0 = cleave.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x9xf32>
  return
}

// -----

// SameOperandsAndResultElementType rejects this before SplitOp::verify.
func.func @split_no_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected 1 or more results}}
  "cleave.split"(%x) <{axis = 0 : i64}> : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @split_axis(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0 <= axis < 2)}}
  %a, %b = cleave.split %x {axis = 2 : i64} : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @split_piece_shape(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{result #1 has shape [2, 3] but [4, 3] was expected}}
  %a, %b = cleave.split %x {axis = 1 : i64} : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<2x3xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{pieces along axis 1 sum to 5 but the input has 6}}
  %a, %b = cleave.split %x {axis = 1 : i64} : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x2xf32>
  return
}

// -----

func.func @slice_rank(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{result rank 1 differs from input rank 2}}
  %0 = cleave.slice %x {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>}
      : tensor<4x10xf32> -> tensor<40xf32>
  return
}

// -----

func.func @slice_offsets_length(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{offsets has 1 entries but 2 were expected}}
  %0 = cleave.slice %x {offsets = array<i64: 0>, strides = array<i64: 1, 1>}
      : tensor<4x10xf32> -> tensor<4x10xf32>
  return
}

// -----

func.func @slice_strides_length(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{strides has 3 entries but 2 were expected}}
  %0 = cleave.slice %x {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1, 1>}
      : tensor<4x10xf32> -> tensor<4x10xf32>
  return
}

// -----

func.func @slice_zero_stride(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{stride of dimension 1 is zero}}
  %0 = cleave.slice %x {offsets = array<i64: 0, 0>, strides = array<i64: 1, 0>}
      : tensor<4x10xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @slice_past_end(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{dimension 1 reads indices from 2 in 5 steps of 2, outside the input's extent 10}}
  %0 = cleave.slice %x {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>}
      : tensor<4x10xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @slice_negative_offset(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{dimension 0 reads indices from -1 in 2 steps of 1, outside the input's extent 4}}
  %0 = cleave.slice %x {offsets = array<i64: -1, 0>, strides = array<i64: 1, 1>}
      : tensor<4x10xf32> -> tensor<2x10xf32>
  return
}

// -----

func.func @slice_negative_stride_before_start(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{dimension 1 reads indices from 9 in 5 steps of -3, outside the input's extent 10}}
  %0 = cleave.slice %x {offsets = array<i64: 3, 9>, strides = array<i64: -1, -3>}
      : tensor<4x10xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @gather_axis(%d: tensor<100x64xf32>, %i: tensor<8xi64>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2 (expected 0 <= axis < 2)}}
  %0 = cleave.gather %d, %i {axis = 2 : i64}
      : (tensor<100x64xf32>, tensor<8xi64>) -> tensor<100x64x8xf32>
  return
}

// -----

func.func @gather_result(%d: tensor<100x64xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{the result has shape [16, 64] but [2, 8, 64] was expected}}
  %0 = cleave.gather %d, %i {axis = 0 : i64}
      : (tensor<100x64xf32>, tensor<2x8xi64>) -> tensor<16x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// conv, max_pool, avg_pool
//===----------------------------------------------------------------------===//

func.func @conv_rank(%x: tensor<8x28xf32>, %w: tensor<16x3xf32>) {
  // expected-error @+1 {{expects input [N, C, D...] and weight [M, C/group, K...] of one rank >= 3, got [8, 28] and [16, 3]}}
  %0 = cleave.conv %x, %w {dilations = array<i64>, group = 1 : i64, pads = array<i64>, strides = array<i64>}
      : (tensor<8x28xf32>, tensor<16x3xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @conv_weight_rank(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3xf32>) {
  // expected-error @+1 {{expects input [N, C, D...] and weight [M, C/group, K...] of one rank >= 3, got [8, 1, 28, 28] and [16, 1, 3]}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3xf32>) -> tensor<8x16x26x26xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<2x8x10x10xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{group 4 must divide the 8 input channels and the 6 output channels}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<2x8x10x10xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x8x8xf32>
  return
}

// -----

func.func @conv_group_zero(%x: tensor<2x8x10x10xf32>, %w: tensor<8x2x3x3xf32>) {
  // expected-error @+1 {{group 0 must divide the 8 input channels and the 8 output channels}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 0 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<2x8x10x10xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x8x8xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<2x8x10x10xf32>, %w: tensor<8x8x3x3xf32>) {
  // expected-error @+1 {{weight has 8 channels per group but the input has 2}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<2x8x10x10xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x8x8xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>, %b: tensor<1xf32>) {
  // expected-error @+1 {{bias has shape [1] but [16] was expected}}
  %0 = cleave.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>, tensor<1xf32>) -> tensor<8x16x26x26xf32>
  return
}

// -----

func.func @conv_strides_length(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) {
  // expected-error @+1 {{strides has 1 entries but 2 were expected}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x26x26xf32>
  return
}

// -----

func.func @conv_pads_length(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) {
  // expected-error @+1 {{pads has 2 entries but 4 were expected}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x26x26xf32>
  return
}

// -----

func.func @conv_dilations_length(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) {
  // expected-error @+1 {{dilations has 3 entries but 2 were expected}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x26x26xf32>
  return
}

// -----

func.func @conv_zero_stride(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) {
  // expected-error @+1 {{strides [1, 0] must have entries >= 1}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 0>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x26x26xf32>
  return
}

// -----

func.func @conv_zero_dilation(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) {
  // expected-error @+1 {{dilations [0, 1] must have entries >= 1}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 0, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x26x26xf32>
  return
}

// -----

func.func @conv_negative_pad(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) {
  // expected-error @+1 {{pads [0, -1, 0, 0] must have entries >= 0}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, -1, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x26x25xf32>
  return
}

// -----

func.func @conv_window_too_big(%x: tensor<1x1x4x4xf32>, %w: tensor<2x1x3x3xf32>) {
  // expected-error @+1 {{window of extent 5 does not fit spatial dimension 0 of size 4 with padding}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 2, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x1x2xf32>
  return
}

// -----

func.func @conv_result(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>) {
  // expected-error @+1 {{the result has shape [8, 16, 14, 14] but [8, 16, 13, 13] was expected}}
  %0 = cleave.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x14x14xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{expects an input [N, C, D...] of rank >= 3, got [8, 16]}}
  %0 = cleave.max_pool %x {ceil_mode = false, dilations = array<i64>, kernel_shape = array<i64>, pads = array<i64>, strides = array<i64>}
      : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @pool_kernel_length(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{kernel_shape has 1 entries but 2 were expected}}
  %0 = cleave.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @pool_zero_kernel(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{kernel_shape [2, 0] must have entries >= 1}}
  %0 = cleave.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @pool_pad_not_smaller_than_kernel(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{pads [0, 0, 0, 2] must be smaller than kernel_shape [2, 2]}}
  %0 = cleave.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 2>, strides = array<i64: 2, 2>}
      : tensor<1x2x8x8xf32> -> tensor<1x2x4x5xf32>
  return
}

// -----

func.func @pool_window_too_big(%x: tensor<1x2x2x8xf32>) {
  // expected-error @+1 {{window of extent 3 does not fit spatial dimension 0 of size 2 with padding}}
  %0 = cleave.avg_pool %x {ceil_mode = false, count_include_pad = false, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
      : tensor<1x2x2x8xf32> -> tensor<1x2x1x6xf32>
  return
}

// -----

func.func @avg_pool_strides_length(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{strides has 1 entries but 2 were expected}}
  %0 = cleave.avg_pool %x {ceil_mode = false, count_include_pad = false, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2>}
      : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @pool_result_ceil_mode(%x: tensor<1x2x5x5xf32>) {
  // expected-error @+1 {{the result has shape [1, 2, 2, 2] but [1, 2, 3, 3] was expected}}
  %0 = cleave.max_pool %x {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : tensor<1x2x5x5xf32> -> tensor<1x2x2x2xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

func.func @sce_log_prob_type(%s: tensor<32x10xf32>, %l: tensor<32xi64>) {
  // expected-error @+1 {{log_prob must have the type of scores}}
  %loss, %logp = cleave.softmax_cross_entropy %s, %l {reduction = #cleave.reduction<mean>}
      : (tensor<32x10xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<32x10xf16>)
  return
}

// -----

func.func @sce_rank(%s: tensor<32xf32>, %l: tensor<32xi64>) {
  // expected-error @+1 {{expects class scores of rank >= 2 ([N, C, ...]) but got rank 1}}
  %loss, %logp = cleave.softmax_cross_entropy %s, %l {reduction = #cleave.reduction<mean>}
      : (tensor<32xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<32xf32>)
  return
}

// -----

func.func @sce_label_shape(%s: tensor<2x5x3xf32>, %l: tensor<2x5xi64>) {
  // expected-error @+1 {{the label operand has shape [2, 5] but [2, 3] was expected}}
  %loss, %logp = cleave.softmax_cross_entropy %s, %l {reduction = #cleave.reduction<mean>}
      : (tensor<2x5x3xf32>, tensor<2x5xi64>) -> (tensor<f32>, tensor<2x5x3xf32>)
  return
}

// -----

func.func @sce_weight_shape(%s: tensor<32x10xf32>, %l: tensor<32xi64>, %w: tensor<32xf32>) {
  // expected-error @+1 {{the weight operand has shape [32] but [10] was expected}}
  %loss, %logp = cleave.softmax_cross_entropy %s, %l, %w {ignore_index = -100 : i64, reduction = #cleave.reduction<mean>}
      : (tensor<32x10xf32>, tensor<32xi64>, tensor<32xf32>) -> (tensor<f32>, tensor<32x10xf32>)
  return
}

// -----

func.func @sce_loss_shape_none(%s: tensor<32x10xf32>, %l: tensor<32xi64>) {
  // expected-error @+1 {{the loss has shape [] but [32] was expected}}
  %loss, %logp = cleave.softmax_cross_entropy %s, %l {reduction = #cleave.reduction<none>}
      : (tensor<32x10xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<32x10xf32>)
  return
}

// -----

func.func @sce_loss_shape_mean(%s: tensor<32x10xf32>, %l: tensor<32xi64>) {
  // expected-error @+1 {{the loss has shape [32] but [] was expected}}
  %loss, %logp = cleave.softmax_cross_entropy %s, %l {reduction = #cleave.reduction<mean>}
      : (tensor<32x10xf32>, tensor<32xi64>) -> (tensor<32xf32>, tensor<32x10xf32>)
  return
}

// -----

func.func @nll_rank(%s: tensor<32xf32>, %l: tensor<32xi64>) {
  // expected-error @+1 {{expects class scores of rank >= 2 ([N, C, ...]) but got rank 1}}
  %loss = cleave.nll_loss %s, %l {reduction = #cleave.reduction<sum>}
      : (tensor<32xf32>, tensor<32xi64>) -> tensor<f32>
  return
}

// -----

func.func @nll_target_shape(%s: tensor<32x10xf32>, %l: tensor<10xi32>) {
  // expected-error @+1 {{the label operand has shape [10] but [32] was expected}}
  %loss = cleave.nll_loss %s, %l {reduction = #cleave.reduction<sum>}
      : (tensor<32x10xf32>, tensor<10xi32>) -> tensor<f32>
  return
}

// -----

func.func @nll_weight_shape(%s: tensor<32x10xf32>, %l: tensor<32xi64>, %w: tensor<1x10xf32>) {
  // expected-error @+1 {{the weight operand has shape [1, 10] but [10] was expected}}
  %loss = cleave.nll_loss %s, %l, %w {reduction = #cleave.reduction<mean>}
      : (tensor<32x10xf32>, tensor<32xi64>, tensor<1x10xf32>) -> tensor<f32>
  return
}

// -----

func.func @nll_loss_shape_none(%s: tensor<2x5x3xf32>, %l: tensor<2x3xi64>) {
  // expected-error @+1 {{the loss has shape [2] but [2, 3] was expected}}
  %loss = cleave.nll_loss %s, %l {reduction = #cleave.reduction<none>}
      : (tensor<2x5x3xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gradient
//===----------------------------------------------------------------------===//

func.func @model(%w: tensor<4x2xf32> {cleave.param = "W"}, %x: tensor<8x4xf32> {cleave.input = "X"}) -> (tensor<8x2xf32> {cleave.output = "Y"}) {
  %0 = cleave.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

func.func @gradient_input_count(%w: tensor<4x2xf32>) {
  // expected-error @+1 {{has 1 inputs but xs (1) and zs (1) name 2}}
  %0 = cleave.gradient @model(%w) {xs = ["W"], y = "Y", zs = ["X"]}
      : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @model(%w: tensor<4x2xf32> {cleave.param = "W"}, %x: tensor<8x4xf32> {cleave.input = "X"}) -> (tensor<8x2xf32> {cleave.output = "Y"}) {
  %0 = cleave.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

func.func @gradient_result_count(%w: tensor<4x2xf32>, %x: tensor<8x4xf32>) {
  // expected-error @+1 {{has 2 results but xs names 1}}
  %0:2 = cleave.gradient @model(%w, %x) {xs = ["W"], y = "Y", zs = ["X"]}
      : (tensor<4x2xf32>, tensor<8x4xf32>) -> (tensor<4x2xf32>, tensor<8x4xf32>)
  return
}

// -----

func.func @model(%w: tensor<4x2xf32> {cleave.param = "W"}, %x: tensor<8x4xf32> {cleave.input = "X"}) -> (tensor<8x2xf32> {cleave.output = "Y"}) {
  %0 = cleave.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

func.func @gradient_result_type(%w: tensor<4x2xf32>, %x: tensor<8x4xf32>) {
  // expected-error @+1 {{gradient #0 must have the type of its input}}
  %0 = cleave.gradient @model(%w, %x) {xs = ["W"], y = "Y", zs = ["X"]}
      : (tensor<4x2xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gradient_unknown_model(%w: tensor<4x2xf32>) {
  // expected-error @+1 {{model @missing does not name a func.func}}
  %0 = cleave.gradient @missing(%w) {xs = ["W"], y = "Y", zs = []}
      : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @model(%w: tensor<4x2xf32> {cleave.param = "W"}, %x: tensor<8x4xf32> {cleave.input = "X"}) -> (tensor<8x2xf32> {cleave.output = "Y"}) {
  %0 = cleave.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

func.func @gradient_unknown_name(%w: tensor<4x2xf32>, %x: tensor<8x4xf32>) {
  // expected-error @+1 {{'T' is not a parameter or input of @model}}
  %0 = cleave.gradient @model(%w, %x) {xs = ["W"], y = "Y", zs = ["T"]}
      : (tensor<4x2xf32>, tensor<8x4xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @model(%w: tensor<4x2xf32> {cleave.state = "W"}, %x: tensor<8x4xf32> {cleave.input = "X"}) -> (tensor<8x2xf32> {cleave.output = "Y"}) {
  %0 = cleave.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// A training-state argument is neither a parameter nor an input.
func.func @gradient_state_argument(%w: tensor<4x2xf32>, %x: tensor<8x4xf32>) {
  // expected-error @+1 {{'W' is not a parameter or input of @model}}
  %0 = cleave.gradient @model(%w, %x) {xs = ["W"], y = "Y", zs = ["X"]}
      : (tensor<4x2xf32>, tensor<8x4xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @model(%w: tensor<4x2xf32> {cleave.param = "W"}, %x: tensor<8x4xf32> {cleave.input = "X"}) -> (tensor<8x2xf32> {cleave.output = "Y"}) {
  %0 = cleave.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

func.func @gradient_input_type(%w: tensor<4x2xf32>, %x: tensor<4x4xf32>) {
  // expected-error @+1 {{input for 'X' has type 'tensor<4x4xf32>' but the model argument has 'tensor<8x4xf32>'}}
  %0 = cleave.gradient @model(%w, %x) {xs = ["W"], y = "Y", zs = ["X"]}
      : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @model(%w: tensor<4x2xf32> {cleave.param = "W"}, %x: tensor<8x4xf32> {cleave.input = "X"}) -> (tensor<8x2xf32> {cleave.output = "Y"}) {
  %0 = cleave.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

func.func @gradient_unknown_output(%w: tensor<4x2xf32>, %x: tensor<8x4xf32>) {
  // expected-error @+1 {{y 'loss' is not an output of @model}}
  %0 = cleave.gradient @model(%w, %x) {xs = ["W"], y = "loss", zs = ["X"]}
      : (tensor<4x2xf32>, tensor<8x4xf32>) -> tensor<4x2xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Optimizers (generic form, so that malformed operand groups can be written).
//===----------------------------------------------------------------------===//

func.func @momentum_grads_count(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{has 2 params but 1 grads (expected one per parameter)}}
  %0:4 = "cleave.momentum"(%lr, %t, %w, %b, %w, %w, %b) <{alpha = 0.9 : f32, beta = 1.0 : f32, mode = #cleave.momentum_mode<standard>, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 2, 1, 2>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>)
  return
}

// -----

func.func @momentum_velocity_type(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{velocities #1 has type 'tensor<4xf32>' but its parameter has 'tensor<2xf32>'}}
  %0:4 = "cleave.momentum"(%lr, %t, %w, %b, %w, %b, %w, %w) <{alpha = 0.9 : f32, beta = 1.0 : f32, mode = #cleave.momentum_mode<standard>, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>)
  return
}

// -----

func.func @momentum_new_params_count(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{has 3 results but 2 per parameter (1 params) were expected}}
  %0:3 = "cleave.momentum"(%lr, %t, %w, %w, %w) <{alpha = 0.9 : f32, beta = 1.0 : f32, mode = #cleave.momentum_mode<standard>, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @momentum_alpha_nan(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{alpha is nan; hyper-parameters must be finite}}
  %0:2 = "cleave.momentum"(%lr, %t, %w, %w, %w) <{alpha = 0x7FC00000 : f32, beta = 1.0 : f32, mode = #cleave.momentum_mode<standard>, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @momentum_new_velocity_type(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{result #1 has type 'tensor<4xf64>' but its parameter has 'tensor<4xf32>'}}
  %0:2 = "cleave.momentum"(%lr, %t, %w, %w, %w) <{alpha = 0.9 : f32, beta = 1.0 : f32, mode = #cleave.momentum_mode<nesterov>, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf64>)
  return
}

// -----

func.func @adam_first_moments_count(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{has 1 params but 0 first_moments (expected one per parameter)}}
  %0:3 = "cleave.adam"(%lr, %t, %w, %w, %w) <{alpha = 0.9 : f32, beta = 0.999 : f32, epsilon = 1.0e-8 : f32, norm_coefficient = 0.0 : f32, norm_coefficient_post = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_second_moments_type(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>, %h: tensor<2x2xf32>) {
  // expected-error @+1 {{second_moments #0 has type 'tensor<2x2xf32>' but its parameter has 'tensor<4xf32>'}}
  %0:3 = "cleave.adam"(%lr, %t, %w, %w, %w, %h) <{alpha = 0.9 : f32, beta = 0.999 : f32, epsilon = 1.0e-8 : f32, norm_coefficient = 0.0 : f32, norm_coefficient_post = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_new_second_moments_type(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{result #2 has type 'tensor<5xf32>' but its parameter has 'tensor<4xf32>'}}
  %0:3 = "cleave.adam"(%lr, %t, %w, %w, %w, %w) <{alpha = 0.9 : f32, beta = 0.999 : f32, epsilon = 1.0e-8 : f32, norm_coefficient = 0.0 : f32, norm_coefficient_post = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<5xf32>)
  return
}

// -----

func.func @adagrad_grads_type(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>, %g: tensor<4xf16>) {
  // expected-error @+1 {{grads #0 has type 'tensor<4xf16>' but its parameter has 'tensor<4xf32>'}}
  %0:2 = "cleave.adagrad"(%lr, %t, %w, %g, %w) <{decay_factor = 0.0 : f32, epsilon = 1.0e-5 : f32, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adagrad_accumulators_count(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{has 1 params but 2 accumulators (expected one per parameter)}}
  %0:2 = "cleave.adagrad"(%lr, %t, %w, %w, %w, %w) <{decay_factor = 0.0 : f32, epsilon = 1.0e-5 : f32, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 2>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adagrad_new_accumulators_count(%lr: tensor<f32>, %t: tensor<i64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{has 1 results but 2 per parameter (1 params) were expected}}
  %0 = "cleave.adagrad"(%lr, %t, %w, %w, %w) <{decay_factor = 0.0 : f32, epsilon = 1.0e-5 : f32, norm_coefficient = 0.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
