// RUN: cleave-translate --cleave-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// Attention's scale and mask run inside the softmax's line loop
// (codegen/FusionPlan.h, SoftmaxFusion; runtime softmaxMasked): GPT's
// causal form, where(tril, scores * scale, -inf), is one call on both
// targets, and the scaled and masked scores get no buffer: the only
// scratch is the softmax's output, 2*2*8*8 floats (1024 bytes); unfused
// it was three such buffers.

// CPU: Scratch memory (static plan): 1024 bytes
// CPU-LABEL: static void stepPart(
// CPU: // fused softmax: scale mask sm
// CPU-NEXT: softmaxMasked(x, Shape{2, 2, 8, 8}, 3, false, SoftmaxMasking{s, false, nullptr, tril, true, neg_inf, Shape{1, 1, 8, 8}}, [[Y:sm]]);  // sm
// CPU-NOT: mapBinary
// CPU-NOT: mapTernary
// CPU-NOT: where

// CUDA: Scratch memory (static plan): 1024 bytes
// CUDA-LABEL: static void stepPart(
// CUDA: softmaxMasked(x, Shape{2, 2, 8, 8}, 3, false, SoftmaxMasking{s, false, nullptr, tril, true, neg_inf, Shape{1, 1, 8, 8}}, sm);  // sm
// CUDA-NOT: mapBinary
module {
  func.func @step(%x: tensor<2x2x8x8xf32> {cleave.input = "x"},
                  %tril: tensor<1x1x8x8xi1> {cleave.input = "tril"})
      -> (tensor<2x2x8x8xf32> {cleave.output = "y"}) {
    %s = cleave.constant dense<0.35> : tensor<f32> loc("s")
    %ninf = cleave.constant dense<0xFF800000> : tensor<f32> loc("neg_inf")
    %0 = cleave.mul %x, %s : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8x8xf32> loc("scale")
    %1 = cleave.where %tril, %0, %ninf : (tensor<1x1x8x8xi1>, tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8x8xf32> loc("mask")
    %2 = cleave.softmax %1 {axis = 3 : i64} : tensor<2x2x8x8xf32> loc("sm")
    return %2 : tensor<2x2x8x8xf32>
  }
}

// -----

// nn.MultiheadAttention's key padding mask: an additive [B*H, 1, S] mask
// after a division by a scale computed at run time (any one-element
// tensor), the mask either operand of the add.

// CPU-LABEL: static void stepPart(
// CPU: softmaxMasked(x, Shape{8, 6, 6}, 2, false, SoftmaxMasking{s, true, pad, nullptr, true, nullptr, Shape{8, 1, 6}}, sm);  // sm
// CPU-NOT: mapBinary
module {
  func.func @step(%x: tensor<8x6x6xf32> {cleave.input = "x"},
                  %pad: tensor<8x1x6xf32> {cleave.input = "pad"},
                  %s: tensor<1xf32> {cleave.input = "s"})
      -> (tensor<8x6x6xf32> {cleave.output = "y"}) {
    %0 = cleave.div %x, %s : (tensor<8x6x6xf32>, tensor<1xf32>) -> tensor<8x6x6xf32> loc("scale")
    %1 = cleave.add %pad, %0 : (tensor<8x1x6xf32>, tensor<8x6x6xf32>) -> tensor<8x6x6xf32> loc("mask")
    %2 = cleave.softmax %1 {axis = 2 : i64} : tensor<8x6x6xf32> loc("sm")
    return %2 : tensor<8x6x6xf32>
  }
}

// -----

// The backward pass: the where-mask's gradient (a zero fill) and the scale
// applied to softmax_grad's result in its line loop; the softmax_grad's own
// result is never stored (scratch: the one 1024-byte result).

// CPU: Scratch memory (static plan): 1024 bytes
// CPU-LABEL: static void stepPart(
// CPU: // fused softmax: sm_grad mask_grad scale_grad
// CPU-NEXT: softmaxGradMasked(y, dy, Shape{2, 2, 8, 8}, 3, false, SoftmaxMasking{s, false, nullptr, tril, true, zero, Shape{1, 1, 8, 8}}, scale_grad);  // scale_grad
// CPU-NOT: softmaxGrad(

// CUDA-LABEL: static void stepPart(
// CUDA: softmaxGradMasked(y, dy, Shape{2, 2, 8, 8}, 3, false, SoftmaxMasking{s, false, nullptr, tril, true, zero, Shape{1, 1, 8, 8}}, scale_grad);  // scale_grad
module {
  func.func @step(%y: tensor<2x2x8x8xf32> {cleave.input = "y"},
                  %dy: tensor<2x2x8x8xf32> {cleave.input = "dy"},
                  %tril: tensor<1x1x8x8xi1> {cleave.input = "tril"})
      -> (tensor<2x2x8x8xf32> {cleave.output = "dx"}) {
    %s = cleave.constant dense<0.35> : tensor<f32> loc("s")
    %zero = cleave.constant dense<0.0> : tensor<f32> loc("zero")
    %0 = cleave.softmax_grad %y, %dy {axis = 3 : i64, log = false} : tensor<2x2x8x8xf32> loc("sm_grad")
    %1 = cleave.where %tril, %0, %zero : (tensor<1x1x8x8xi1>, tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8x8xf32> loc("mask_grad")
    %2 = cleave.mul %1, %s : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8x8xf32> loc("scale_grad")
    return %2 : tensor<2x2x8x8xf32>
  }
}

// -----

// masked_fill(pad, -1e9) is where(pad, fill, scores): kept where the
// condition is false. A scaled value read twice stays a buffer the kernel
// reads, unscaled then; a log-softmax fuses too.

// CPU-LABEL: static void stepPart(
// CPU: mapBinary(x, Shape{2, 4, 40}, s, Shape{}, [[SCALED:scale]], Shape{2, 4, 40}, body::Mul{});  // scale
// CPU: softmaxMasked([[SCALED]], Shape{2, 4, 40}, 2, true, SoftmaxMasking{nullptr, false, nullptr, pad, false, fill, Shape{2, 1, 40}}, lsm);  // lsm
module {
  func.func @step(%x: tensor<2x4x40xf32> {cleave.input = "x"},
                  %pad: tensor<2x1x40xi1> {cleave.input = "pad"})
      -> (tensor<2x4x40xf32> {cleave.output = "y"},
          tensor<2x4x40xf32> {cleave.output = "scaled"}) {
    %s = cleave.constant dense<0.35> : tensor<f32> loc("s")
    %fill = cleave.constant dense<-1.0e9> : tensor<f32> loc("fill")
    %0 = cleave.mul %x, %s : (tensor<2x4x40xf32>, tensor<f32>) -> tensor<2x4x40xf32> loc("scale")
    %1 = cleave.where %pad, %fill, %0 : (tensor<2x1x40xi1>, tensor<f32>, tensor<2x4x40xf32>) -> tensor<2x4x40xf32> loc("mask")
    %2 = cleave.log_softmax %1 {axis = 2 : i64} : tensor<2x4x40xf32> loc("lsm")
    return %2, %0 : tensor<2x4x40xf32>, tensor<2x4x40xf32>
  }
}

// -----

// Not a pattern: a mask added after a softmax, a where whose other
// operand is not a scalar. Both stay ops of their own.

// CPU-LABEL: static void stepPart(
// CPU: softmax(x, Shape{4, 8}, 1, false, sm);  // sm
// CPU: mapTernary
// CPU: softmax(mask, Shape{4, 8}, 1, false, sm2);  // sm2
// CPU-NOT: softmaxMasked
module {
  func.func @step(%x: tensor<4x8xf32> {cleave.input = "x"},
                  %c: tensor<1x8xi1> {cleave.input = "c"},
                  %m: tensor<4x8xf32> {cleave.input = "m"})
      -> (tensor<4x8xf32> {cleave.output = "y"}) {
    %0 = cleave.softmax %x {axis = 1 : i64} : tensor<4x8xf32> loc("sm")
    %1 = cleave.where %c, %0, %m : (tensor<1x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("mask")
    %2 = cleave.softmax %1 {axis = 1 : i64} : tensor<4x8xf32> loc("sm2")
    return %2 : tensor<4x8xf32>
  }
}
