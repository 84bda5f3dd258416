// RUN: cleave-translate --cleave-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// The softmax fusion (codegen/FusionPlan.h, SoftmaxFusion) along an inner
// axis, not only the last: gradcheck/nll.onnxtxt's LogSoftmax(x + p,
// axis=1), whose [3, 2] mask steps by 2 along the axis (the masked
// kernels' line walk once recursed forever on such a step; the kernels
// are checked against a naive reference in test/unit/shared-bodies/
// RowBodiesTest.cpp, MaskedSoftmaxMatchesNaiveReference).

// CPU-LABEL: static void stepPart(
// CPU: softmaxMasked(x, Shape{8, 3, 2}, 1, true, SoftmaxMasking{nullptr, false, p, nullptr, true, nullptr, Shape{3, 2}}, lsm);  // lsm
// CPU-NOT: mapBinary

// CUDA-LABEL: static void stepPart(
// CUDA: softmaxMasked(x, Shape{8, 3, 2}, 1, true, SoftmaxMasking{nullptr, false, p, nullptr, true, nullptr, Shape{3, 2}}, lsm);  // lsm
// CUDA-NOT: mapBinary
module {
  func.func @step(%x: tensor<8x3x2xf32> {cleave.input = "x"},
                  %p: tensor<3x2xf32> {cleave.input = "p"})
      -> (tensor<8x3x2xf32> {cleave.output = "y"}) {
    %0 = cleave.add %x, %p : (tensor<8x3x2xf32>, tensor<3x2xf32>) -> tensor<8x3x2xf32> loc("mask")
    %1 = cleave.log_softmax %0 {axis = 1 : i64} : tensor<8x3x2xf32> loc("lsm")
    return %1 : tensor<8x3x2xf32>
  }
}

// -----

// Backward along dim 1 of 4: the where and the scale in softmax_grad's
// line loop, the condition broadcast along dims 0 and 2.

// CPU-LABEL: static void stepPart(
// CPU: softmaxGradMasked(y, dy, Shape{4, 3, 2, 2}, 1, false, SoftmaxMasking{s, true, nullptr, c, true, zero, Shape{3, 1, 2}}, scale_grad);  // scale_grad
// CPU-NOT: softmaxGrad(

// CUDA-LABEL: static void stepPart(
// CUDA: softmaxGradMasked(y, dy, Shape{4, 3, 2, 2}, 1, false, SoftmaxMasking{s, true, nullptr, c, true, zero, Shape{3, 1, 2}}, scale_grad);  // scale_grad
module {
  func.func @step(%y: tensor<4x3x2x2xf32> {cleave.input = "y"},
                  %dy: tensor<4x3x2x2xf32> {cleave.input = "dy"},
                  %c: tensor<3x1x2xi1> {cleave.input = "c"})
      -> (tensor<4x3x2x2xf32> {cleave.output = "dx"}) {
    %s = cleave.constant dense<2.5> : tensor<f32> loc("s")
    %zero = cleave.constant dense<0.0> : tensor<f32> loc("zero")
    %0 = cleave.softmax_grad %y, %dy {axis = 1 : i64, log = false} : tensor<4x3x2x2xf32> loc("sm_grad")
    %1 = cleave.where %c, %0, %zero : (tensor<3x1x2xi1>, tensor<4x3x2x2xf32>, tensor<f32>) -> tensor<4x3x2x2xf32> loc("mask_grad")
    %2 = cleave.div %1, %s : (tensor<4x3x2x2xf32>, tensor<f32>) -> tensor<4x3x2x2xf32> loc("scale_grad")
    return %2 : tensor<4x3x2x2xf32>
  }
}
