// RUN: cleave-opt %s --cleave-pipeline-stages="axis=pp link-balance=0" --split-input-file | FileCheck %s

// These cases test where ops run once the forward pass is cut; at their
// tiny sizes the bytes crossing a cut would decide every cut, so the cut
// balances work alone (link-balance=0; cleave-pipeline-stages-cut.test
// weighs transfers).

// A two-layer training step (cleave compile --emit=mlir of MatMul, Relu,
// MatMul, SoftmaxCrossEntropyLoss with SGD) split into two stages: the
// first MatMul is most of the forward work and forms stage 0, with the
// Relu right after the cut; w1 and its update live there, w2, the loss and
// the backward pass up to w1's gradient in stage 1. What crosses: the
// Relu's output (forward; the Relu's gradient reads it too) and w1's
// gradient (3x4, fewer bytes than the 4x4 activation gradient it
// is computed from). Ops on constants, inputs and the step run in the
// stages that read them (here only stage 1: the loss gradient's seed and
// x's transpose); constants stay shared.

// CHECK: module attributes {{{.*}}cleave.pipeline = "pp"
// CHECK: %arg2: tensor<3x4xf32> {cleave.param = "w1", {{[^}]*}}cleave.stage = 0 : i64}
// CHECK-SAME: %arg3: tensor<4x2xf32> {cleave.param = "w2", {{[^}]*}}cleave.stage = 1 : i64}
// CHECK-SAME: -> (tensor<f32> {cleave.loss, {{[^}]*}}cleave.stage = 1 : i64}, tensor<3x4xf32> {{{[^}]*}}cleave.stage = 0 : i64, cleave.update = "w1"}, tensor<4x2xf32> {{{[^}]*}}cleave.stage = 1 : i64, cleave.update = "w2"})
// CHECK: %[[H:.*]] = cleave.matmul %arg0, %arg2 {cleave.stage = 0 : i64}
// CHECK-NEXT: %[[R:.*]] = cleave.relu %[[H]] {cleave.stage = 0 : i64}
// CHECK-NEXT: %[[R1:.*]] = cleave.send_recv %[[R]] over "pp" from 0 to 1 : tensor<4x4xf32>
// CHECK-NEXT: cleave.matmul %[[R1]], %arg3 {cleave.stage = 1 : i64}
// CHECK: cleave.softmax_cross_entropy {{[^}]*}}cleave.stage = 1 : i64
// CHECK: cleave.div %{{.*}}, %{{.*}} {cleave.stage = 1 : i64} : (tensor<f32>, tensor<f32>)
// CHECK: cleave.transpose %arg0 {cleave.stage = 1 : i64
// CHECK: %[[GW1:.*]] = cleave.matmul {{[^}]*}}cleave.stage = 1 : i64} : (tensor<3x4xf32>, tensor<4x4xf32>)
// CHECK-NEXT: %[[GW1R:.*]] = cleave.send_recv %[[GW1]] over "pp" from 1 to 0 : tensor<3x4xf32>
// CHECK-NEXT: cleave.sgd %arg2, %[[GW1R]] {{[^}]*}}cleave.stage = 0 : i64
// CHECK-NEXT: cleave.sgd %arg3, {{[^}]*}}cleave.stage = 1 : i64
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

// The same step trained by one ONNX Momentum op over both weights (a
// training_info model's algorithm): split into one Momentum per stage,
// each over its stage's weight and velocity; the learning rate and the
// step, which both read, do not tie either to a stage. Until 2026-11-27
// such a model with pipeline stages and micro-batches was refused ("reads
// parameters of pipeline stages 1 and 0"; the step had been placed on
// stage 1 by an earlier reader).

// CHECK-LABEL: func.func @two_momentum
// CHECK-SAME: %arg5: tensor<3x4xf32> {{{[^}]*}}cleave.stage = 0 : i64, cleave.state = "v1"}
// CHECK-SAME: %arg6: tensor<4x2xf32> {{{[^}]*}}cleave.stage = 1 : i64, cleave.state = "v2"}
// CHECK: cleave.momentum %{{.*}}, %{{.*}} params(%arg2) grads(%{{.*}}) velocities(%arg5) {{{[^}]*}}cleave.stage = 0 : i64
// CHECK: cleave.momentum %{{.*}}, %{{.*}} params(%arg3) grads(%{{.*}}) velocities(%arg6) {{{[^}]*}}cleave.stage = 1 : i64
module attributes {cleave.mesh = #cleave.mesh<pp = 2>} {
  func.func @two_momentum(%arg0: tensor<4x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>}, %arg1: tensor<4xi64> {cleave.input = "y", cleave.sharding = #cleave.sharding<[[]]>}, %arg2: tensor<3x4xf32> {cleave.param = "w1", cleave.sharding = #cleave.sharding<[[], []]>}, %arg3: tensor<4x2xf32> {cleave.param = "w2", cleave.sharding = #cleave.sharding<[[], []]>}, %arg4: tensor<i64> {cleave.sharding = #cleave.sharding<[]>, cleave.step}, %arg5: tensor<3x4xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.state = "v1"}, %arg6: tensor<4x2xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.state = "v2"}, %arg7: tensor<f32> {cleave.input = "lr", cleave.sharding = #cleave.sharding<[]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}, tensor<3x4xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "w1"}, tensor<4x2xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "w2"}, tensor<3x4xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "v1"}, tensor<4x2xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "v2"}) {
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
    %17:4 = cleave.momentum %arg7, %arg4 params(%arg2, %arg3) grads(%16, %12) velocities(%arg5, %arg6) {alpha = 0.899999976 : f32, beta = 1.000000e+00 : f32, mode = #cleave.momentum_mode<standard>, norm_coefficient = 0.000000e+00 : f32} : (tensor<f32>, tensor<i64>, tensor<3x4xf32>, tensor<4x2xf32>, tensor<3x4xf32>, tensor<4x2xf32>, tensor<3x4xf32>, tensor<4x2xf32>) -> (tensor<3x4xf32>, tensor<4x2xf32>, tensor<3x4xf32>, tensor<4x2xf32>)
    return %6, %17#0, %17#1, %17#2, %17#3 : tensor<f32>, tensor<3x4xf32>, tensor<4x2xf32>, tensor<3x4xf32>, tensor<4x2xf32>
  }
}

// -----

// A residual connection (forward only): the first MatMul (its input 64
// wide) is most of the work and forms stage 0; the Relu after the cut is
// not the only forward reader of its operand, so it stays in stage 1 with
// the Add; moved to stage 0, both the Relu's input and output would cross.

// CHECK-LABEL: func.func @residual
// CHECK: %[[H:.*]] = cleave.matmul %arg0, %arg2 {cleave.stage = 0 : i64}
// CHECK-NEXT: %[[H1:.*]] = cleave.send_recv %[[H]] over "pp" from 0 to 1 : tensor<4x4xf32>
// CHECK-NEXT: %[[R:.*]] = cleave.relu %[[H1]] {cleave.stage = 1 : i64}
// CHECK-NEXT: cleave.add %[[R]], %[[H1]] {cleave.stage = 1 : i64}
// CHECK-NOT: send_recv
module attributes {cleave.mesh = #cleave.mesh<pp = 2>} {
  func.func @residual(%arg0: tensor<4x64xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>}, %arg1: tensor<4xi64> {cleave.input = "y", cleave.sharding = #cleave.sharding<[[]]>}, %arg2: tensor<64x4xf32> {cleave.param = "w1", cleave.sharding = #cleave.sharding<[[], []]>}, %arg3: tensor<4x2xf32> {cleave.param = "w2", cleave.sharding = #cleave.sharding<[[], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}) {
    %3 = cleave.matmul %arg0, %arg2 : (tensor<4x64xf32>, tensor<64x4xf32>) -> tensor<4x4xf32>
    %4 = cleave.relu %3 : tensor<4x4xf32>
    %5 = cleave.add %4, %3 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = cleave.matmul %5, %arg3 : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %loss, %log_prob = cleave.softmax_cross_entropy %6, %arg1 {reduction = #cleave.reduction<sum>} : (tensor<4x2xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x2xf32>)
    return %loss : tensor<f32>
  }
}
