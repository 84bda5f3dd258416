// RUN: cleave-opt %s --split-input-file --cleave-propagate-sharding | FileCheck %s
// RUN: cleave-opt %s --split-input-file --cleave-propagate-sharding=report=true -verify-diagnostics -o /dev/null

// The example of Passes.td: a batch split over dp reaches the gemm's rows;
// the weight, which nothing splits, stays replicated, and the result leaves
// whole through a reshard.
// CHECK-LABEL: func.func @data_parallel
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>},
// CHECK-SAME: %[[W:[^:]+]]: tensor<3x4xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<{{\[\[}}], []]>})
// CHECK-SAME: -> (tensor<8x3xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}], []]>})
// CHECK: %[[Y:.*]] = cleave.gemm %[[X]], %[[W]]
// CHECK-SAME: cleave.sharding = [#cleave.sharding<{{\[\[}}dp], []]>]
// CHECK: %[[WHOLE:.*]] = cleave.reshard %[[Y]] to <{{\[\[}}], []]> {cleave.sharding = [#cleave.sharding<{{\[\[}}], []]>]} : tensor<8x3xf32>
// CHECK: return %[[WHOLE]]
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @data_parallel(%x: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>},
                           %w: tensor<3x4xf32> {cleave.param = "w"}) -> tensor<8x3xf32> {
    %0 = cleave.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<8x3xf32>
    // expected-remark @+1 {{resharding the result of cleave.gemm from #cleave.sharding<[[dp], []]> to #cleave.sharding<[[], []]>}}
    return %0 : tensor<8x3xf32>
  }
}

// -----

// Lower cleave.priority is stronger: 'w' (default 0) splits the gemm's
// columns over dp, so 'x' (2) is resharded to replicated. The argument
// keeps its own sharding; cleave.priority is consumed.
// CHECK-LABEL: func.func @priority
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>},
// CHECK-SAME: %[[W:[^:]+]]: tensor<6x4xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>})
// CHECK-NOT: cleave.priority
// CHECK: %[[XR:.*]] = cleave.reshard %[[X]] to <{{\[\[}}], []]>
// CHECK: %[[Y:.*]] = cleave.gemm %[[XR]], %[[W]]
// CHECK-SAME: cleave.sharding = [#cleave.sharding<{{\[\[}}], [dp]]>]
// CHECK: %[[WHOLE:.*]] = cleave.reshard %[[Y]] to <{{\[\[}}], []]>
// CHECK: return %[[WHOLE]]
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @priority(%x: tensor<8x4xf32> {cleave.input = "x", cleave.priority = 2 : i64, cleave.sharding = #cleave.sharding<[[dp], []]>},
                      %w: tensor<6x4xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<[[dp], []]>}) -> tensor<8x6xf32> {
    // expected-remark @+1 {{resharding 'x' from #cleave.sharding<[[dp], []]> to #cleave.sharding<[[], []]>}}
    %0 = cleave.gemm %x, %w {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<6x4xf32>) -> tensor<8x6xf32>
    // expected-remark @+1 {{resharding the result of cleave.gemm from #cleave.sharding<[[], [dp]]> to #cleave.sharding<[[], []]>}}
    return %0 : tensor<8x6xf32>
  }
}

// -----

// A Megatron pair on a 2-D mesh: fc1 split by output rows over tp, fc2 by
// input columns, the batch over dp. The split reaches b1 and the hidden
// activation. fc2's contraction is split, so its bias is split off the gemm
// (beta = 0.5 becomes a mul) and added once, after the sum.
// CHECK-LABEL: func.func @megatron
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x6xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>},
// CHECK-SAME: %[[W1:[^:]+]]: tensor<4x6xf32> {cleave.param = "w1", cleave.sharding = #cleave.sharding<{{\[\[}}tp], []]>},
// CHECK-SAME: %[[B1:[^:]+]]: tensor<4xf32> {cleave.param = "b1", cleave.sharding = #cleave.sharding<{{\[\[}}tp]]>},
// CHECK-SAME: %[[W2:[^:]+]]: tensor<3x4xf32> {cleave.param = "w2", cleave.sharding = #cleave.sharding<{{\[\[}}], [tp]]>},
// CHECK-SAME: %[[B2:[^:]+]]: tensor<3xf32> {cleave.param = "b2", cleave.sharding = #cleave.sharding<{{\[\[}}]]>})
// CHECK: %[[H:.*]] = cleave.gemm %[[X]], %[[W1]], %[[B1]]
// CHECK-SAME: cleave.sharding = [#cleave.sharding<{{\[\[}}dp], [tp]]>]
// CHECK: %[[R:.*]] = cleave.relu %[[H]] {cleave.sharding = [#cleave.sharding<{{\[\[}}dp], [tp]]>]}
// CHECK: %[[BETA:.*]] = cleave.constant {{.*}}dense<5.000000e-01> : tensor<f32>
// CHECK: %[[C:.*]] = cleave.mul %[[B2]], %[[BETA]]
// CHECK: %[[S:.*]] = cleave.gemm %[[R]], %[[W2]] {
// CHECK-SAME: beta = 0.000000e+00 : f32
// CHECK-SAME: cleave.sharding = [#cleave.sharding<{{\[\[}}dp], []], partial = [tp]>]
// CHECK-SAME: (tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<8x3xf32>
// CHECK: %[[SUM:.*]] = cleave.add %[[S]], %[[C]] {cleave.sharding = [#cleave.sharding<{{\[\[}}dp], []]>]}
// CHECK: %[[WHOLE:.*]] = cleave.reshard %[[SUM]] to <{{\[\[}}], []]>
// CHECK: return %[[WHOLE]]
module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @megatron(%x: tensor<8x6xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>},
                      %w1: tensor<4x6xf32> {cleave.param = "w1", cleave.sharding = #cleave.sharding<[[tp], []]>},
                      %b1: tensor<4xf32> {cleave.param = "b1"},
                      %w2: tensor<3x4xf32> {cleave.param = "w2", cleave.sharding = #cleave.sharding<[[], [tp]]>},
                      %b2: tensor<3xf32> {cleave.param = "b2"}) -> tensor<8x3xf32> {
    %h = cleave.gemm %x, %w1, %b1 {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %r = cleave.relu %h : tensor<8x4xf32>
    %s = cleave.gemm %r, %w2, %b2 {alpha = 1.0 : f32, beta = 0.5 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    // expected-remark @+1 {{resharding the result of cleave.add from #cleave.sharding<[[dp], []]> to #cleave.sharding<[[], []]>}}
    return %s : tensor<8x3xf32>
  }
}

// -----

// An update is tied to the tensor it overwrites: the momentum buffer's split
// reaches the parameter and both updates, which leave with their tensors'
// sharding. The gradient, a sum over the split batch, is resharded to the
// optimizer's split.
// CHECK-LABEL: func.func @update_tie
// CHECK-SAME: %[[W:[^:]+]]: tensor<4x6xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>},
// CHECK-SAME: %[[T:[^:]+]]: tensor<i64> {cleave.sharding = #cleave.sharding<[]>, cleave.step},
// CHECK-SAME: %[[M:[^:]+]]: tensor<4x6xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>, cleave.state = "w.momentum_buffer"})
// CHECK-SAME: -> (tensor<4x6xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>, cleave.update = "w"},
// CHECK-SAME: tensor<4x6xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>, cleave.update = "w.momentum_buffer"})
// CHECK: %[[G:.*]] = cleave.gemm
// CHECK: %[[GS:.*]] = cleave.reshard %[[G]] to <{{\[\[}}dp], []]>
// CHECK: %[[NEW:.*]]:2 = cleave.sgd %[[W]], %[[GS]] momentum_buffer(%[[M]]) step(%[[T]])
// CHECK-SAME: cleave.sharding = [#cleave.sharding<{{\[\[}}dp], []]>, #cleave.sharding<{{\[\[}}dp], []]>]
// CHECK: return %[[NEW]]#0, %[[NEW]]#1
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @update_tie(%x: tensor<8x6xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>},
                        %dy: tensor<8x4xf32> {cleave.input = "dy", cleave.sharding = #cleave.sharding<[[dp], []]>},
                        %w: tensor<4x6xf32> {cleave.param = "w"},
                        %t: tensor<i64> {cleave.step},
                        %m: tensor<4x6xf32> {cleave.state = "w.momentum_buffer", cleave.sharding = #cleave.sharding<[[dp], []]>})
      -> (tensor<4x6xf32> {cleave.update = "w"}, tensor<4x6xf32> {cleave.update = "w.momentum_buffer"}) {
    %g = cleave.gemm %dy, %x {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = false}
        : (tensor<8x4xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    // expected-remark @+1 {{resharding the result of cleave.gemm from}}
    %0:2 = cleave.sgd %w, %g momentum_buffer(%m) step(%t)
        {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.9 : f32, nesterov = false, weight_decay = 0.0 : f32}
        : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<i64>) -> (tensor<4x6xf32>, tensor<4x6xf32>)
    return %0#0, %0#1 : tensor<4x6xf32>, tensor<4x6xf32>
  }
}

// -----

// A split over two axes propagates whole (to 'y' through the add); an
// explicit reshard keeps its sharding, which propagates on from there.
// CHECK-LABEL: func.func @explicit_reshard
// CHECK-SAME: %[[X:[^:]+]]: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<{{\[\[}}dp, tp], []]>},
// CHECK-SAME: %[[Y:[^:]+]]: tensor<8x4xf32> {cleave.input = "y", cleave.sharding = #cleave.sharding<{{\[\[}}dp, tp], []]>})
// CHECK: %[[SUM:.*]] = cleave.add %[[X]], %[[Y]] {cleave.sharding = [#cleave.sharding<{{\[\[}}dp, tp], []]>]}
// CHECK: %[[COLS:.*]] = cleave.reshard %[[SUM]] to <{{\[\[}}], [tp]]> {cleave.sharding = [#cleave.sharding<{{\[\[}}], [tp]]>]}
// CHECK: %[[R:.*]] = cleave.relu %[[COLS]] {cleave.sharding = [#cleave.sharding<{{\[\[}}], [tp]]>]}
// CHECK: %[[WHOLE:.*]] = cleave.reshard %[[R]] to <{{\[\[}}], []]>
// CHECK: return %[[WHOLE]]
module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @explicit_reshard(%x: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp, tp], []]>},
                              %y: tensor<8x4xf32> {cleave.input = "y"}) -> tensor<8x4xf32> {
    %0 = cleave.add %x, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %1 = cleave.reshard %0 to <[[], [tp]]> : tensor<8x4xf32>
    %2 = cleave.relu %1 : tensor<8x4xf32>
    // expected-remark @+1 {{resharding the result of cleave.relu from #cleave.sharding<[[], [tp]]> to #cleave.sharding<[[], []]>}}
    return %2 : tensor<8x4xf32>
  }
}

// -----

// A reshape that regroups dims ([S, B, H * d] to [S, B * H, d]: attention's
// heads) keeps a split of B: the smaller major dim of the group divides
// the larger, so a block split of one is a block split of the other.
// CHECK-LABEL: func.func @regrouping_reshape
// CHECK-NOT: cleave.reshard
// CHECK: cleave.reshape %{{.*}} {cleave.sharding = [#cleave.sharding<{{\[\[}}], [dp], []]>]} : tensor<3x4x6xf32> -> tensor<3x8x3xf32>
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @regrouping_reshape(%x: tensor<3x4x6xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], [dp], []]>})
      -> tensor<3x8x3xf32> {
    %0 = cleave.reshape %x : tensor<3x4x6xf32> -> tensor<3x8x3xf32>
    // expected-remark @+1 {{resharding the result of cleave.reshape from #cleave.sharding<[[], [dp], []]> to #cleave.sharding<[[], [], []]>}}
    return %0 : tensor<3x8x3xf32>
  }
}
