// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda %s | FileCheck %s --check-prefix=CUDA

// The sums of a BatchNorm over a batch split over ranks are one runtime
// call each, the same on both targets (runtime/KernelsBatchNorm.cpp,
// cuda/KernelsNormalization.cu): the divisor and the whole batch's count
// are the attributes, the forward kernel takes the mean and variance as
// its batch statistics, the gradient the all-reduced sums.

// CPU-LABEL: static void stepPart(
// CPU: batchNormSum(x, Shape{2, 3, 4, 4}, 64, [[S:s]]);  // s
// CPU: batchNormSquaredDeviationSum(x, Shape{2, 3, 4, 4}, [[S]], 64, [[D:d]]);  // d
// CPU: batchNorm(x, Shape{2, 3, 4, 4}, g, b, rm, rv, 9.999999747e-06f, 8.999999762e-01f, true, [[Y:bn_0]], bn_1, bn_2, [[S]], [[D]]);  // bn
// CPU: batchNormGradSums(dy, x, Shape{2, 3, 4, 4}, [[S]], [[G0:sums_0]], [[G1:sums_1]]);  // sums
// CPU: batchNormGradFromSums(dy, x, Shape{2, 3, 4, 4}, g, [[S]], [[D]], [[G0]], [[G1]], 64, 9.999999747e-06f, grad_0, grad_1, grad_2);  // grad

// CUDA-LABEL: static void stepPart(
// CUDA: batchNormSum(x, Shape{2, 3, 4, 4}, 64, s);  // s
// CUDA: batchNormSquaredDeviationSum(x, Shape{2, 3, 4, 4}, s, 64, d);  // d
// CUDA: batchNormGradSums(dy, x, Shape{2, 3, 4, 4}, s, sums_0, sums_1);  // sums
// CUDA: batchNormGradFromSums(dy, x, Shape{2, 3, 4, 4}, g, s, d, sums_0, sums_1, 64, 9.999999747e-06f, grad_0, grad_1, grad_2);  // grad
module {
  func.func @step(%x: tensor<2x3x4x4xf32> {cleave.input = "x"},
                  %dy: tensor<2x3x4x4xf32> {cleave.input = "dy"},
                  %g: tensor<3xf32> {cleave.param = "g"},
                  %b: tensor<3xf32> {cleave.param = "b"},
                  %rm: tensor<3xf32> {cleave.state = "rm"},
                  %rv: tensor<3xf32> {cleave.state = "rv"})
      -> (tensor<2x3x4x4xf32> {cleave.output = "y"},
          tensor<3xf32> {cleave.update = "rm"},
          tensor<3xf32> {cleave.update = "rv"},
          tensor<2x3x4x4xf32> {cleave.output = "dx"},
          tensor<3xf32> {cleave.output = "dg"},
          tensor<3xf32> {cleave.output = "db"}) {
    %s = cleave.batch_norm_sum %x {divisor = 64 : i64} : tensor<2x3x4x4xf32> -> tensor<3xf32> loc("s")
    %d = cleave.batch_norm_squared_deviation_sum %x, %s {divisor = 64 : i64} : (tensor<2x3x4x4xf32>, tensor<3xf32>) -> tensor<3xf32> loc("d")
    %y, %m, %v = cleave.batch_norm %x, %g, %b, %rm, %rv, %s, %d {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, training = true} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) loc("bn")
    %sdy, %sdyc = cleave.batch_norm_grad_sums %dy, %x, %s : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) loc("sums")
    %dx, %dg, %db = cleave.batch_norm_grad_from_sums %dy, %x, %g, %s, %d, %sdy, %sdyc {count = 64 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) loc("grad")
    return %y, %m, %v, %dx, %dg, %db : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
  }
}
