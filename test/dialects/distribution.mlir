// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s

// Round trip of the distribution attributes (#cleave.mesh, #cleave.sharding)
// and of cleave.reshard and the collectives, through their custom and their
// generic form.

// CHECK: module attributes
// CHECK-SAME: cleave.mesh = #cleave.mesh<dp = 2, tp = 2>
// The keys are printed sorted; each names one form of #cleave.sharding.
// CHECK-SAME: test.all_forms = #cleave.sharding<{{\[\[}}dp], []], replicated = [tp], partial = [pp]>
// CHECK-SAME: test.empty_lists = #cleave.sharding<{{\[\[}}], []]>
// CHECK-SAME: test.mesh_3d = #cleave.mesh<pp = 2, dp = 4, tp = 1>
// CHECK-SAME: test.multi_axis = #cleave.sharding<{{\[\[}}dp, tp], []]>
// CHECK-SAME: test.partial = #cleave.sharding<{{\[\[}}], [tp]], partial = [dp]>
// CHECK-SAME: test.replicated = #cleave.sharding<{{\[\[}}]], replicated = [dp, tp]>
// CHECK-SAME: test.scalar = #cleave.sharding<[]>
module attributes {
  cleave.mesh = #cleave.mesh<dp = 2, tp = 2>,
  test.mesh_3d = #cleave.mesh<pp = 2, dp = 4, tp = 1>,
  test.multi_axis = #cleave.sharding<[[dp, tp], []]>,
  test.replicated = #cleave.sharding<[[]], replicated = [dp, tp]>,
  test.partial = #cleave.sharding<[[], [tp]], partial = [dp]>,
  // Keys in the other order, and empty lists, print canonically. A sharding
  // on its own is not checked against a mesh (pp is no axis of this one).
  test.all_forms = #cleave.sharding<[[dp], []], partial = [pp], replicated = [tp]>,
  test.empty_lists = #cleave.sharding<[[], []], replicated = [], partial = []>,
  test.scalar = #cleave.sharding<[]>
} {

// CHECK-LABEL: func.func @sharded_arguments
// CHECK-SAME: cleave.sharding = #cleave.sharding<{{\[\[}}dp], [tp]]>
// CHECK-SAME: cleave.sharding = #cleave.sharding<{{\[\[}}], []], partial = [dp, tp]>
// CHECK-SAME: cleave.sharding = #cleave.sharding<{{\[\[}}tp]]>
func.func @sharded_arguments(
    %x: tensor<8x4xf32> {cleave.sharding = #cleave.sharding<[[dp], [tp]]>},
    %g: tensor<8x4xf32> {cleave.sharding = #cleave.sharding<[[], []], partial = [dp, tp]>})
    -> (tensor<8xf32> {cleave.sharding = #cleave.sharding<[[tp]]>}) {
  %0 = cleave.constant dense<1.0> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// CHECK-LABEL: func.func @reshard
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x4xf32>)
func.func @reshard(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // The sharding prints without its #cleave.sharding prefix.
  // CHECK: %[[R0:.*]] = cleave.reshard %[[X]] to <{{\[\[}}dp], []]> : tensor<8x4xf32>
  // CHECK: %[[R1:.*]] = cleave.reshard %[[R0]] to <{{\[\[}}dp, tp], []]> : tensor<8x4xf32>
  // CHECK: %[[R2:.*]] = cleave.reshard %[[R1]] to <{{\[\[}}], [tp]], replicated = [dp]> : tensor<8x4xf32>
  // CHECK: %[[R3:.*]] = cleave.reshard %[[R2]] to <{{\[\[}}], []]> : tensor<8x4xf32>
  // CHECK: %[[R4:.*]] = cleave.reshard %[[R3]] to <{{\[\[}}], []]> {note = "kept"} : tensor<8x4xf32>
  // CHECK: return %[[R4]]
  %0 = cleave.reshard %x to <[[dp], []]> : tensor<8x4xf32>
  %1 = cleave.reshard %0 to <[[dp, tp], []]> : tensor<8x4xf32>
  %2 = cleave.reshard %1 to <[[], [tp]], replicated = [dp]> : tensor<8x4xf32>
  %3 = cleave.reshard %2 to <[[], []]> : tensor<8x4xf32>
  %4 = cleave.reshard %3 to <[[], []]> {note = "kept"} : tensor<8x4xf32>
  return %4 : tensor<8x4xf32>
}

// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[W:[^:]+]]: tensor<64x128xf32>, %[[B:[^:]+]]: tensor<64xf32>, %[[N:[^:]+]]: tensor<f32>)
func.func @all_reduce(%w: tensor<64x128xf32>, %b: tensor<64xf32>, %n: tensor<f32>)
    -> (tensor<64x128xf32>, tensor<64xf32>, tensor<f32>, tensor<f32>) {
  // CHECK: %[[BUCKET:.*]]:2 = cleave.all_reduce %[[W]], %[[B]] over ["dp"] : tensor<64x128xf32>, tensor<64xf32>
  // CHECK: %[[ONE:.*]] = cleave.all_reduce %[[N]] over ["dp", "tp"] : tensor<f32>
  // CHECK: %[[NONE:.*]] = cleave.all_reduce %[[N]] over [] : tensor<f32>
  // CHECK: return %[[BUCKET]]#0, %[[BUCKET]]#1, %[[ONE]], %[[NONE]]
  %0:2 = cleave.all_reduce %w, %b over ["dp"] : tensor<64x128xf32>, tensor<64xf32>
  %1 = cleave.all_reduce %n over ["dp", "tp"] : tensor<f32>
  %2 = cleave.all_reduce %n over [] : tensor<f32>
  return %0#0, %0#1, %1, %2 : tensor<64x128xf32>, tensor<64xf32>, tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @gather_scatter_slice
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x6xf32>)
func.func @gather_scatter_slice(%x: tensor<8x6xf32>)
    -> (tensor<16x6xf32>, tensor<32x6xf32>, tensor<8x3xf32>, tensor<2x6xf32>) {
  // CHECK: %[[G:.*]] = cleave.all_gather %[[X]] over ["dp"] dim 0 : tensor<8x6xf32> -> tensor<16x6xf32>
  // CHECK: %[[GG:.*]] = cleave.all_gather %[[X]] over ["dp", "tp"] dim 0 : tensor<8x6xf32> -> tensor<32x6xf32>
  // CHECK: %[[RS:.*]] = cleave.reduce_scatter %[[X]] over ["tp"] dim 1 : tensor<8x6xf32> -> tensor<8x3xf32>
  // CHECK: %[[S:.*]] = cleave.all_slice %[[X]] over ["tp", "dp"] dim 0 : tensor<8x6xf32> -> tensor<2x6xf32>
  // CHECK: return %[[G]], %[[GG]], %[[RS]], %[[S]]
  %0 = cleave.all_gather %x over ["dp"] dim 0 : tensor<8x6xf32> -> tensor<16x6xf32>
  %1 = cleave.all_gather %x over ["dp", "tp"] dim 0 : tensor<8x6xf32> -> tensor<32x6xf32>
  %2 = cleave.reduce_scatter %x over ["tp"] dim 1 : tensor<8x6xf32> -> tensor<8x3xf32>
  %3 = cleave.all_slice %x over ["tp", "dp"] dim 0 : tensor<8x6xf32> -> tensor<2x6xf32>
  return %0, %1, %2, %3 : tensor<16x6xf32>, tensor<32x6xf32>, tensor<8x3xf32>, tensor<2x6xf32>
}

// CHECK-LABEL: func.func @axis_index
func.func @axis_index() -> (tensor<i64>, tensor<i64>) {
  // CHECK: %[[TP:.*]] = cleave.axis_index over ["tp"] : tensor<i64>
  // CHECK: %[[BOTH:.*]] = cleave.axis_index over ["tp", "dp"] : tensor<i64>
  // CHECK: return %[[TP]], %[[BOTH]]
  %0 = cleave.axis_index over ["tp"] : tensor<i64>
  %1 = cleave.axis_index over ["tp", "dp"] : tensor<i64>
  return %0, %1 : tensor<i64>, tensor<i64>
}

// CHECK-LABEL: func.func @all_to_all_and_broadcast
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[I:[^:]+]]: tensor<3xi64>)
func.func @all_to_all_and_broadcast(%x: tensor<4x8xf32>, %i: tensor<3xi64>)
    -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<3xi64>) {
  // CHECK: %[[A:.*]] = cleave.all_to_all %[[X]] over ["tp"] split 1 concat 0 : tensor<4x8xf32> -> tensor<8x4xf32>
  // CHECK: %[[SAME:.*]] = cleave.all_to_all %[[X]] over ["dp", "tp"] split 1 concat 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: %[[B:.*]] = cleave.broadcast %[[I]] over ["dp", "tp"] root 3 : tensor<3xi64>
  // CHECK: return %[[A]], %[[SAME]], %[[B]]
  %0 = cleave.all_to_all %x over ["tp"] split 1 concat 0 : tensor<4x8xf32> -> tensor<8x4xf32>
  %1 = cleave.all_to_all %x over ["dp", "tp"] split 1 concat 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = cleave.broadcast %i over ["dp", "tp"] root 3 : tensor<3xi64>
  return %0, %1, %2 : tensor<8x4xf32>, tensor<4x8xf32>, tensor<3xi64>
}

// Written in the generic form; prints in the custom one.
// CHECK-LABEL: func.func @generic_input
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x4xf32>)
func.func @generic_input(%x: tensor<8x4xf32>) -> tensor<16x4xf32> {
  // CHECK: %[[R:.*]] = cleave.reshard %[[X]] to <{{\[\[}}dp], []], replicated = [tp]> : tensor<8x4xf32>
  // CHECK: %[[AR:.*]] = cleave.all_reduce %[[R]] over ["tp"] : tensor<8x4xf32>
  // CHECK: %[[G:.*]] = cleave.all_gather %[[AR]] over ["dp"] dim 0 : tensor<8x4xf32> -> tensor<16x4xf32>
  // CHECK: %[[RS:.*]] = cleave.reduce_scatter %[[G]] over ["tp"] dim 1 : tensor<16x4xf32> -> tensor<16x2xf32>
  // CHECK: %[[S:.*]] = cleave.all_slice %[[RS]] over ["dp"] dim 1 : tensor<16x2xf32> -> tensor<16x1xf32>
  // CHECK: %[[A:.*]] = cleave.all_to_all %[[S]] over ["dp"] split 0 concat 1 : tensor<16x1xf32> -> tensor<8x2xf32>
  // CHECK: %[[B:.*]] = cleave.broadcast %[[A]] over ["tp"] root 1 : tensor<8x2xf32>
  // CHECK: %[[GB:.*]] = cleave.all_gather %[[B]] over ["tp"] dim 0 : tensor<8x2xf32> -> tensor<16x2xf32>
  // CHECK: %[[GA:.*]] = cleave.all_gather %[[GB]] over ["dp"] dim 1 : tensor<16x2xf32> -> tensor<16x4xf32>
  // CHECK: return %[[GA]]
  %0 = "cleave.reshard"(%x) <{sharding = #cleave.sharding<[[dp], []], replicated = [tp]>}>
      : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %1 = "cleave.all_reduce"(%0) <{axes = ["tp"]}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = "cleave.all_gather"(%1) <{axes = ["dp"], dim = 0 : i64}> : (tensor<8x4xf32>) -> tensor<16x4xf32>
  %3 = "cleave.reduce_scatter"(%2) <{axes = ["tp"], dim = 1 : i64}> : (tensor<16x4xf32>) -> tensor<16x2xf32>
  %4 = "cleave.all_slice"(%3) <{axes = ["dp"], dim = 1 : i64}> : (tensor<16x2xf32>) -> tensor<16x1xf32>
  %5 = "cleave.all_to_all"(%4) <{axes = ["dp"], split_dim = 0 : i64, concat_dim = 1 : i64}>
      : (tensor<16x1xf32>) -> tensor<8x2xf32>
  %6 = "cleave.broadcast"(%5) <{axes = ["tp"], root = 1 : i64}> : (tensor<8x2xf32>) -> tensor<8x2xf32>
  %7 = "cleave.all_gather"(%6) <{axes = ["tp"], dim = 0 : i64}> : (tensor<8x2xf32>) -> tensor<16x2xf32>
  %8 = "cleave.all_gather"(%7) <{axes = ["dp"], dim = 1 : i64}> : (tensor<16x2xf32>) -> tensor<16x4xf32>
  return %8 : tensor<16x4xf32>
}

// CHECK-LABEL: func.func @send_recv
func.func @send_recv(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  // CHECK: cleave.send_recv %{{.*}} over "tp" from 0 to 1 {cleave.stage = 0 : i64} : tensor<4x6xf32>
  %0 = cleave.send_recv %x over "tp" from 0 to 1 {cleave.stage = 0 : i64} : tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

}
