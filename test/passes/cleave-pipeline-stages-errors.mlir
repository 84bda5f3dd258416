// Refusals of cleave-pipeline-stages, each naming what to change.

// RUN: not cleave-opt %s --cleave-pipeline-stages="axis=pp schedule=bogus" --split-input-file 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// SCHEDULE: error: unknown pipeline schedule 'bogus'; use gpipe, 1f1b or interleaved

// RUN: not cleave-opt %s --cleave-pipeline-stages="axis=pp virtual-stages=2" --split-input-file 2>&1 | FileCheck %s --check-prefix=VIRTUAL
// VIRTUAL: error: virtual-stages = 2: the interleaved schedule needs at least 2 chunks per stage, the others exactly 1

// One micro-batch does not come in groups of the 2 stages.
// RUN: not cleave-opt %s --cleave-pipeline-stages="axis=pp schedule=interleaved virtual-stages=2" --split-input-file 2>&1 | FileCheck %s --check-prefix=GROUPS
// GROUPS: error: the interleaved schedule runs micro-batches in groups of the stage count: 1 micro-batches do not divide into groups of 2

// A backward op of micro-batch 0 that reads micro-batch 1's forward value
// (a data flow across micro-batches): 1F1B would run it before micro-batch
// 1's forward pass.
// RUN: not cleave-opt %s --cleave-pipeline-stages="axis=pp schedule=1f1b" --split-input-file 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: the 1f1b schedule cannot order this step: on stage 0, the backward pass of micro-batch 0 (chunk 0) needs values of the forward pass of micro-batch 1 (chunk 0), which that schedule runs later; use the gpipe schedule

module attributes {cleave.mesh = #cleave.mesh<pp = 2>} {
  func.func @two(%arg0: tensor<4x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>}, %arg1: tensor<4xi64> {cleave.input = "y", cleave.sharding = #cleave.sharding<[[]]>}, %arg2: tensor<3x4xf32> {cleave.param = "w1", cleave.sharding = #cleave.sharding<[[], []]>}, %arg3: tensor<4x2xf32> {cleave.param = "w2", cleave.sharding = #cleave.sharding<[[], []]>}, %arg4: tensor<i64> {cleave.sharding = #cleave.sharding<[]>, cleave.step}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}, tensor<3x4xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "w1"}, tensor<4x2xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "w2"}) {
    %0 = cleave.constant dense<0.000000e+00> : tensor<f32>
    %1 = cleave.constant dense<1.000000e+00> : tensor<f32>
    %2 = cleave.constant dense<4.000000e+00> : tensor<f32>
    %3 = cleave.matmul %arg0, %arg2 : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %4 = cleave.relu %3 : tensor<4x4xf32>
    %5 = cleave.matmul %4, %arg3 : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %loss, %log_prob = cleave.softmax_cross_entropy %5, %arg1 {reduction = #cleave.reduction<sum>} : (tensor<4x2xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x2xf32>)
    %6 = cleave.div %loss, %2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %7 = cleave.div %1, %2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %8 = cleave.softmax_cross_entropy_grad %7, %log_prob, %arg1 {reduction = #cleave.reduction<sum>} : (tensor<f32>, tensor<4x2xf32>, tensor<4xi64>) -> tensor<4x2xf32>
    %9 = cleave.transpose %arg3 {permutation = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
    %10 = cleave.matmul %8, %9 : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %11 = cleave.transpose %4 {permutation = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %12 = cleave.matmul %11, %8 : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %13 = cleave.less %0, %4 : (tensor<f32>, tensor<4x4xf32>) -> tensor<4x4xi1>
    %14 = cleave.where %13, %10, %0 : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %15 = cleave.transpose %arg0 {permutation = array<i64: 1, 0>} : tensor<4x3xf32> -> tensor<3x4xf32>
    %16 = cleave.matmul %15, %14 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %17 = cleave.sgd %arg2, %16 step(%arg4) {dampening = 0.000000e+00 : f32, lr = 1.000000e-01 : f32, momentum = 0.000000e+00 : f32, nesterov = false, weight_decay = 0.000000e+00 : f32} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
    %18 = cleave.sgd %arg3, %12 step(%arg4) {dampening = 0.000000e+00 : f32, lr = 1.000000e-01 : f32, momentum = 0.000000e+00 : f32, nesterov = false, weight_decay = 0.000000e+00 : f32} : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<i64>) -> tensor<4x2xf32>
    return %6, %17, %18 : tensor<f32>, tensor<3x4xf32>, tensor<4x2xf32>
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<pp = 1>} {
  func.func @mixed(%x: tensor<4x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>}, %w: tensor<3x2xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<[[], []]>}, %step: tensor<i64> {cleave.sharding = #cleave.sharding<[]>, cleave.step}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}, tensor<3x2xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "w"}) {
    %a0 = cleave.matmul %x, %w {cleave.microbatch = array<i64: 0, 0>} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %a1 = cleave.matmul %x, %w {cleave.microbatch = array<i64: 1, 0>} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %s0 = cleave.reduce_sum %a0 {axes = array<i64: 0, 1>, keepdims = false, cleave.microbatch = array<i64: 0, 1>} : tensor<4x2xf32> -> tensor<f32>
    %s1 = cleave.reduce_sum %a1 {axes = array<i64: 0, 1>, keepdims = false, cleave.microbatch = array<i64: 1, 1>} : tensor<4x2xf32> -> tensor<f32>
    %loss = cleave.add %s0, %s1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %t = cleave.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x3xf32> -> tensor<3x4xf32>
    %g0 = cleave.matmul %t, %a1 {cleave.microbatch = array<i64: 0, 2>} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %g1 = cleave.matmul %t, %a0 {cleave.microbatch = array<i64: 1, 2>} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %g = cleave.add %g0, %g1 : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
    %u = cleave.sgd %w, %g step(%step) {dampening = 0.000000e+00 : f32, lr = 1.000000e-01 : f32, momentum = 0.000000e+00 : f32, nesterov = false, weight_decay = 0.000000e+00 : f32} : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<i64>) -> tensor<3x2xf32>
    return %loss, %u : tensor<f32>, tensor<3x2xf32>
  }
}
