// RUN: cleave-opt %s --split-input-file --cleave-propagate-sharding --cleave-partition \
// RUN:   | FileCheck %s --implicit-check-not=cleave.reshard --implicit-check-not='cleave.sharding = ['
// RUN: cleave-opt %s --split-input-file --cleave-propagate-sharding --cleave-partition="reduce-scatter-gradients=false" | FileCheck %s --check-prefix=ZERO1
// RUN: cleave-opt %s --split-input-file --cleave-propagate-sharding --cleave-partition="bucket-mb=0.0001" | FileCheck %s --check-prefix=SMALL

// Partitioning reads the shardings cleave-propagate-sharding leaves on every
// value, so the inputs here are global programs run through both passes.
// Afterwards no reshard and no op sharding remains, and every type is the
// rank's local one.

// The example of Passes.td: the batch split over dp makes x and the gemm
// local (4 of 8 rows); the replicated result is gathered before the return.
// CHECK-LABEL: func.func @data_parallel
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>},
// CHECK-SAME: %[[W:[^:]+]]: tensor<3x4xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<{{\[\[}}], []]>})
// CHECK-SAME: -> (tensor<8x3xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}], []]>})
// CHECK: %[[Y:.*]] = cleave.gemm %[[X]], %[[W]] {{.*}} : (tensor<4x4xf32>, tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK: %[[WHOLE:.*]] = cleave.all_gather %[[Y]] over ["dp"] dim 0 : tensor<4x3xf32> -> tensor<8x3xf32>
// CHECK: return %[[WHOLE]] : tensor<8x3xf32>

module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @data_parallel(%x: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>},
                           %w: tensor<3x4xf32> {cleave.param = "w"}) -> tensor<8x3xf32> {
    %0 = cleave.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<8x3xf32>
    return %0 : tensor<8x3xf32>
  }
}

// -----

// A 2-layer MLP training step, data parallel: the batch (x, and y through
// the loss) is split over dp, parameters and momentum buffers stay whole.
// The summed loss is all-reduced before the division by the global count;
// the four gradients, partial sums over dp, are all-reduced in one bucket
// (in the order the backward pass produces them) issued after the last of
// them, before the optimizer.
// CHECK-LABEL: func.func @mlp_step
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x6xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>},
// CHECK-SAME: %[[Y:[^:]+]]: tensor<4xi64> {cleave.input = "y", cleave.sharding = #cleave.sharding<{{\[\[}}dp]]>},
// CHECK-SAME: %[[W1:[^:]+]]: tensor<4x6xf32> {cleave.param = "w1", cleave.sharding = #cleave.sharding<{{\[\[}}], []]>},
// CHECK-SAME: %[[B1:[^:]+]]: tensor<4xf32> {cleave.param = "b1", cleave.sharding = #cleave.sharding<{{\[\[}}]]>},
// CHECK-SAME: %[[W2:[^:]+]]: tensor<3x4xf32> {cleave.param = "w2", cleave.sharding = #cleave.sharding<{{\[\[}}], []]>},
// CHECK-SAME: %[[B2:[^:]+]]: tensor<3xf32> {cleave.param = "b2", cleave.sharding = #cleave.sharding<{{\[\[}}]]>},
// CHECK-SAME: %[[T:[^:]+]]: tensor<i64> {cleave.sharding = #cleave.sharding<[]>, cleave.step},
// CHECK-SAME: %[[MW1:[^:]+]]: tensor<4x6xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}], []]>, cleave.state = "w1.momentum_buffer"},
// CHECK-SAME: -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}, tensor<4x6xf32>
// CHECK: %[[H:.*]] = cleave.gemm %[[X]], %[[W1]], %[[B1]] {{.*}} : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// CHECK: %[[R:.*]] = cleave.relu %[[H]] : tensor<4x4xf32>
// CHECK: %[[S:.*]] = cleave.gemm %[[R]], %[[W2]], %[[B2]] {{.*}} -> tensor<4x3xf32>
// CHECK: %[[SUM:.*]], %[[LP:.*]] = cleave.softmax_cross_entropy %[[S]], %[[Y]] {{.*}} : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
// CHECK: %[[TOTAL:.*]] = cleave.all_reduce %[[SUM]] over ["dp"] : tensor<f32>
// CHECK: %[[N:.*]] = cleave.constant dense<8.000000e+00>
// CHECK: %[[LOSS:.*]] = cleave.div %[[TOTAL]], %[[N]]
// CHECK: %[[DS:.*]] = cleave.softmax_cross_entropy_grad {{.*}} -> tensor<4x3xf32>
// CHECK: %[[DW2:.*]] = cleave.gemm %[[DS]], %[[R]] {{.*}} : (tensor<4x3xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[DB2:.*]] = cleave.reduce_sum %[[DS]] {{.*}} : tensor<4x3xf32> -> tensor<3xf32>
// CHECK: %[[DW1:.*]] = cleave.gemm {{.*}}, %[[X]] {{.*}} : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK: %[[DB1:.*]] = cleave.reduce_sum {{.*}} : tensor<4x4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[G:.*]]:4 = cleave.all_reduce %[[DW2]], %[[DB2]], %[[DW1]], %[[DB1]] over ["dp"] : tensor<3x4xf32>, tensor<3xf32>, tensor<4x6xf32>, tensor<4xf32>
// CHECK-NEXT: %[[NW1:.*]]:2 = cleave.sgd %[[W1]], %[[G]]#2 momentum_buffer(%[[MW1]]) step(%[[T]])
// CHECK-SAME: -> (tensor<4x6xf32>, tensor<4x6xf32>)
// CHECK-NEXT: cleave.sgd %[[B1]], %[[G]]#3
// CHECK-NEXT: cleave.sgd %[[W2]], %[[G]]#0
// CHECK-NEXT: cleave.sgd %[[B2]], %[[G]]#1
// CHECK-NEXT: return %[[LOSS]], %[[NW1]]#0
// CHECK-NOT: cleave.all_reduce

// With buckets of at most 104 bytes: [dw2 (48), db2 (12)], [dw1 (96)],
// [db1 (16)], each issued after its last member.
// SMALL-LABEL: func.func @mlp_step
// SMALL: cleave.all_reduce %{{.*}} over ["dp"] : tensor<f32>
// SMALL: %[[DW2:.*]] = cleave.gemm {{.*}} -> tensor<3x4xf32>
// SMALL: %[[DB2:.*]] = cleave.reduce_sum {{.*}} -> tensor<3xf32>
// SMALL-NEXT: %[[G2:.*]]:2 = cleave.all_reduce %[[DW2]], %[[DB2]] over ["dp"] : tensor<3x4xf32>, tensor<3xf32>
// SMALL: %[[DW1:.*]] = cleave.gemm {{.*}} -> tensor<4x6xf32>
// SMALL-NEXT: %[[G1W:.*]] = cleave.all_reduce %[[DW1]] over ["dp"] : tensor<4x6xf32>
// SMALL-NEXT: %[[DB1:.*]] = cleave.reduce_sum {{.*}} -> tensor<4xf32>
// SMALL-NEXT: %[[G1B:.*]] = cleave.all_reduce %[[DB1]] over ["dp"] : tensor<4xf32>
// SMALL-NEXT: cleave.sgd %{{.*}}, %[[G1W]]
// SMALL-NEXT: cleave.sgd %{{.*}}, %[[G1B]]
// SMALL-NEXT: cleave.sgd %{{.*}}, %[[G2]]#0
// SMALL-NEXT: cleave.sgd %{{.*}}, %[[G2]]#1
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @mlp_step(%x: tensor<8x6xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>},
                      %y: tensor<8xi64> {cleave.input = "y"},
                      %w1: tensor<4x6xf32> {cleave.param = "w1"}, %b1: tensor<4xf32> {cleave.param = "b1"},
                      %w2: tensor<3x4xf32> {cleave.param = "w2"}, %b2: tensor<3xf32> {cleave.param = "b2"},
                      %t: tensor<i64> {cleave.step},
                      %mw1: tensor<4x6xf32> {cleave.state = "w1.momentum_buffer"},
                      %mb1: tensor<4xf32> {cleave.state = "b1.momentum_buffer"},
                      %mw2: tensor<3x4xf32> {cleave.state = "w2.momentum_buffer"},
                      %mb2: tensor<3xf32> {cleave.state = "b2.momentum_buffer"})
      -> (tensor<f32> {cleave.loss, cleave.output = "loss"},
          tensor<4x6xf32> {cleave.update = "w1"}, tensor<4xf32> {cleave.update = "b1"},
          tensor<3x4xf32> {cleave.update = "w2"}, tensor<3xf32> {cleave.update = "b2"},
          tensor<4x6xf32> {cleave.update = "w1.momentum_buffer"}, tensor<4xf32> {cleave.update = "b1.momentum_buffer"},
          tensor<3x4xf32> {cleave.update = "w2.momentum_buffer"}, tensor<3xf32> {cleave.update = "b2.momentum_buffer"}) {
    // Forward, with the mean loss as sum / count (cleave-decompose-means).
    %h = cleave.gemm %x, %w1, %b1 {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %r = cleave.relu %h : tensor<8x4xf32>
    %s = cleave.gemm %r, %w2, %b2 {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    %sum, %lp = cleave.softmax_cross_entropy %s, %y {reduction = #cleave.reduction<sum>}
        : (tensor<8x3xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x3xf32>)
    %n = cleave.constant dense<8.0> : tensor<f32>
    %loss = cleave.div %sum, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
    // Backward (cleave-autodiff).
    %one = cleave.constant dense<1.0> : tensor<f32>
    %dsum = cleave.div %one, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %ds = cleave.softmax_cross_entropy_grad %dsum, %lp, %y {reduction = #cleave.reduction<sum>}
        : (tensor<f32>, tensor<8x3xf32>, tensor<8xi64>) -> tensor<8x3xf32>
    %dr = cleave.gemm %ds, %w2 {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
        : (tensor<8x3xf32>, tensor<3x4xf32>) -> tensor<8x4xf32>
    %dw2 = cleave.gemm %ds, %r {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = false}
        : (tensor<8x3xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %db2 = cleave.reduce_sum %ds {axes = array<i64: 0>, keepdims = false} : tensor<8x3xf32> -> tensor<3xf32>
    %zero = cleave.constant dense<0.0> : tensor<f32>
    %active = cleave.less %zero, %h : (tensor<f32>, tensor<8x4xf32>) -> tensor<8x4xi1>
    %dh = cleave.where %active, %dr, %zero : (tensor<8x4xi1>, tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
    %dw1 = cleave.gemm %dh, %x {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = false}
        : (tensor<8x4xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    %db1 = cleave.reduce_sum %dh {axes = array<i64: 0>, keepdims = false} : tensor<8x4xf32> -> tensor<4xf32>
    // SGD with momentum (cleave-apply-optimizer).
    %nw1:2 = cleave.sgd %w1, %dw1 momentum_buffer(%mw1) step(%t)
        {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.9 : f32, nesterov = false, weight_decay = 0.0 : f32}
        : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<i64>) -> (tensor<4x6xf32>, tensor<4x6xf32>)
    %nb1:2 = cleave.sgd %b1, %db1 momentum_buffer(%mb1) step(%t)
        {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.9 : f32, nesterov = false, weight_decay = 0.0 : f32}
        : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>)
    %nw2:2 = cleave.sgd %w2, %dw2 momentum_buffer(%mw2) step(%t)
        {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.9 : f32, nesterov = false, weight_decay = 0.0 : f32}
        : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<i64>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
    %nb2:2 = cleave.sgd %b2, %db2 momentum_buffer(%mb2) step(%t)
        {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.9 : f32, nesterov = false, weight_decay = 0.0 : f32}
        : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<i64>) -> (tensor<3xf32>, tensor<3xf32>)
    return %loss, %nw1#0, %nb1#0, %nw2#0, %nb2#0, %nw1#1, %nb1#1, %nw2#1, %nb2#1
        : tensor<f32>, tensor<4x6xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<3xf32>,
          tensor<4x6xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<3xf32>
  }
}

// -----

// A row-parallel gemm with a bias: the contraction is split over tp, so
// each rank's product is a partial sum. It becomes a gemm without bias, an
// all_reduce over tp, and the bias (times beta) added once.
// CHECK-LABEL: func.func @row_parallel_bias
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x2xf32>
// CHECK-SAME: %[[W:[^:]+]]: tensor<3x2xf32>
// CHECK-SAME: %[[B:[^:]+]]: tensor<3xf32>
// CHECK-SAME: -> (tensor<8x3xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}], []]>})
// CHECK: %[[BETA:.*]] = cleave.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[C:.*]] = cleave.mul %[[B]], %[[BETA]] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK: %[[P:.*]] = cleave.gemm %[[X]], %[[W]] {
// CHECK-SAME: beta = 0.000000e+00 : f32
// CHECK-SAME: : (tensor<8x2xf32>, tensor<3x2xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: %[[SUM:.*]] = cleave.all_reduce %[[P]] over ["tp"] : tensor<8x3xf32>
// CHECK-NEXT: %[[Y:.*]] = cleave.add %[[SUM]], %[[C]] : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: %[[R:.*]] = cleave.relu %[[Y]] : tensor<8x3xf32>
// CHECK-NEXT: return %[[R]] : tensor<8x3xf32>
module attributes {cleave.mesh = #cleave.mesh<tp = 2>} {
  func.func @row_parallel_bias(%x: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], [tp]]>},
                               %w: tensor<3x4xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<[[], [tp]]>},
                               %b: tensor<3xf32> {cleave.param = "b"}) -> tensor<8x3xf32> {
    %0 = cleave.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 0.5 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    %1 = cleave.relu %0 : tensor<8x3xf32>
    return %1 : tensor<8x3xf32>
  }
}

// -----

// A partial gradient feeding an optimizer whose momentum buffer (and so
// parameter) is split over dp (ZeRO): the sum over the split batch becomes a
// reduce_scatter into the rank's 2 of 4 rows; with
// reduce-scatter-gradients=false an all_reduce and an all_slice.
// CHECK-LABEL: func.func @zero_gradient
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x6xf32>
// CHECK-SAME: %[[DY:[^:]+]]: tensor<4x4xf32>
// CHECK-SAME: %[[W:[^:]+]]: tensor<2x6xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>},
// CHECK-SAME: %[[T:[^:]+]]: tensor<i64>
// CHECK-SAME: %[[M:[^:]+]]: tensor<2x6xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>, cleave.state = "w.momentum_buffer"})
// CHECK-SAME: -> (tensor<2x6xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>, cleave.update = "w"}, tensor<2x6xf32>
// CHECK: %[[P:.*]] = cleave.gemm %[[DY]], %[[X]] {{.*}} : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: %[[G:.*]] = cleave.reduce_scatter %[[P]] over ["dp"] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// CHECK-NEXT: %[[NEW:.*]]:2 = cleave.sgd %[[W]], %[[G]] momentum_buffer(%[[M]]) step(%[[T]])
// CHECK-SAME: -> (tensor<2x6xf32>, tensor<2x6xf32>)
// CHECK-NEXT: return %[[NEW]]#0, %[[NEW]]#1 : tensor<2x6xf32>, tensor<2x6xf32>
// ZERO1-LABEL: func.func @zero_gradient
// ZERO1: %[[P:.*]] = cleave.gemm {{.*}} -> tensor<4x6xf32>
// ZERO1-NEXT: %[[SUM:.*]] = cleave.all_reduce %[[P]] over ["dp"] : tensor<4x6xf32>
// ZERO1-NEXT: %[[G:.*]] = cleave.all_slice %[[SUM]] over ["dp"] dim 0 : tensor<4x6xf32> -> tensor<2x6xf32>
// ZERO1-NEXT: cleave.sgd %{{.*}}, %[[G]] momentum_buffer
// ZERO1-NOT: cleave.reduce_scatter
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @zero_gradient(%x: tensor<8x6xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>},
                           %dy: tensor<8x4xf32> {cleave.input = "dy", cleave.sharding = #cleave.sharding<[[dp], []]>},
                           %w: tensor<4x6xf32> {cleave.param = "w"},
                           %t: tensor<i64> {cleave.step},
                           %m: tensor<4x6xf32> {cleave.state = "w.momentum_buffer", cleave.sharding = #cleave.sharding<[[dp], []]>})
      -> (tensor<4x6xf32> {cleave.update = "w"}, tensor<4x6xf32> {cleave.update = "w.momentum_buffer"}) {
    %g = cleave.gemm %dy, %x {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = false}
        : (tensor<8x4xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    %0:2 = cleave.sgd %w, %g momentum_buffer(%m) step(%t)
        {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.9 : f32, nesterov = false, weight_decay = 0.0 : f32}
        : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<i64>) -> (tensor<4x6xf32>, tensor<4x6xf32>)
    return %0#0, %0#1 : tensor<4x6xf32>, tensor<4x6xf32>
  }
}

// -----

// A Megatron pair on a dp = 2, tp = 2 mesh: every rank holds 4 of 8 rows and
// 2 of 4 hidden units; fc2's partial sums are all-reduced over tp only, and
// the result is gathered over dp for the return.
// CHECK-LABEL: func.func @megatron
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x6xf32>
// CHECK-SAME: %[[W1:[^:]+]]: tensor<2x6xf32>
// CHECK-SAME: %[[B1:[^:]+]]: tensor<2xf32>
// CHECK-SAME: %[[W2:[^:]+]]: tensor<3x2xf32>
// CHECK-SAME: %[[B2:[^:]+]]: tensor<3xf32>
// CHECK: %[[H:.*]] = cleave.gemm %[[X]], %[[W1]], %[[B1]] {{.*}} : (tensor<4x6xf32>, tensor<2x6xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK: %[[R:.*]] = cleave.relu %[[H]] : tensor<4x2xf32>
// CHECK: %[[P:.*]] = cleave.gemm %[[R]], %[[W2]] {{.*}} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[S:.*]] = cleave.all_reduce %[[P]] over ["tp"] : tensor<4x3xf32>
// CHECK-NEXT: %[[Y:.*]] = cleave.add %[[S]], %[[B2]] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[WHOLE:.*]] = cleave.all_gather %[[Y]] over ["dp"] dim 0 : tensor<4x3xf32> -> tensor<8x3xf32>
// CHECK-NEXT: return %[[WHOLE]]
module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @megatron(%x: tensor<8x6xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>},
                      %w1: tensor<4x6xf32> {cleave.param = "w1", cleave.sharding = #cleave.sharding<[[tp], []]>},
                      %b1: tensor<4xf32> {cleave.param = "b1"},
                      %w2: tensor<3x4xf32> {cleave.param = "w2", cleave.sharding = #cleave.sharding<[[], [tp]]>},
                      %b2: tensor<3xf32> {cleave.param = "b2"}) -> tensor<8x3xf32> {
    %h = cleave.gemm %x, %w1, %b1 {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %r = cleave.relu %h : tensor<8x4xf32>
    %s = cleave.gemm %r, %w2, %b2 {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    return %s : tensor<8x3xf32>
  }
}

// -----

// Explicit reshards lower to gathers of the axes the target drops and
// slices of those it adds (minor axes first, order preserved), each reshard
// with its own collectives.
// CHECK-LABEL: func.func @reshards
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<{{\[\[}}dp, tp], []]>})
// CHECK-SAME: -> (tensor<8x4xf32> {cleave.sharding = #cleave.sharding<{{\[\[}}], []]>}, tensor<8x4xf32>
// [[dp, tp], []] -> [[dp], []]
// CHECK: %[[A:.*]] = cleave.all_gather %[[X]] over ["tp"] dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK: %[[RA:.*]] = cleave.relu %[[A]] : tensor<4x4xf32>
// [[dp], []] -> [[], [tp]]
// CHECK: %[[B0:.*]] = cleave.all_gather %[[RA]] over ["dp"] dim 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK: %[[B:.*]] = cleave.all_slice %[[B0]] over ["tp"] dim 1 : tensor<8x4xf32> -> tensor<8x2xf32>
// CHECK: %[[RB:.*]] = cleave.relu %[[B]] : tensor<8x2xf32>
// [[], [tp]] -> [[tp, dp], []]
// CHECK: %[[C0:.*]] = cleave.all_gather %[[RB]] over ["tp"] dim 1 : tensor<8x2xf32> -> tensor<8x4xf32>
// CHECK: %[[C:.*]] = cleave.all_slice %[[C0]] over ["tp", "dp"] dim 0 : tensor<8x4xf32> -> tensor<2x4xf32>
// CHECK: %[[RC:.*]] = cleave.relu %[[C]] : tensor<2x4xf32>
// CHECK: %[[OA:.*]] = cleave.all_gather %[[RA]] over ["dp"] dim 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK: %[[OB:.*]] = cleave.all_gather %[[RB]] over ["tp"] dim 1 : tensor<8x2xf32> -> tensor<8x4xf32>
// CHECK: %[[OC:.*]] = cleave.all_gather %[[RC]] over ["tp", "dp"] dim 0 : tensor<2x4xf32> -> tensor<8x4xf32>
// CHECK: return %[[OA]], %[[OB]], %[[OC]]
module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @reshards(%x: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp, tp], []]>})
      -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
    %0 = cleave.reshard %x to <[[dp], []]> : tensor<8x4xf32>
    %1 = cleave.relu %0 : tensor<8x4xf32>
    %2 = cleave.reshard %1 to <[[], [tp]]> : tensor<8x4xf32>
    %3 = cleave.relu %2 : tensor<8x4xf32>
    %4 = cleave.reshard %3 to <[[tp, dp], []]> : tensor<8x4xf32>
    %5 = cleave.relu %4 : tensor<8x4xf32>
    return %1, %3, %5 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
  }
}

// -----

// A vocabulary-parallel embedding: the table's rows are split over tp. Each
// rank shifts the ids into its block of rows (4 of 8, from its axis_index),
// looks up only those inside it and zeroes the rest, so the lookups are
// partial sums over tp (all-reduced); the gradient is scatter-added by each
// rank into its own rows only, from the masked output gradient. Negative
// ids wrap around the whole table first (ONNX).
// CHECK-LABEL: func.func @vocab_parallel_embedding
// CHECK-SAME: %[[IDS:[^:]+]]: tensor<2x3xi32> {cleave.input = "ids"
// CHECK-SAME: %[[TABLE:[^:]+]]: tensor<4x4xf32> {cleave.param = "wte", cleave.sharding = #cleave.sharding<{{\[\[}}tp], []]>}
// CHECK-SAME: %[[DY:[^:]+]]: tensor<2x3x4xf32> {cleave.input = "dy"
// CHECK: %[[R:.*]] = cleave.axis_index over ["tp"] : tensor<i64>
// CHECK: %[[R32:.*]] = cleave.cast %[[R]] : tensor<i64> to tensor<i32>
// CHECK: %[[ROWS:.*]] = cleave.constant dense<4> : tensor<i32>
// CHECK: %[[OFFSET:.*]] = cleave.mul %[[R32]], %[[ROWS]]
// CHECK: %[[ALL:.*]] = cleave.constant dense<8> : tensor<i32>
// CHECK: %[[WRAPPED:.*]] = cleave.add %[[IDS]], %[[ALL]]
// CHECK: %[[IDX:.*]] = cleave.where %{{.*}}, %[[WRAPPED]], %[[IDS]]
// CHECK: %[[LOCAL:.*]] = cleave.sub %[[IDX]], %[[OFFSET]]
// CHECK: %[[BELOW:.*]] = cleave.less %[[LOCAL]]
// CHECK: %[[MOVED:.*]] = cleave.where %[[BELOW]], %{{.*}}, %[[LOCAL]]
// CHECK: %[[VALID:.*]] = cleave.less %[[MOVED]]
// CHECK: %[[SAFE:.*]] = cleave.where %[[VALID]], %[[MOVED]]
// CHECK: %[[MASK:.*]] = cleave.reshape %[[VALID]] : tensor<2x3xi1> -> tensor<2x3x1xi1>
// CHECK: %[[ROWSGOT:.*]] = cleave.gather %[[TABLE]], %[[SAFE]] {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
// CHECK: %[[MINE:.*]] = cleave.where %[[MASK]], %[[ROWSGOT]], %{{.*}} : (tensor<2x3x1xi1>, tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK: %[[EMB:.*]] = cleave.all_reduce %[[MINE]] over ["tp"] : tensor<2x3x4xf32>
// CHECK: cleave.axis_index over ["tp"]
// CHECK: %[[GLOCAL:.*]] = cleave.sub
// CHECK: %[[GBELOW:.*]] = cleave.less %[[GLOCAL]]
// CHECK: %[[GMOVED:.*]] = cleave.where %[[GBELOW]], %{{.*}}, %[[GLOCAL]]
// CHECK: %[[GVALID:.*]] = cleave.less %[[GMOVED]]
// CHECK: %[[GSAFE:.*]] = cleave.where %[[GVALID]], %[[GMOVED]]
// CHECK: %[[GMASK:.*]] = cleave.reshape %[[GVALID]]
// CHECK: %[[DYMINE:.*]] = cleave.where %[[GMASK]], %[[DY]], %{{.*}}
// CHECK: %[[GRAD:.*]] = cleave.gather_grad %[[DYMINE]], %[[GSAFE]] {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi32>) -> tensor<4x4xf32>
// CHECK: %[[NEW:.*]] = cleave.sub %[[TABLE]], %[[GRAD]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[WHOLE:.*]] = cleave.all_gather %[[NEW]] over ["tp"] dim 0
// CHECK: return %[[EMB]], %[[WHOLE]]

module attributes {cleave.mesh = #cleave.mesh<tp = 2>} {
  func.func @vocab_parallel_embedding(%ids: tensor<2x3xi32> {cleave.input = "ids"},
                                      %table: tensor<8x4xf32> {cleave.param = "wte", cleave.sharding = #cleave.sharding<[[tp], []]>},
                                      %dy: tensor<2x3x4xf32> {cleave.input = "dy"})
      -> (tensor<2x3x4xf32>, tensor<8x4xf32>) {
    %0 = cleave.gather %table, %ids {axis = 0 : i64} : (tensor<8x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
    %1 = cleave.gather_grad %dy, %ids {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi32>) -> tensor<8x4xf32>
    %2 = cleave.sub %table, %1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0, %2 : tensor<2x3x4xf32>, tensor<8x4xf32>
  }
}

// -----

// A vocabulary-parallel cross entropy: the head's weight split by rows
// makes the logits split by class over tp, and the loss works on the
// blocks: the row maxima are all-gathered for a common shift, the sums of
// exponentials and the label's log-probability (a one-hot of the label
// shifted into this rank's classes) all-reduced; samples with the
// ignore_index label count 0. The gradient, softmax - one-hot, is local;
// only the returned gradient is gathered.
// CHECK-LABEL: func.func @vocab_parallel_cross_entropy
// CHECK-SAME: %[[Y:[^:]+]]: tensor<3xi64> {cleave.input = "y"
// CHECK: %[[S:.*]] = cleave.gemm {{.*}} -> tensor<3x4xf32>
// CHECK: %[[MAX:.*]] = cleave.reduce_max %[[S]] {axes = array<i64: 1>, keepdims = true} : tensor<3x4xf32> -> tensor<3x1xf32>
// CHECK: %[[MAXES:.*]] = cleave.all_gather %[[MAX]] over ["tp"] dim 1 : tensor<3x1xf32> -> tensor<3x2xf32>
// CHECK: %[[SHIFT:.*]] = cleave.reduce_max %[[MAXES]]
// CHECK: %[[SHIFTED:.*]] = cleave.sub %[[S]], %[[SHIFT]]
// CHECK: %[[E:.*]] = cleave.exp %[[SHIFTED]]
// CHECK: %[[SUM:.*]] = cleave.reduce_sum %[[E]]
// CHECK: %[[SUMS:.*]] = cleave.all_reduce %[[SUM]] over ["tp"] : tensor<3x1xf32>
// CHECK: %[[LOGSUM:.*]] = cleave.log %[[SUMS]]
// CHECK: %[[LP:.*]] = cleave.sub %[[SHIFTED]], %[[LOGSUM]] : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
// CHECK: %[[R:.*]] = cleave.axis_index over ["tp"] : tensor<i64>
// CHECK: %[[LOCAL:.*]] = cleave.sub %[[Y]]
// CHECK: %[[COLUMN:.*]] = cleave.reshape %[[LOCAL]] : tensor<3xi64> -> tensor<3x1xi64>
// CHECK: %[[CLASSES:.*]] = cleave.constant dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>
// CHECK: %[[HIT:.*]] = cleave.equal %[[CLASSES]], %[[COLUMN]] : (tensor<1x4xi64>, tensor<3x1xi64>) -> tensor<3x4xi1>
// CHECK: %[[MINE:.*]] = cleave.where %[[HIT]], %[[LP]]
// CHECK: %[[PICK:.*]] = cleave.reduce_sum %[[MINE]] {axes = array<i64: 1>, keepdims = false}
// CHECK: %[[PICKED:.*]] = cleave.all_reduce %[[PICK]] over ["tp"] : tensor<3xf32>
// CHECK: %[[NLL:.*]] = cleave.neg %[[PICKED]]
// CHECK: %[[IGNORED:.*]] = cleave.equal %[[Y]], %{{.*}} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
// CHECK: %[[COUNTED:.*]] = cleave.where %[[IGNORED]], %{{.*}}, %[[NLL]]
// CHECK: %[[LOSS:.*]] = cleave.reduce_sum %[[COUNTED]] {axes = array<i64: 0>, keepdims = false} : tensor<3xf32> -> tensor<f32>
// CHECK: %[[P:.*]] = cleave.exp %[[LP]]
// CHECK: %[[G:.*]] = cleave.sub %[[P]], %{{.*}} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: cleave.mul %[[G]]
// CHECK: %[[DS:.*]] = cleave.where {{.*}} -> tensor<3x4xf32>
// CHECK: %[[WHOLE:.*]] = cleave.all_gather %[[DS]] over ["tp"] dim 1 : tensor<3x4xf32> -> tensor<3x8xf32>
// CHECK: return %[[LOSS]], %[[WHOLE]]

module attributes {cleave.mesh = #cleave.mesh<tp = 2>} {
  func.func @vocab_parallel_cross_entropy(%h: tensor<3x4xf32> {cleave.input = "h"},
                                          %y: tensor<3xi64> {cleave.input = "y"},
                                          %w: tensor<8x4xf32> {cleave.param = "head", cleave.sharding = #cleave.sharding<[[tp], []]>},
                                          %g: tensor<f32> {cleave.input = "g"})
      -> (tensor<f32>, tensor<3x8xf32>) {
    %s = cleave.gemm %h, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
    %loss, %lp = cleave.softmax_cross_entropy %s, %y {reduction = #cleave.reduction<sum>, ignore_index = -1 : i64}
        : (tensor<3x8xf32>, tensor<3xi64>) -> (tensor<f32>, tensor<3x8xf32>)
    %ds = cleave.softmax_cross_entropy_grad %g, %lp, %y {reduction = #cleave.reduction<sum>, ignore_index = -1 : i64}
        : (tensor<f32>, tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
    return %loss, %ds : tensor<f32>, tensor<3x8xf32>
  }
}
