// RUN: cleave-translate --cleave-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// Normalizations are one runtime call each, the same on both targets
// (runtime/KernelsNormalization.cpp, cuda/): layer norm keeps its mean and
// inverse standard deviation for its gradient, softmax's gradient reads
// the softmax's output, log-softmax is softmax with `log` set.

// CPU-LABEL: static void stepPart(
// CPU: layerNorm(x, Shape{4, 8}, 1, g, b, 9.999999747e-06f, [[Y:ln_0]], [[MEAN:ln_1]], [[INV:ln_2]]);  // ln
// CPU: softmax([[Y]], Shape{4, 8}, 1, false, [[P:sm]]);  // sm
// CPU: layerNormGrad(dy, x, Shape{4, 8}, 1, g, [[MEAN]], [[INV]], ln_grad_0, ln_grad_1, ln_grad_2);  // ln_grad
// CPU: softmaxGrad([[P]], dy, Shape{4, 8}, 1, false, sm_grad);  // sm_grad

// The cuda target's trace points are the cpu target's (CUDA events).
// CUDA-LABEL: static void stepPart(
// CUDA: CLEAVE_TRACE_BEGIN(rows[0], microbatch);
// CUDA-NEXT: layerNorm(x, Shape{4, 8}, 1, g, b, 9.999999747e-06f, ln_0, ln_1, ln_2);  // ln
// CUDA-NEXT: CLEAVE_TRACE_END(rows[0], -1);
// CUDA: softmax(ln_0, Shape{4, 8}, 1, false, sm);  // sm
// CUDA: layerNormGrad(dy, x, Shape{4, 8}, 1, g, ln_1, ln_2, ln_grad_0, ln_grad_1, ln_grad_2);  // ln_grad
// CUDA: softmaxGrad(sm, dy, Shape{4, 8}, 1, false, sm_grad);  // sm_grad
module {
  func.func @step(%x: tensor<4x8xf32> {cleave.input = "x"},
                  %g: tensor<8xf32> {cleave.param = "g"},
                  %b: tensor<8xf32> {cleave.param = "b"},
                  %dy: tensor<4x8xf32> {cleave.input = "dy"})
      -> (tensor<4x8xf32> {cleave.output = "y"},
          tensor<4x8xf32> {cleave.output = "p"},
          tensor<4x8xf32> {cleave.output = "dx"},
          tensor<8xf32> {cleave.output = "dg"},
          tensor<8xf32> {cleave.output = "db"},
          tensor<4x8xf32> {cleave.output = "ds"}) {
    %y, %mean, %inv = cleave.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) loc("ln")
    %p = cleave.softmax %y {axis = 1 : i64} : tensor<4x8xf32> loc("sm")
    %dx, %dg, %db = cleave.layer_norm_grad %dy, %x, %g, %mean, %inv {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) loc("ln_grad")
    %ds = cleave.softmax_grad %p, %dy {axis = 1 : i64, log = false} : tensor<4x8xf32> loc("sm_grad")
    return %y, %p, %dx, %dg, %db, %ds : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>
  }
}

// -----

// Batch norm in training updates the running statistics, which the step
// then copies into the state tensors it was given.

// CPU-LABEL: static void stepPart(
// CPU: batchNorm(x, Shape{2, 3, 4, 4}, g, b, rm, rv, 9.999999747e-06f, 8.999999762e-01f, true, [[Y:bn_0]], [[M:bn_1]], [[V:bn_2]]);  // bn
// CPU: batchNormGrad([[Y]], x, Shape{2, 3, 4, 4}, g, 9.999999747e-06f, bn_grad_0, bn_grad_1, bn_grad_2);  // bn_grad
// CPU: softmax(x, Shape{2, 3, 4, 4}, 1, true, lsm);  // lsm
// CPU: static void trainStep(StepContext &ctx) {
// CPU: std::copy_n([[M]], 3, rm);  // update rm
// CPU-NEXT: std::copy_n([[V]], 3, rv);  // update rv

// CUDA-LABEL: static void stepPart(
// CUDA: batchNorm(x, Shape{2, 3, 4, 4}, g, b, rm, rv, 9.999999747e-06f, 8.999999762e-01f, true, bn_0, bn_1, bn_2);  // bn
// CUDA-LABEL: static void trainStep(StepContext &ctx) {
// CUDA: copyN(bn_1, 3, rm);  // update rm
module {
  func.func @step(%x: tensor<2x3x4x4xf32> {cleave.input = "x"},
                  %g: tensor<3xf32> {cleave.param = "g"},
                  %b: tensor<3xf32> {cleave.param = "b"},
                  %rm: tensor<3xf32> {cleave.state = "rm"},
                  %rv: tensor<3xf32> {cleave.state = "rv"})
      -> (tensor<2x3x4x4xf32> {cleave.output = "y"},
          tensor<3xf32> {cleave.update = "rm"},
          tensor<3xf32> {cleave.update = "rv"},
          tensor<2x3x4x4xf32> {cleave.output = "dx"},
          tensor<3xf32> {cleave.output = "dg"},
          tensor<3xf32> {cleave.output = "db"},
          tensor<2x3x4x4xf32> {cleave.output = "l"}) {
    %y, %m, %v = cleave.batch_norm %x, %g, %b, %rm, %rv {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, training = true} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) loc("bn")
    %dx, %dg, %db = cleave.batch_norm_grad %y, %x, %g {epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) loc("bn_grad")
    %l = cleave.log_softmax %x {axis = 1 : i64} : tensor<2x3x4x4xf32> loc("lsm")
    return %y, %m, %v, %dx, %dg, %db, %l : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32>
  }
}
