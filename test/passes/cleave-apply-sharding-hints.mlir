// RUN: cleave-opt %s --cleave-apply-sharding-hints="mesh=dp=2 strategy=dp" | FileCheck %s --check-prefix=DP
// RUN: cleave-opt %s --cleave-apply-sharding-hints="mesh=dp=2,tp=2 hints='w=[_,tp]' hints='x=[_,tp]@3'" | FileCheck %s --check-prefix=HINTS
// RUN: cleave-opt %s --cleave-apply-sharding-hints="mesh=dp=2 strategy=zero3 microbatches=2" | FileCheck %s --check-prefix=ZERO3

// The example of Passes.td: the dp preset splits the batch and replicates
// the parameter, weaker (priority 1000) than any hint given.
// DP: module attributes {cleave.mesh = #cleave.mesh<dp = 2>}
// DP: %arg0: tensor<8x4xf32> {cleave.input = "x", cleave.priority = 1000 : i64, cleave.sharding = #cleave.sharding<{{\[\[}}dp], []]>}
// DP-SAME: %arg1: tensor<3x4xf32> {cleave.param = "w", cleave.priority = 1000 : i64, cleave.sharding = #cleave.sharding<{{\[\[}}], []]>}

// Hints as options: each one's sharding and priority; tensors no hint
// names stay unsharded (propagation decides).
// HINTS: module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>}
// HINTS: %arg0: tensor<8x4xf32> {cleave.input = "x", cleave.priority = 3 : i64, cleave.sharding = #cleave.sharding<{{\[\[}}], [tp]]>}
// HINTS-SAME: %arg1: tensor<3x4xf32> {cleave.param = "w", cleave.priority = 0 : i64, cleave.sharding = #cleave.sharding<{{\[\[}}], [tp]]>}

// ZeRO-3 with micro-batches: the axis 'microbatch' joins the mesh and
// splits the batch innermost; the split parameter is gathered whole for
// its compute use (a reshard), not for its update.
// ZERO3: module attributes {cleave.mesh = #cleave.mesh<dp = 2, microbatch = 2>}
// ZERO3: cleave.input = "x", cleave.priority = 1000 : i64, cleave.sharding = #cleave.sharding<{{\[\[}}dp, microbatch], []]>
// ZERO3: cleave.param = "w", cleave.priority = 1000 : i64, cleave.sharding = #cleave.sharding<{{\[\[}}], [dp]]>
// ZERO3: %[[WHOLE:.*]] = cleave.reshard %arg1 to <{{\[\[}}], []]>
// ZERO3: cleave.gemm %arg0, %[[WHOLE]]

module {
  func.func @step(%x: tensor<8x4xf32> {cleave.input = "x"},
                  %w: tensor<3x4xf32> {cleave.param = "w"})
      -> (tensor<8x3xf32> {cleave.loss}) {
    %0 = cleave.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<8x3xf32>
    return %0 : tensor<8x3xf32>
  }
}
