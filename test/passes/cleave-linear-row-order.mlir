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

// -----

// A sequence-first model (nn.TransformerEncoder, batch_first=False): the
// importer takes the tokens batch-first ([B, S], the data input) and
// transposes them to the model's [S, B]. The batch is followed from the
// input through the embedding's gather and the add of a position table to
// [S, B, E]; the head's rows and the loss's rows are taken batch first
// (the cross-entropy's sum does not depend on their order).
// CHECK-LABEL: func.func @sequence_first
// CHECK-SAME: (%[[IDS:[^:]+]]: tensor<4x6xi64> {cleave.input = "src"}, %[[LABELS:[^:]+]]: tensor<4x6xi64> {cleave.input = "targets"}
func.func @sequence_first(%ids: tensor<4x6xi64> {cleave.input = "src"},
                          %labels: tensor<4x6xi64> {cleave.input = "targets"},
                          %table: tensor<10x8xf32>, %pos: tensor<6x1x8xf32>,
                          %w: tensor<8x10xf32>, %b: tensor<10xf32>)
    -> tensor<f32> {
  // CHECK: %[[S:.*]] = cleave.transpose %[[IDS]] {permutation = array<i64: 1, 0>} : tensor<4x6xi64> -> tensor<6x4xi64>
  // CHECK: %[[L:.*]] = cleave.transpose %[[LABELS]] {permutation = array<i64: 1, 0>} : tensor<4x6xi64> -> tensor<6x4xi64>
  // CHECK: %[[E:.*]] = cleave.gather %{{.*}}, %[[S]]
  // CHECK: %[[H:.*]] = cleave.add %[[E]]
  // CHECK: %[[HB:.*]] = cleave.transpose %[[H]] {permutation = array<i64: 1, 0, 2>} : tensor<6x4x8xf32> -> tensor<4x6x8xf32>
  // CHECK: %[[ROWS:.*]] = cleave.reshape %[[HB]] : tensor<4x6x8xf32> -> tensor<24x8xf32>
  // CHECK: %[[P:.*]] = cleave.matmul %[[ROWS]]
  // CHECK: %[[PB:.*]] = cleave.add %[[P]]
  // CHECK: %[[PR:.*]] = cleave.reshape %[[PB]] : tensor<24x10xf32> -> tensor<4x6x10xf32>
  // CHECK: %[[PS:.*]] = cleave.transpose %[[PR]] {permutation = array<i64: 1, 0, 2>} : tensor<4x6x10xf32> -> tensor<6x4x10xf32>
  // CHECK: %[[SB:.*]] = cleave.transpose %[[PS]] {permutation = array<i64: 1, 0, 2>} : tensor<6x4x10xf32> -> tensor<4x6x10xf32>
  // CHECK: %[[SROWS:.*]] = cleave.reshape %[[SB]] : tensor<4x6x10xf32> -> tensor<24x10xf32>
  // CHECK: %[[LB:.*]] = cleave.transpose %[[L]] {permutation = array<i64: 1, 0>} : tensor<6x4xi64> -> tensor<4x6xi64>
  // CHECK: %[[LROWS:.*]] = cleave.reshape %[[LB]] : tensor<4x6xi64> -> tensor<24xi64>
  // CHECK: cleave.softmax_cross_entropy %[[SROWS]], %[[LROWS]]
  %s = cleave.transpose %ids {permutation = array<i64: 1, 0>}
      : tensor<4x6xi64> -> tensor<6x4xi64>
  %l = cleave.transpose %labels {permutation = array<i64: 1, 0>}
      : tensor<4x6xi64> -> tensor<6x4xi64>
  %e = cleave.gather %table, %s {axis = 0 : i64}
      : (tensor<10x8xf32>, tensor<6x4xi64>) -> tensor<6x4x8xf32>
  %h = cleave.add %e, %pos
      : (tensor<6x4x8xf32>, tensor<6x1x8xf32>) -> tensor<6x4x8xf32>
  %y = cleave.matmul %h, %w
      : (tensor<6x4x8xf32>, tensor<8x10xf32>) -> tensor<6x4x10xf32>
  %z = cleave.add %y, %b
      : (tensor<6x4x10xf32>, tensor<10xf32>) -> tensor<6x4x10xf32>
  %scores = cleave.reshape %z : tensor<6x4x10xf32> -> tensor<24x10xf32>
  %flat = cleave.reshape %l : tensor<6x4xi64> -> tensor<24xi64>
  %loss, %logp = cleave.softmax_cross_entropy %scores, %flat
      {reduction = #cleave.reduction<mean>}
      : (tensor<24x10xf32>, tensor<24xi64>) -> (tensor<f32>, tensor<24x10xf32>)
  return %loss : tensor<f32>
}
