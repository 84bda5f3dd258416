// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s

// Round trip of every cleave op through its custom and its generic form.

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<2xf32>, tensor<2x2xi64>, tensor<i1>) {
  // CHECK: %[[F:.*]] = cleave.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  // CHECK: %[[I:.*]] = cleave.constant dense<{{\[\[1, 2\], \[3, 4\]\]}}> : tensor<2x2xi64>
  // CHECK: %[[B:.*]] = cleave.constant dense<true> : tensor<i1>
  // CHECK: return %[[F]], %[[I]], %[[B]]
  %f = cleave.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %i = cleave.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %b = cleave.constant dense<true> : tensor<i1>
  return %f, %i, %b : tensor<2xf32>, tensor<2x2xi64>, tensor<i1>
}

// CHECK-LABEL: func.func @arith
// CHECK-SAME: (%[[A:[^:]+]]: tensor<4x8xf32>, %[[B:[^:]+]]: tensor<8xf32>, %[[C:[^:]+]]: tensor<4x1xf32>, %[[S:[^:]+]]: tensor<f32>)
func.func @arith(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>,
                 %s: tensor<f32>) {
  // CHECK: cleave.add %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: cleave.sub %[[C]], %[[B]] : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: cleave.mul %[[S]], %[[A]] : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: cleave.div %[[A]], %[[A]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = cleave.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = cleave.sub %c, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = cleave.mul %s, %a : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = cleave.div %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @pow
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>, %[[E:[^:]+]]: tensor<f32>, %[[N:[^:]+]]: tensor<2x1xi64>, %[[I:[^:]+]]: tensor<3xi32>)
func.func @pow(%x: tensor<4xf32>, %e: tensor<f32>, %n: tensor<2x1xi64>, %i: tensor<3xi32>) {
  // CHECK: cleave.pow %[[X]], %[[E]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: cleave.pow %[[X]], %[[N]] : (tensor<4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  // CHECK: cleave.pow %[[I]], %[[E]] : (tensor<3xi32>, tensor<f32>) -> tensor<3xi32>
  %0 = cleave.pow %x, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = cleave.pow %x, %n : (tensor<4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  // An integer base keeps its element type whatever the exponent's.
  %2 = cleave.pow %i, %e : (tensor<3xi32>, tensor<f32>) -> tensor<3xi32>
  return
}

// CHECK-LABEL: func.func @compare_where
// CHECK-SAME: (%[[A:[^:]+]]: tensor<4xi64>, %[[B:[^:]+]]: tensor<i64>, %[[M:[^:]+]]: tensor<1x1x8x8xi1>, %[[S:[^:]+]]: tensor<2x4x8x8xf32>, %[[N:[^:]+]]: tensor<f32>)
func.func @compare_where(%a: tensor<4xi64>, %b: tensor<i64>, %m: tensor<1x1x8x8xi1>,
                         %s: tensor<2x4x8x8xf32>, %n: tensor<f32>) {
  // CHECK: cleave.equal %[[A]], %[[B]] : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  // CHECK: cleave.less %[[B]], %[[A]] : (tensor<i64>, tensor<4xi64>) -> tensor<4xi1>
  // CHECK: cleave.where %[[M]], %[[S]], %[[N]]
  // CHECK-SAME: : (tensor<1x1x8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %0 = cleave.equal %a, %b : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  %1 = cleave.less %b, %a : (tensor<i64>, tensor<4xi64>) -> tensor<4xi1>
  %2 = cleave.where %m, %s, %n
      : (tensor<1x1x8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  return
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[I:[^:]+]]: tensor<3xi64>)
func.func @unary(%x: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // CHECK: cleave.sqrt %[[X]] : tensor<4x8xf32>
  // CHECK: cleave.neg %[[X]] : tensor<4x8xf32>
  // CHECK: cleave.neg %[[I]] : tensor<3xi64>
  // CHECK: cleave.erf %[[X]] : tensor<4x8xf32>
  // CHECK: cleave.tanh %[[X]] : tensor<4x8xf32>
  // CHECK: cleave.sigmoid %[[X]] : tensor<4x8xf32>
  // CHECK: cleave.relu %[[X]] : tensor<4x8xf32>
  // CHECK: cleave.relu %[[I]] : tensor<3xi64>
  // CHECK: cleave.exp %[[X]] : tensor<4x8xf32>
  // CHECK: cleave.log %[[X]] : tensor<4x8xf32>
  %0 = cleave.sqrt %x : tensor<4x8xf32>
  %1 = cleave.neg %x : tensor<4x8xf32>
  %2 = cleave.neg %i : tensor<3xi64>
  %3 = cleave.erf %x : tensor<4x8xf32>
  %4 = cleave.tanh %x : tensor<4x8xf32>
  %5 = cleave.sigmoid %x : tensor<4x8xf32>
  %6 = cleave.relu %x : tensor<4x8xf32>
  %7 = cleave.relu %i : tensor<3xi64>
  %8 = cleave.exp %x : tensor<4x8xf32>
  %9 = cleave.log %x : tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @cast_dropout
// CHECK-SAME: (%[[I:[^:]+]]: tensor<4xi64>, %[[X:[^:]+]]: tensor<2x8xf32>)
func.func @cast_dropout(%i: tensor<4xi64>, %x: tensor<2x8xf32>) {
  // CHECK: cleave.cast %[[I]] : tensor<4xi64> to tensor<4xf32>
  // CHECK: cleave.cast %[[X]] : tensor<2x8xf32> to tensor<2x8xi1>
  // CHECK: cleave.dropout %[[X]] {ratio = 1.000000e-01 : f32, training = true}
  // CHECK-SAME: : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
  // CHECK: cleave.dropout %[[X]] {ratio = 5.000000e-01 : f32, seed = 42 : i64, training = false}
  %0 = cleave.cast %i : tensor<4xi64> to tensor<4xf32>
  %1 = cleave.cast %x : tensor<2x8xf32> to tensor<2x8xi1>
  %y, %mask = cleave.dropout %x {ratio = 0.1 : f32, training = true}
      : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
  %y2, %mask2 = cleave.dropout %x {ratio = 0.5 : f32, seed = 42 : i64, training = false}
      : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
  return
}

// CHECK-LABEL: func.func @random
func.func @random() -> (tensor<4x2xf32>, tensor<3xf32>) {
  // CHECK: cleave.random_uniform {high = 3.000000e+00 : f32, low = -1.000000e+00 : f32} : tensor<4x2xf32>
  // CHECK: cleave.random_normal {mean = 0.000000e+00 : f32, scale = 2.000000e-02 : f32, seed = 7 : i64} : tensor<3xf32>
  %u = cleave.random_uniform {high = 3.0 : f32, low = -1.0 : f32} : tensor<4x2xf32>
  %n = cleave.random_normal {mean = 0.0 : f32, scale = 0.02 : f32, seed = 7 : i64} : tensor<3xf32>
  return %u, %n : tensor<4x2xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:[^:]+]]: tensor<8x64xf32>, %[[B:[^:]+]]: tensor<64x16xf32>, %[[BA:[^:]+]]: tensor<2x1x8x64xf32>, %[[BB:[^:]+]]: tensor<3x64x16xf32>, %[[V:[^:]+]]: tensor<64xf32>)
func.func @matmul(%a: tensor<8x64xf32>, %b: tensor<64x16xf32>, %ba: tensor<2x1x8x64xf32>,
                  %bb: tensor<3x64x16xf32>, %v: tensor<64xf32>) {
  // CHECK: cleave.matmul %[[A]], %[[B]] : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  // CHECK: cleave.matmul %[[BA]], %[[BB]] : (tensor<2x1x8x64xf32>, tensor<3x64x16xf32>) -> tensor<2x3x8x16xf32>
  // CHECK: cleave.matmul %[[V]], %[[B]] : (tensor<64xf32>, tensor<64x16xf32>) -> tensor<16xf32>
  // CHECK: cleave.matmul %[[A]], %[[V]] : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8xf32>
  // CHECK: cleave.matmul %[[V]], %[[V]] : (tensor<64xf32>, tensor<64xf32>) -> tensor<f32>
  // CHECK: cleave.matmul %[[V]], %[[BB]] : (tensor<64xf32>, tensor<3x64x16xf32>) -> tensor<3x16xf32>
  %0 = cleave.matmul %a, %b : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  %1 = cleave.matmul %ba, %bb
      : (tensor<2x1x8x64xf32>, tensor<3x64x16xf32>) -> tensor<2x3x8x16xf32>
  %2 = cleave.matmul %v, %b : (tensor<64xf32>, tensor<64x16xf32>) -> tensor<16xf32>
  %3 = cleave.matmul %a, %v : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8xf32>
  %4 = cleave.matmul %v, %v : (tensor<64xf32>, tensor<64xf32>) -> tensor<f32>
  %5 = cleave.matmul %v, %bb : (tensor<64xf32>, tensor<3x64x16xf32>) -> tensor<3x16xf32>
  return
}

// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<32x784xf32>, %[[W:[^:]+]]: tensor<128x784xf32>, %[[B:[^:]+]]: tensor<128xf32>, %[[XT:[^:]+]]: tensor<784x32xf32>, %[[C:[^:]+]]: tensor<32x1xf32>)
func.func @gemm(%x: tensor<32x784xf32>, %w: tensor<128x784xf32>, %b: tensor<128xf32>,
                %xt: tensor<784x32xf32>, %c: tensor<32x1xf32>) {
  // CHECK: cleave.gemm %[[X]], %[[W]], %[[B]]
  // CHECK-SAME: {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true}
  // CHECK-SAME: : (tensor<32x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<32x128xf32>
  // CHECK: cleave.gemm %[[XT]], %[[W]]
  // CHECK-SAME: {alpha = 2.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_a = true, trans_b = true}
  // CHECK-SAME: : (tensor<784x32xf32>, tensor<128x784xf32>) -> tensor<32x128xf32>
  // CHECK: cleave.gemm %[[X]], %[[XT]], %[[C]]
  // CHECK-SAME: {alpha = 1.000000e+00 : f32, beta = 5.000000e-01 : f32, trans_a = false, trans_b = false}
  // CHECK-SAME: : (tensor<32x784xf32>, tensor<784x32xf32>, tensor<32x1xf32>) -> tensor<32x32xf32>
  %0 = cleave.gemm %x, %w, %b
      {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
      : (tensor<32x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<32x128xf32>
  %1 = cleave.gemm %xt, %w
      {alpha = 2.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = true}
      : (tensor<784x32xf32>, tensor<128x784xf32>) -> tensor<32x128xf32>
  %2 = cleave.gemm %x, %xt, %c
      {alpha = 1.0 : f32, beta = 0.5 : f32, trans_a = false, trans_b = false}
      : (tensor<32x784xf32>, tensor<784x32xf32>, tensor<32x1xf32>) -> tensor<32x32xf32>
  return
}

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x10xf32>)
func.func @softmax(%x: tensor<4x10xf32>) {
  // CHECK: cleave.softmax %[[X]] {axis = 1 : i64} : tensor<4x10xf32>
  // CHECK: cleave.log_softmax %[[X]] {axis = 0 : i64} : tensor<4x10xf32>
  %0 = cleave.softmax %x {axis = 1 : i64} : tensor<4x10xf32>
  %1 = cleave.log_softmax %x {axis = 0 : i64} : tensor<4x10xf32>
  return
}

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x8x64xf32>, %[[G:[^:]+]]: tensor<64xf32>, %[[B:[^:]+]]: tensor<64xf32>, %[[G2:[^:]+]]: tensor<8x64xf32>)
func.func @layer_norm(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                      %g2: tensor<8x64xf32>) {
  // CHECK: cleave.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32}
  // CHECK-SAME: : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>)
  // CHECK-SAME: -> (tensor<2x8x64xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  // CHECK: cleave.layer_norm %[[X]], %[[G2]] {axis = 1 : i64, epsilon = 9.99999974E-6 : f32}
  // CHECK-SAME: : (tensor<2x8x64xf32>, tensor<8x64xf32>)
  // CHECK-SAME: -> (tensor<2x8x64xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  %y, %mean, %rstd = cleave.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<2x8x64xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  %y2, %mean2, %rstd2 = cleave.layer_norm %x, %g2 {axis = 1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x8x64xf32>, tensor<8x64xf32>)
        -> (tensor<2x8x64xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return
}

// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x16x12x12xf32>, %[[S:[^:]+]]: tensor<16xf32>, %[[B:[^:]+]]: tensor<16xf32>, %[[M:[^:]+]]: tensor<16xf32>, %[[V:[^:]+]]: tensor<16xf32>, %[[X2:[^:]+]]: tensor<4x16xf32>)
func.func @batch_norm(%x: tensor<8x16x12x12xf32>, %s: tensor<16xf32>, %b: tensor<16xf32>,
                      %m: tensor<16xf32>, %v: tensor<16xf32>, %x2: tensor<4x16xf32>) {
  // CHECK: cleave.batch_norm %[[X]], %[[S]], %[[B]], %[[M]], %[[V]]
  // CHECK-SAME: {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, training = true}
  // CHECK-SAME: -> (tensor<8x16x12x12xf32>, tensor<16xf32>, tensor<16xf32>)
  // CHECK: cleave.batch_norm %[[X2]], %[[S]], %[[B]], %[[M]], %[[V]]
  // CHECK-SAME: training = false
  // CHECK-SAME: -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %y, %rm, %rv = cleave.batch_norm %x, %s, %b, %m, %v
      {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true}
      : (tensor<8x16x12x12xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> (tensor<8x16x12x12xf32>, tensor<16xf32>, tensor<16xf32>)
  %y2, %rm2, %rv2 = cleave.batch_norm %x2, %s, %b, %m, %v
      {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = false}
      : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8x3xf32>, %[[I:[^:]+]]: tensor<4x8xi64>)
func.func @reduce(%x: tensor<4x8x3xf32>, %i: tensor<4x8xi64>) {
  // CHECK: cleave.reduce_sum %[[X]] {axes = array<i64: 1>, keepdims = false} : tensor<4x8x3xf32> -> tensor<4x3xf32>
  // CHECK: cleave.reduce_sum %[[X]] {axes = array<i64: 0, 2>, keepdims = true} : tensor<4x8x3xf32> -> tensor<1x8x1xf32>
  // CHECK: cleave.reduce_mean %[[X]] {axes = array<i64: 0, 1, 2>, keepdims = false} : tensor<4x8x3xf32> -> tensor<f32>
  // CHECK: cleave.reduce_mean %[[X]] {axes = array<i64: 2>, keepdims = true} : tensor<4x8x3xf32> -> tensor<4x8x1xf32>
  // CHECK: cleave.reduce_max %[[I]] {axes = array<i64: 1>, keepdims = true} : tensor<4x8xi64> -> tensor<4x1xi64>
  // CHECK: cleave.reduce_max %[[X]] {axes = array<i64>, keepdims = false} : tensor<4x8x3xf32> -> tensor<4x8x3xf32>
  %0 = cleave.reduce_sum %x {axes = array<i64: 1>, keepdims = false}
      : tensor<4x8x3xf32> -> tensor<4x3xf32>
  %1 = cleave.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = true}
      : tensor<4x8x3xf32> -> tensor<1x8x1xf32>
  %2 = cleave.reduce_mean %x {axes = array<i64: 0, 1, 2>, keepdims = false}
      : tensor<4x8x3xf32> -> tensor<f32>
  %3 = cleave.reduce_mean %x {axes = array<i64: 2>, keepdims = true}
      : tensor<4x8x3xf32> -> tensor<4x8x1xf32>
  %4 = cleave.reduce_max %i {axes = array<i64: 1>, keepdims = true}
      : tensor<4x8xi64> -> tensor<4x1xi64>
  // An empty axes list reduces nothing.
  %5 = cleave.reduce_max %x {axes = array<i64>, keepdims = false}
      : tensor<4x8x3xf32> -> tensor<4x8x3xf32>
  return
}

// CHECK-LABEL: func.func @data_movement
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x8x64xf32>, %[[T:[^:]+]]: tensor<2x8x4x16xf32>, %[[R:[^:]+]]: tensor<1x8xf32>)
func.func @data_movement(%x: tensor<2x8x64xf32>, %t: tensor<2x8x4x16xf32>, %r: tensor<1x8xf32>) {
  // CHECK: cleave.reshape %[[X]] : tensor<2x8x64xf32> -> tensor<16x64xf32>
  // CHECK: cleave.transpose %[[T]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  // CHECK: cleave.broadcast_to %[[R]] : tensor<1x8xf32> -> tensor<3x4x8xf32>
  %0 = cleave.reshape %x : tensor<2x8x64xf32> -> tensor<16x64xf32>
  %1 = cleave.transpose %t {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %2 = cleave.broadcast_to %r : tensor<1x8xf32> -> tensor<3x4x8xf32>
  return
}

// CHECK-LABEL: func.func @concat_split
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x3xf32>, %[[B:[^:]+]]: tensor<2x5xf32>, %[[QKV:[^:]+]]: tensor<2x8x192xf32>)
func.func @concat_split(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %qkv: tensor<2x8x192xf32>) {
  // CHECK: cleave.concat %[[A]], %[[B]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // CHECK: cleave.concat %[[A]] {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: cleave.split %[[QKV]] {axis = 2 : i64}
  // CHECK-SAME: : tensor<2x8x192xf32> -> tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
  // CHECK: cleave.split %[[QKV]] {axis = 1 : i64}
  // CHECK-SAME: : tensor<2x8x192xf32> -> tensor<2x3x192xf32>, tensor<2x5x192xf32>
  %0 = cleave.concat %a, %b {axis = 1 : i64}
      : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %1 = cleave.concat %a {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %q, %k, %v = cleave.split %qkv {axis = 2 : i64}
      : tensor<2x8x192xf32> -> tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
  %h0, %h1 = cleave.split %qkv {axis = 1 : i64}
      : tensor<2x8x192xf32> -> tensor<2x3x192xf32>, tensor<2x5x192xf32>
  return
}

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x10xf32>)
func.func @slice(%x: tensor<4x10xf32>) {
  // CHECK: cleave.slice %[[X]] {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>} : tensor<4x10xf32> -> tensor<4x4xf32>
  // CHECK: cleave.slice %[[X]] {offsets = array<i64: 3, 9>, strides = array<i64: -1, -3>} : tensor<4x10xf32> -> tensor<4x4xf32>
  // CHECK: cleave.slice %[[X]] {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<4x10xf32> -> tensor<0x10xf32>
  %0 = cleave.slice %x {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>}
      : tensor<4x10xf32> -> tensor<4x4xf32>
  // Negative strides walk backwards: rows 3, 2, 1, 0 and columns 9, 6, 3, 0.
  %1 = cleave.slice %x {offsets = array<i64: 3, 9>, strides = array<i64: -1, -3>}
      : tensor<4x10xf32> -> tensor<4x4xf32>
  // An empty result reads nothing.
  %2 = cleave.slice %x {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>}
      : tensor<4x10xf32> -> tensor<0x10xf32>
  return
}

// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[WTE:[^:]+]]: tensor<100x64xf32>, %[[IDS:[^:]+]]: tensor<2x8xi64>, %[[IDX:[^:]+]]: tensor<3xi32>, %[[S:[^:]+]]: tensor<i64>)
func.func @gather(%wte: tensor<100x64xf32>, %ids: tensor<2x8xi64>, %idx: tensor<3xi32>,
                  %s: tensor<i64>) {
  // CHECK: cleave.gather %[[WTE]], %[[IDS]] {axis = 0 : i64} : (tensor<100x64xf32>, tensor<2x8xi64>) -> tensor<2x8x64xf32>
  // CHECK: cleave.gather %[[WTE]], %[[IDX]] {axis = 1 : i64} : (tensor<100x64xf32>, tensor<3xi32>) -> tensor<100x3xf32>
  // CHECK: cleave.gather %[[WTE]], %[[S]] {axis = 0 : i64} : (tensor<100x64xf32>, tensor<i64>) -> tensor<64xf32>
  %0 = cleave.gather %wte, %ids {axis = 0 : i64}
      : (tensor<100x64xf32>, tensor<2x8xi64>) -> tensor<2x8x64xf32>
  %1 = cleave.gather %wte, %idx {axis = 1 : i64}
      : (tensor<100x64xf32>, tensor<3xi32>) -> tensor<100x3xf32>
  %2 = cleave.gather %wte, %s {axis = 0 : i64}
      : (tensor<100x64xf32>, tensor<i64>) -> tensor<64xf32>
  return
}

// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x1x28x28xf32>, %[[W:[^:]+]]: tensor<16x1x3x3xf32>, %[[B:[^:]+]]: tensor<16xf32>, %[[XG:[^:]+]]: tensor<2x8x10x12xf32>, %[[WG:[^:]+]]: tensor<8x2x3x3xf32>, %[[X1:[^:]+]]: tensor<1x3x20xf32>, %[[W1:[^:]+]]: tensor<4x3x5xf32>)
func.func @conv(%x: tensor<8x1x28x28xf32>, %w: tensor<16x1x3x3xf32>, %b: tensor<16xf32>,
                %xg: tensor<2x8x10x12xf32>, %wg: tensor<8x2x3x3xf32>,
                %x1: tensor<1x3x20xf32>, %w1: tensor<4x3x5xf32>) {
  // CHECK: cleave.conv %[[X]], %[[W]], %[[B]]
  // CHECK-SAME: {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
  // CHECK-SAME: -> tensor<8x16x28x28xf32>
  // CHECK: cleave.conv %[[XG]], %[[WG]]
  // CHECK-SAME: {dilations = array<i64: 2, 1>, group = 4 : i64, pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>}
  // CHECK-SAME: -> tensor<2x8x5x4xf32>
  // CHECK: cleave.conv %[[X1]], %[[W1]]
  // CHECK-SAME: {dilations = array<i64: 1>, group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1>}
  // CHECK-SAME: -> tensor<1x4x16xf32>
  %0 = cleave.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
      pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<8x16x28x28xf32>
  // Rows: (10 + 1 + 2 - 2 * 2 - 1) / 2 + 1 = 5; columns: (12 + 1 - 2 - 1) / 3 + 1 = 4.
  %1 = cleave.conv %xg, %wg {dilations = array<i64: 2, 1>, group = 4 : i64,
      pads = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 3>}
      : (tensor<2x8x10x12xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x5x4xf32>
  %2 = cleave.conv %x1, %w1 {dilations = array<i64: 1>, group = 1 : i64,
      pads = array<i64: 0, 0>, strides = array<i64: 1>}
      : (tensor<1x3x20xf32>, tensor<4x3x5xf32>) -> tensor<1x4x16xf32>
  return
}

// CHECK-LABEL: func.func @pool
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x16x28x28xf32>, %[[Y:[^:]+]]: tensor<1x2x5x5xf32>)
func.func @pool(%x: tensor<8x16x28x28xf32>, %y: tensor<1x2x5x5xf32>) {
  // CHECK: cleave.max_pool %[[X]]
  // CHECK-SAME: {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
  // CHECK-SAME: : tensor<8x16x28x28xf32> -> tensor<8x16x14x14xf32>
  // CHECK: cleave.max_pool %[[Y]]
  // CHECK-SAME: {ceil_mode = true,
  // CHECK-SAME: : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  // CHECK: cleave.avg_pool %[[Y]]
  // CHECK-SAME: {ceil_mode = false, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
  // CHECK-SAME: : tensor<1x2x5x5xf32> -> tensor<1x2x5x5xf32>
  %0 = cleave.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>,
      kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : tensor<8x16x28x28xf32> -> tensor<8x16x14x14xf32>
  // ceil_mode rounds (5 - 2) / 2 + 1 up to 3.
  %1 = cleave.max_pool %y {ceil_mode = true, dilations = array<i64: 1, 1>,
      kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
      : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  %2 = cleave.avg_pool %y {ceil_mode = false, count_include_pad = true,
      kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
      : tensor<1x2x5x5xf32> -> tensor<1x2x5x5xf32>
  return
}

// CHECK-LABEL: func.func @losses
// CHECK-SAME: (%[[LOGITS:[^:]+]]: tensor<32x10xf32>, %[[LABELS:[^:]+]]: tensor<32xi64>, %[[W:[^:]+]]: tensor<10xf32>, %[[S4:[^:]+]]: tensor<2x5x3x4xf32>, %[[L4:[^:]+]]: tensor<2x3x4xi32>)
func.func @losses(%logits: tensor<32x10xf32>, %labels: tensor<32xi64>, %w: tensor<10xf32>,
                  %s4: tensor<2x5x3x4xf32>, %l4: tensor<2x3x4xi32>) {
  // CHECK: %{{.*}}, %[[LOGP:.*]] = cleave.softmax_cross_entropy %[[LOGITS]], %[[LABELS]] {reduction = #cleave.reduction<mean>}
  // CHECK-SAME: : (tensor<32x10xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<32x10xf32>)
  // CHECK: cleave.softmax_cross_entropy %[[LOGITS]], %[[LABELS]], %[[W]] {ignore_index = -100 : i64, reduction = #cleave.reduction<sum>}
  // CHECK-SAME: : (tensor<32x10xf32>, tensor<32xi64>, tensor<10xf32>) -> (tensor<f32>, tensor<32x10xf32>)
  // CHECK: cleave.softmax_cross_entropy %[[S4]], %[[L4]] {reduction = #cleave.reduction<none>}
  // CHECK-SAME: : (tensor<2x5x3x4xf32>, tensor<2x3x4xi32>) -> (tensor<2x3x4xf32>, tensor<2x5x3x4xf32>)
  // CHECK: cleave.nll_loss %[[LOGP]], %[[LABELS]] {reduction = #cleave.reduction<mean>}
  // CHECK-SAME: : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  // CHECK: cleave.nll_loss %[[LOGP]], %[[LABELS]], %[[W]] {ignore_index = 0 : i64, reduction = #cleave.reduction<none>}
  // CHECK-SAME: : (tensor<32x10xf32>, tensor<32xi64>, tensor<10xf32>) -> tensor<32xf32>
  %loss, %logp = cleave.softmax_cross_entropy %logits, %labels
      {reduction = #cleave.reduction<mean>}
      : (tensor<32x10xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<32x10xf32>)
  %loss2, %logp2 = cleave.softmax_cross_entropy %logits, %labels, %w
      {ignore_index = -100 : i64, reduction = #cleave.reduction<sum>}
      : (tensor<32x10xf32>, tensor<32xi64>, tensor<10xf32>) -> (tensor<f32>, tensor<32x10xf32>)
  %loss3, %logp3 = cleave.softmax_cross_entropy %s4, %l4 {reduction = #cleave.reduction<none>}
      : (tensor<2x5x3x4xf32>, tensor<2x3x4xi32>) -> (tensor<2x3x4xf32>, tensor<2x5x3x4xf32>)
  %nll = cleave.nll_loss %logp, %labels {reduction = #cleave.reduction<mean>}
      : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  %nll2 = cleave.nll_loss %logp, %labels, %w
      {ignore_index = 0 : i64, reduction = #cleave.reduction<none>}
      : (tensor<32x10xf32>, tensor<32xi64>, tensor<10xf32>) -> tensor<32xf32>
  return
}

// The model a cleave.gradient refers to.
// CHECK-LABEL: func.func @model
// CHECK-SAME: tensor<4x2xf32> {cleave.param = "W"}
// CHECK-SAME: tensor<2xf32> {cleave.param = "B"}
// CHECK-SAME: tensor<8x4xf32> {cleave.input = "X"}
// CHECK-SAME: -> (tensor<f32> {cleave.output = "loss"})
func.func @model(%w: tensor<4x2xf32> {cleave.param = "W"}, %b: tensor<2xf32> {cleave.param = "B"},
                 %x: tensor<8x4xf32> {cleave.input = "X"})
    -> (tensor<f32> {cleave.output = "loss"}) {
  %0 = cleave.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %1 = cleave.add %0, %b : (tensor<8x2xf32>, tensor<2xf32>) -> tensor<8x2xf32>
  %2 = cleave.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false}
      : tensor<8x2xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// CHECK-LABEL: func.func @gradient
// CHECK-SAME: (%[[W:[^:]+]]: tensor<4x2xf32>, %[[B:[^:]+]]: tensor<2xf32>, %[[X:[^:]+]]: tensor<8x4xf32>)
func.func @gradient(%w: tensor<4x2xf32>, %b: tensor<2xf32>, %x: tensor<8x4xf32>) {
  // CHECK: cleave.gradient @model(%[[W]], %[[B]], %[[X]]) {xs = ["W", "B"], y = "loss", zs = ["X"]}
  // CHECK-SAME: : (tensor<4x2xf32>, tensor<2xf32>, tensor<8x4xf32>) -> (tensor<4x2xf32>, tensor<2xf32>)
  // CHECK: cleave.gradient @model(%[[X]], %[[W]], %[[B]]) {xs = ["X"], y = "loss", zs = ["W", "B"]}
  // CHECK-SAME: : (tensor<8x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<8x4xf32>
  %dw, %db = cleave.gradient @model(%w, %b, %x) {xs = ["W", "B"], y = "loss", zs = ["X"]}
      : (tensor<4x2xf32>, tensor<2xf32>, tensor<8x4xf32>) -> (tensor<4x2xf32>, tensor<2xf32>)
  // A data input may be differentiated too.
  %dx = cleave.gradient @model(%x, %w, %b) {xs = ["X"], y = "loss", zs = ["W", "B"]}
      : (tensor<8x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<8x4xf32>
  return
}

// CHECK-LABEL: func.func @optimizers
// CHECK-SAME: (%[[LR:[^:]+]]: tensor<f32>, %[[T:[^:]+]]: tensor<i64>, %[[W:[^:]+]]: tensor<4xf32>, %[[GW:[^:]+]]: tensor<4xf32>, %[[VW:[^:]+]]: tensor<4xf32>, %[[B:[^:]+]]: tensor<2x3xf32>, %[[GB:[^:]+]]: tensor<2x3xf32>, %[[VB:[^:]+]]: tensor<2x3xf32>, %[[H:[^:]+]]: tensor<4xf32>)
func.func @optimizers(%lr: tensor<f32>, %t: tensor<i64>,
                      %w: tensor<4xf32>, %gw: tensor<4xf32>, %vw: tensor<4xf32>,
                      %b: tensor<2x3xf32>, %gb: tensor<2x3xf32>, %vb: tensor<2x3xf32>,
                      %h: tensor<4xf32>) {
  // CHECK: cleave.momentum %[[LR]], %[[T]] params(%[[W]], %[[B]]) grads(%[[GW]], %[[GB]]) velocities(%[[VW]], %[[VB]])
  // CHECK-SAME: {alpha = 0.899999976 : f32, beta = 1.000000e+00 : f32, mode = #cleave.momentum_mode<standard>, norm_coefficient = 0.000000e+00 : f32{{.*}}}
  // CHECK-SAME: : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>)
  // CHECK-SAME: -> (tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>)
  %0:4 = cleave.momentum %lr, %t params(%w, %b) grads(%gw, %gb) velocities(%vw, %vb)
      {alpha = 0.9 : f32, beta = 1.0 : f32, mode = #cleave.momentum_mode<standard>,
       norm_coefficient = 0.0 : f32}
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>,
         tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>)
        -> (tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>)
  // CHECK: cleave.momentum %[[LR]], %[[T]] params(%[[W]]) grads(%[[GW]]) velocities(%[[VW]])
  // CHECK-SAME: mode = #cleave.momentum_mode<nesterov>, norm_coefficient = 0.00999999977 : f32
  // CHECK-SAME: -> (tensor<4xf32>, tensor<4xf32>)
  %1:2 = cleave.momentum %lr, %t params(%w) grads(%gw) velocities(%vw)
      {alpha = 0.9 : f32, beta = 0.5 : f32, mode = #cleave.momentum_mode<nesterov>,
       norm_coefficient = 0.01 : f32}
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
        -> (tensor<4xf32>, tensor<4xf32>)
  // CHECK: cleave.adam %[[LR]], %[[T]] params(%[[W]]) grads(%[[GW]]) first_moments(%[[VW]]) second_moments(%[[H]])
  // CHECK-SAME: {alpha = 0.899999976 : f32, beta = 9.990000e-01 : f32, epsilon = 9.99999993E-9 : f32, norm_coefficient = 0.000000e+00 : f32, norm_coefficient_post = 0.000000e+00 : f32}
  // CHECK-SAME: -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %2:3 = cleave.adam %lr, %t params(%w) grads(%gw) first_moments(%vw) second_moments(%h)
      {alpha = 0.9 : f32, beta = 0.999 : f32, epsilon = 1.0e-8 : f32,
       norm_coefficient = 0.0 : f32, norm_coefficient_post = 0.0 : f32}
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
        -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: cleave.adagrad %[[LR]], %[[T]] params(%[[W]], %[[B]]) grads(%[[GW]], %[[GB]]) accumulators(%[[H]], %[[VB]])
  // CHECK-SAME: {decay_factor = 1.000000e-01 : f32, epsilon = 9.99999974E-6 : f32, norm_coefficient = 1.000000e-03 : f32}
  // CHECK-SAME: -> (tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>)
  %3:4 = cleave.adagrad %lr, %t params(%w, %b) grads(%gw, %gb) accumulators(%h, %vb)
      {decay_factor = 0.1 : f32, epsilon = 1.0e-5 : f32, norm_coefficient = 0.001 : f32}
      : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>,
         tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>)
        -> (tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>)
  return
}
