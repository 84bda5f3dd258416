// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s
// RUN: cleave-translate --cleave-to-cuda %s | FileCheck %s --check-prefix=CUDA

// A plain-SGD update of a convolution weight whose gradient nothing else
// reads runs inside the weight gradient (cpu target: convGradWeightSgd,
// the gradient never stored), when nothing between the two reads the
// weight. w1's input gradient is computed after its weight gradient, so
// w1's update stays apart; the cuda target keeps both apart. w2, which
// only its convolution and input gradient read and only its fused update
// writes, has a CroppedWeight for the three calls (runtime/CroppedWeight.h);
// w0, which no pass reads, and w1, which an unfused update writes, have
// none. w3's update reads a copy of it computed after its weight gradient
// (a partitioned program's slice of a replicated weight, taken for the
// update): fused, the update would run before the copy holds the weight,
// which would then overwrite it (the update lost), so it stays apart.
// Weight gradients after an input gradient of the same dy say so (`true`).

// CHECK: static CroppedWeight [[TAPS:weightTaps[_0-9]*]];
// CHECK-NOT: static CroppedWeight
// CHECK-LABEL: static void stepPart(
// CHECK: CroppedWeight &[[W2TAPS:[a-zA-Z0-9_]+]] = *static_cast<CroppedWeight *>
// CHECK: conv(x1, Shape{2, 3, 1, 1}, w2, Shape{4, 3, 3, 3}, nullptr, {{.*}}, [[W2TAPS]]);  // y2
// CHECK: convGradInput(dy1, Shape{2, 4, 1, 1}, w2, Shape{4, 3, 3, 3}, {{.*}}, [[W2TAPS]]);  // w2_dx
// CHECK: convGradWeightSgd(dy1, {{.*}}, w2, Shape{4, 3, 3, 3}, &[[W2TAPS]], true);  // w2_dw
// CHECK: convGradWeightSgd(dy, Shape{2, 4, 6, 6}, x, Shape{2, 3, 6, 6}, {{.*}}, 1, 1.000000015e-01f, w0, Shape{4, 3, 3, 3});  // w0_dw
// CHECK: convGradWeight(dy, Shape{2, 4, 6, 6}, x, Shape{2, 3, 6, 6}, {{.*}}, 1, [[DW1:[a-z0-9_]+]], Shape{4, 3, 3, 3});  // w1_dw
// CHECK: convGradInput(dy, Shape{2, 4, 6, 6}, w1,
// CHECK: // w0.sgd: in the weight gradient's convGradWeightSgd
// CHECK: sgdUpdate(w1, [[DW1]],
// CHECK: convGradWeight(dy, {{.*}}, [[DW3:[a-z0-9_]+]], Shape{4, 3, 3, 3}, true);  // w3_dw
// CHECK: sgdUpdate({{[a-z0-9_]+}}, [[DW3]],

// CUDA-NOT: CroppedWeight
// CUDA-LABEL: static void stepPart(
// CUDA-NOT: convGradWeightSgd
// CUDA: sgdUpdate(w0,
module {
  func.func @step(%x: tensor<2x3x6x6xf32> {cleave.input = "x"},
                  %dy: tensor<2x4x6x6xf32> {cleave.input = "dy"},
                  %w0: tensor<4x3x3x3xf32> {cleave.param = "w0"},
                  %w1: tensor<4x3x3x3xf32> {cleave.param = "w1"},
                  %t: tensor<i64> {cleave.input = "t"},
                  %x1: tensor<2x3x1x1xf32> {cleave.input = "x1"},
                  %dy1: tensor<2x4x1x1xf32> {cleave.input = "dy1"},
                  %w2: tensor<4x3x3x3xf32> {cleave.param = "w2"},
                  %w3: tensor<4x3x3x3xf32> {cleave.param = "w3"})
      -> (tensor<4x3x3x3xf32> {cleave.output = "w0_new"},
          tensor<4x3x3x3xf32> {cleave.output = "w1_new"},
          tensor<2x3x6x6xf32> {cleave.output = "dx"},
          tensor<2x4x1x1xf32> {cleave.output = "y2"},
          tensor<2x3x1x1xf32> {cleave.output = "dx2"},
          tensor<4x3x3x3xf32> {cleave.output = "w2_new"},
          tensor<4x3x3x3xf32> {cleave.output = "w3_new"}) {
    %y2 = cleave.conv %x1, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x3x1x1xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x1x1xf32> loc("y2")
    %dx2 = cleave.conv_grad_input %dy1, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x1x1xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x1x1xf32> loc("w2_dx")
    %dw2 = cleave.conv_grad_weight %dy1, %x1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x1x1xf32>, tensor<2x3x1x1xf32>) -> tensor<4x3x3x3xf32> loc("w2_dw")
    %w2n = cleave.sgd %w2, %dw2 step(%t) {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32} : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<i64>) -> tensor<4x3x3x3xf32> loc("w2.sgd")
    %dw0 = cleave.conv_grad_weight %dy, %x {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x3x6x6xf32>) -> tensor<4x3x3x3xf32> loc("w0_dw")
    %dw1 = cleave.conv_grad_weight %dy, %x {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x3x6x6xf32>) -> tensor<4x3x3x3xf32> loc("w1_dw")
    %dx = cleave.conv_grad_input %dy, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x6x6xf32> loc("w1_dx")
    %w0n = cleave.sgd %w0, %dw0 step(%t) {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32} : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<i64>) -> tensor<4x3x3x3xf32> loc("w0.sgd")
    %w1n = cleave.sgd %w1, %dw1 step(%t) {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32} : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<i64>) -> tensor<4x3x3x3xf32> loc("w1.sgd")
    %dw3 = cleave.conv_grad_weight %dy, %x {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x3x6x6xf32>) -> tensor<4x3x3x3xf32> loc("w3_dw")
    %w3c = cleave.add %w3, %w3 : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32> loc("w3_copy")
    %w3n = cleave.sgd %w3c, %dw3 step(%t) {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32} : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<i64>) -> tensor<4x3x3x3xf32> loc("w3.sgd")
    return %w0n, %w1n, %dx, %y2, %dx2, %w2n, %w3n : tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<2x3x6x6xf32>, tensor<2x4x1x1xf32>, tensor<2x3x1x1xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>
  }
}
