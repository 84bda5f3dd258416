// RUN: cleave-opt %s --split-input-file --cleave-fold-transposes | FileCheck %s

// Linear layers become 2-d GEMMs that read transposed operands through their
// trans flags; the weight transposes go.

// The example of Passes.td: PyTorch's Linear on [batch, sequence, features]
// (MatMul of the transposed weight, then the bias Add) is one GEMM on the
// flattened rows, the bias its C.
// CHECK-LABEL: func.func @linear_3d
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x32xf32>, %[[W:[^:]+]]: tensor<96x32xf32>, %[[B:[^:]+]]: tensor<96xf32>)
func.func @linear_3d(%x: tensor<2x16x32xf32>, %w: tensor<96x32xf32>,
                     %b: tensor<96xf32>) -> tensor<2x16x96xf32> {
  // CHECK-NOT: cleave.transpose
  // CHECK: %[[X2:.*]] = cleave.reshape %[[X]] : tensor<2x16x32xf32> -> tensor<32x32xf32>
  // CHECK: %[[Y2:.*]] = cleave.gemm %[[X2]], %[[W]], %[[B]]
  // CHECK-SAME: beta = 1.000000e+00 : f32, trans_a = false, trans_b = true
  // CHECK-SAME: (tensor<32x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<32x96xf32>
  // CHECK: %[[Y:.*]] = cleave.reshape %[[Y2]] : tensor<32x96xf32> -> tensor<2x16x96xf32>
  // CHECK-NOT: cleave.add
  // CHECK: return %[[Y]]
  %wt = cleave.transpose %w {permutation = array<i64: 1, 0>}
      : tensor<96x32xf32> -> tensor<32x96xf32>
  %y = cleave.matmul %x, %wt
      : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  %z = cleave.add %b, %y
      : (tensor<96xf32>, tensor<2x16x96xf32>) -> tensor<2x16x96xf32>
  return %z : tensor<2x16x96xf32>
}

// -----

// A weight stored [K, N] (no transpose) on 2-d activations: a plain GEMM;
// the bias on the right of the add, too.
// CHECK-LABEL: func.func @linear_2d_untransposed
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x4xf32>, %[[W:[^:]+]]: tensor<4x3xf32>, %[[B:[^:]+]]: tensor<3xf32>)
func.func @linear_2d_untransposed(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>,
                                  %b: tensor<3xf32>) -> tensor<8x3xf32> {
  // CHECK-NOT: cleave.reshape
  // CHECK: %[[Y:.*]] = cleave.gemm %[[X]], %[[W]], %[[B]]
  // CHECK-SAME: trans_a = false, trans_b = false
  // CHECK-NEXT: return %[[Y]]
  %y = cleave.matmul %x, %w
      : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %z = cleave.add %y, %b
      : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  return %z : tensor<8x3xf32>
}

// -----

// A product read twice keeps its add: the GEMM has no C and beta 0. The
// transpose that something else reads stays.
// CHECK-LABEL: func.func @shared_product
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x5x4xf32>, %[[W:[^:]+]]: tensor<3x4xf32>, %[[B:[^:]+]]: tensor<3xf32>)
func.func @shared_product(%x: tensor<2x5x4xf32>, %w: tensor<3x4xf32>,
                          %b: tensor<3xf32>)
    -> (tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<4x3xf32>) {
  // CHECK: %[[WT:.*]] = cleave.transpose %[[W]]
  // CHECK: %[[X2:.*]] = cleave.reshape %[[X]] : tensor<2x5x4xf32> -> tensor<10x4xf32>
  // CHECK: %[[Y2:.*]] = cleave.gemm %[[X2]], %[[W]]
  // CHECK-SAME: beta = 0.000000e+00 : f32, trans_a = false, trans_b = true
  // CHECK-SAME: (tensor<10x4xf32>, tensor<3x4xf32>) -> tensor<10x3xf32>
  // CHECK: %[[Y:.*]] = cleave.reshape %[[Y2]] : tensor<10x3xf32> -> tensor<2x5x3xf32>
  // CHECK: %[[Z:.*]] = cleave.add %[[B]], %[[Y]]
  // CHECK: return %[[Z]], %[[Y]], %[[WT]]
  %wt = cleave.transpose %w {permutation = array<i64: 1, 0>}
      : tensor<3x4xf32> -> tensor<4x3xf32>
  %y = cleave.matmul %x, %wt
      : (tensor<2x5x4xf32>, tensor<4x3xf32>) -> tensor<2x5x3xf32>
  %z = cleave.add %b, %y
      : (tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  return %z, %y, %wt : tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<4x3xf32>
}

// -----

// Transposes of GEMM operands flip the operand's flag (here both, and one
// that was set).
// CHECK-LABEL: func.func @gemm_operands
// CHECK-SAME: (%[[A:[^:]+]]: tensor<4x8xf32>, %[[B:[^:]+]]: tensor<3x4xf32>)
func.func @gemm_operands(%a: tensor<4x8xf32>, %b: tensor<3x4xf32>)
    -> tensor<8x3xf32> {
  // CHECK-NOT: cleave.transpose
  // CHECK: %[[Y:.*]] = cleave.gemm %[[A]], %[[B]]
  // CHECK-SAME: trans_a = true, trans_b = true
  // CHECK-SAME: (tensor<4x8xf32>, tensor<3x4xf32>) -> tensor<8x3xf32>
  // CHECK-NEXT: return %[[Y]]
  %at = cleave.transpose %a {permutation = array<i64: 1, 0>}
      : tensor<4x8xf32> -> tensor<8x4xf32>
  %bt = cleave.transpose %b {permutation = array<i64: 1, 0>}
      : tensor<3x4xf32> -> tensor<4x3xf32>
  %bb = cleave.transpose %bt {permutation = array<i64: 1, 0>}
      : tensor<4x3xf32> -> tensor<3x4xf32>
  %y = cleave.gemm %at, %bb
      {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
      : (tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// Batched products between activations (attention's) and integer products
// stay matmuls.
// CHECK-LABEL: func.func @left_alone
func.func @left_alone(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x16x8xf32>,
                      %i: tensor<3x4xi32>, %j: tensor<4x5xi32>)
    -> (tensor<2x4x8x8xf32>, tensor<3x5xi32>) {
  // CHECK: cleave.matmul {{.*}} -> tensor<2x4x8x8xf32>
  // CHECK: cleave.matmul {{.*}} -> tensor<3x5xi32>
  // CHECK-NOT: cleave.gemm
  %s = cleave.matmul %q, %k
      : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %p = cleave.matmul %i, %j
      : (tensor<3x4xi32>, tensor<4x5xi32>) -> tensor<3x5xi32>
  return %s, %p : tensor<2x4x8x8xf32>, tensor<3x5xi32>
}

// -----

// A transpose of a transpose (the backward pass's transpose of a
// transposed value) reads the original: one transpose, or none when the
// two cancel.
// CHECK-LABEL: func.func @transpose_chains
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x8x4x3xf32>)
func.func @transpose_chains(%x: tensor<2x8x4x3xf32>)
    -> (tensor<2x4x3x8xf32>, tensor<2x8x4x3xf32>, tensor<2x4x8x3xf32>) {
  // CHECK: %[[Q:.*]] = cleave.transpose %[[X]] {permutation = array<i64: 0, 2, 1, 3>}
  // CHECK: %[[QT:.*]] = cleave.transpose %[[X]] {permutation = array<i64: 0, 2, 3, 1>}
  // CHECK-SAME: -> tensor<2x4x3x8xf32>
  // CHECK-NEXT: return %[[QT]], %[[X]], %[[Q]]
  %q = cleave.transpose %x {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<2x8x4x3xf32> -> tensor<2x4x8x3xf32>
  %qt = cleave.transpose %q {permutation = array<i64: 0, 1, 3, 2>}
      : tensor<2x4x8x3xf32> -> tensor<2x4x3x8xf32>
  %back = cleave.transpose %q {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<2x4x8x3xf32> -> tensor<2x8x4x3xf32>
  return %qt, %back, %q
      : tensor<2x4x3x8xf32>, tensor<2x8x4x3xf32>, tensor<2x4x8x3xf32>
}
