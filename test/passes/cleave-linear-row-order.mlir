// RUN: cleave-opt %s --split-input-file --cleave-linear-row-order | FileCheck %s

// A product by a weight takes its rows in the order the transpose making
// them read them from (nn.MultiheadAttention's, batch_first): batch-major,
// so that a batch split passes through it (test/zoo/transformer_pre_norm.test
// checks that data parallelism then gathers nothing).

// The in-projection: [B, S, E] transposed to [S, B, E], then the product
// and its bias. The rows are taken as x holds them; the result (after the
// bias) is transposed to [S, B, N].
// CHECK-LABEL: func.func @in_projection
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x6x8xf32>, %[[W:[^:]+]]: tensor<8x24xf32>, %[[B:[^:]+]]: tensor<24xf32>)
func.func @in_projection(%x: tensor<4x6x8xf32>, %w: tensor<8x24xf32>,
                         %b: tensor<24xf32>) -> tensor<6x4x24xf32> {
  // CHECK: %[[ROWS:.*]] = cleave.reshape %[[X]] : tensor<4x6x8xf32> -> tensor<24x8xf32>
  // CHECK: %[[P:.*]] = cleave.matmul %[[ROWS]], %[[W]] : (tensor<24x8xf32>, tensor<8x24xf32>) -> tensor<24x24xf32>
  // CHECK: %[[PB:.*]] = cleave.add %[[P]], %[[B]] : (tensor<24x24xf32>, tensor<24xf32>) -> tensor<24x24xf32>
  // CHECK: %[[R:.*]] = cleave.reshape %[[PB]] : tensor<24x24xf32> -> tensor<4x6x24xf32>
  // CHECK: %[[T:.*]] = cleave.transpose %[[R]] {permutation = array<i64: 1, 0, 2>} : tensor<4x6x24xf32> -> tensor<6x4x24xf32>
  // CHECK: return %[[T]]
  %t = cleave.transpose %x {permutation = array<i64: 1, 0, 2>}
      : tensor<4x6x8xf32> -> tensor<6x4x8xf32>
  %y = cleave.matmul %t, %w
      : (tensor<6x4x8xf32>, tensor<8x24xf32>) -> tensor<6x4x24xf32>
  %z = cleave.add %b, %y
      : (tensor<24xf32>, tensor<6x4x24xf32>) -> tensor<6x4x24xf32>
  return %z : tensor<6x4x24xf32>
}

// -----

// The out-projection: heads [B * H, S, d] transposed to [S, B * H, d] and
// viewed as [S * B, H * d], a gemm, the view [S, B, N] and the model's
// transpose back to [B, S, N]. The rows come from [B, H, S, d] with the
// heads merged into the columns ([B, S, H, d]); the transpose put back
// after the gemm meets the model's.
// CHECK-LABEL: func.func @out_projection
// CHECK-SAME: (%[[Y:[^:]+]]: tensor<8x6x3xf32>, %[[W:[^:]+]]: tensor<5x6xf32>, %[[B:[^:]+]]: tensor<5xf32>)
func.func @out_projection(%y: tensor<8x6x3xf32>, %w: tensor<5x6xf32>,
                          %b: tensor<5xf32>) -> tensor<4x6x5xf32> {
  // CHECK: %[[HEADS:.*]] = cleave.reshape %[[Y]] : tensor<8x6x3xf32> -> tensor<4x2x6x3xf32>
  // CHECK: %[[MERGED:.*]] = cleave.transpose %[[HEADS]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<4x2x6x3xf32> -> tensor<4x6x2x3xf32>
  // CHECK: %[[ROWS:.*]] = cleave.reshape %[[MERGED]] : tensor<4x6x2x3xf32> -> tensor<24x6xf32>
  // CHECK: %[[P:.*]] = cleave.gemm %[[ROWS]], %[[W]], %[[B]]
  // CHECK-SAME: -> tensor<24x5xf32>
  // CHECK: %[[R:.*]] = cleave.reshape %[[P]] : tensor<24x5xf32> -> tensor<4x6x5xf32>
  // CHECK: %[[T:.*]] = cleave.transpose %[[R]] {permutation = array<i64: 1, 0, 2>} : tensor<4x6x5xf32> -> tensor<6x4x5xf32>
  // CHECK: %[[BACK:.*]] = cleave.transpose %[[T]] {permutation = array<i64: 1, 0, 2>} : tensor<6x4x5xf32> -> tensor<4x6x5xf32>
  // CHECK: return %[[BACK]]
  %t = cleave.transpose %y {permutation = array<i64: 1, 0, 2>}
      : tensor<8x6x3xf32> -> tensor<6x8x3xf32>
  %rows = cleave.reshape %t : tensor<6x8x3xf32> -> tensor<24x6xf32>
  %p = cleave.gemm %rows, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32,
                                  trans_a = false, trans_b = true}
      : (tensor<24x6xf32>, tensor<5x6xf32>, tensor<5xf32>) -> tensor<24x5xf32>
  %v = cleave.reshape %p : tensor<24x5xf32> -> tensor<6x4x5xf32>
  %back = cleave.transpose %v {permutation = array<i64: 1, 0, 2>}
      : tensor<6x4x5xf32> -> tensor<4x6x5xf32>
  return %back : tensor<4x6x5xf32>
}

// -----

// Rows already in the transpose's input's order (only the columns move),
// a gemm reading A transposed, and a C of one entry per row: unchanged.
// CHECK-LABEL: func.func @unchanged
// CHECK: cleave.transpose %{{.*}} {permutation = array<i64: 0, 2, 1>}
// CHECK: cleave.matmul
// CHECK: cleave.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>}
// CHECK: cleave.gemm %{{.*}} trans_a = true
// CHECK: cleave.transpose %{{.*}} {permutation = array<i64: 1, 0>}
// CHECK: cleave.gemm
// CHECK-NOT: cleave.transpose
func.func @unchanged(%x: tensor<4x8x6xf32>, %w: tensor<8x5xf32>,
                     %z: tensor<6x4x8xf32>, %v: tensor<24x5xf32>,
                     %c: tensor<8x8xf32>)
    -> (tensor<4x6x5xf32>, tensor<8x5xf32>, tensor<8x8xf32>) {
  %t = cleave.transpose %x {permutation = array<i64: 0, 2, 1>}
      : tensor<4x8x6xf32> -> tensor<4x6x8xf32>
  %y = cleave.matmul %t, %w
      : (tensor<4x6x8xf32>, tensor<8x5xf32>) -> tensor<4x6x5xf32>
  %u = cleave.transpose %z {permutation = array<i64: 1, 0, 2>}
      : tensor<6x4x8xf32> -> tensor<4x6x8xf32>
  %rows = cleave.reshape %u : tensor<4x6x8xf32> -> tensor<24x8xf32>
  %g = cleave.gemm %rows, %v {alpha = 1.0 : f32, beta = 0.0 : f32,
                              trans_a = true, trans_b = false}
      : (tensor<24x8xf32>, tensor<24x5xf32>) -> tensor<8x5xf32>
  %s = cleave.transpose %w {permutation = array<i64: 1, 0>}
      : tensor<8x5xf32> -> tensor<5x8xf32>
  %k = cleave.reshape %s : tensor<5x8xf32> -> tensor<8x5xf32>
  %h = cleave.gemm %k, %w, %c {alpha = 1.0 : f32, beta = 1.0 : f32,
                               trans_a = false, trans_b = true}
      : (tensor<8x5xf32>, tensor<8x5xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %y, %g, %h : tensor<4x6x5xf32>, tensor<8x5xf32>, tensor<8x8xf32>
}
