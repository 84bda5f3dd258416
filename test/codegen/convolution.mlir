// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda %s | FileCheck %s --check-prefix=CUDA

// Convolutions and pools are one runtime call each, with their strides,
// pads, dilations and kernel as local arrays named after the node
// (runtime/KernelsConvolution.cpp; cuDNN on the cuda target, with the same
// calls). Max pooling's gradient reads the pool's input and output.
// A weight gradient after the input gradient of the same output gradient
// tells the cpu runtime so (`true`: oneDNN's passes may share that
// gradient's reorder); one before it, or of another value, does not.

// CPU-LABEL: static void stepPart(
// CPU: const int64_t conv1_strides[] = {1, 1};
// CPU-NEXT: const int64_t conv1_pads[] = {1, 1, 1, 1};
// CPU-NEXT: const int64_t conv1_dilations[] = {1, 1};
// CPU-NEXT: conv(x, Shape{2, 1, 6, 6}, w, Shape{4, 1, 3, 3}, b, conv1_strides, conv1_pads, conv1_dilations, 1, [[C:conv1]], Shape{2, 4, 6, 6});  // conv1
// CPU: const int64_t pool1_kernel[] = {2, 2};
// CPU: maxPool([[C]], Shape{2, 4, 6, 6}, pool1_kernel, pool1_strides, pool1_pads, pool1_dilations, [[MP:pool1]], Shape{2, 4, 3, 3});  // pool1
// CPU: avgPool([[C]], Shape{2, 4, 6, 6}, pool2_kernel, pool2_strides, pool2_pads, false, [[AP:pool2]], Shape{2, 4, 3, 3});  // pool2
// CPU: convGradWeight(dy, Shape{2, 4, 6, 6}, x, Shape{2, 1, 6, 6}, conv0_dw_strides, conv0_dw_pads, conv0_dw_dilations, 1, conv0_dw, Shape{4, 1, 3, 3});  // conv0_dw
// CPU: convGradInput(dy, Shape{2, 4, 6, 6}, w, Shape{4, 1, 3, 3}, conv1_dx_strides, conv1_dx_pads, conv1_dx_dilations, 1, conv1_dx, Shape{2, 1, 6, 6});  // conv1_dx
// CPU: convGradWeight(dy, Shape{2, 4, 6, 6}, x, Shape{2, 1, 6, 6}, conv1_dw_strides, conv1_dw_pads, conv1_dw_dilations, 1, conv1_dw, Shape{4, 1, 3, 3}, true);  // conv1_dw
// CPU: maxPoolGrad([[MP]], Shape{2, 4, 3, 3}, [[C]], Shape{2, 4, 6, 6}, pool1_grad_kernel, pool1_grad_strides, pool1_grad_pads, pool1_grad_dilations, [[DMP:pool1_grad]]);  // pool1_grad
// CPU: convGradWeight([[DMP]], Shape{2, 4, 6, 6}, x, Shape{2, 1, 6, 6}, conv2_dw_strides, conv2_dw_pads, conv2_dw_dilations, 1, conv2_dw, Shape{4, 1, 3, 3});  // conv2_dw
// CPU: avgPoolGrad([[AP]], Shape{2, 4, 3, 3}, pool2_grad_kernel, pool2_grad_strides, pool2_grad_pads, false, pool2_grad, Shape{2, 4, 6, 6});  // pool2_grad

// CUDA-LABEL: static void stepPart(
// CUDA: CLEAVE_TRACE_BEGIN(rows[0], microbatch);
// CUDA: conv(x, Shape{2, 1, 6, 6}, w, Shape{4, 1, 3, 3}, b, conv1_strides, conv1_pads, conv1_dilations, 1, conv1, Shape{2, 4, 6, 6});  // conv1
// CUDA: convGradWeight(dy, Shape{2, 4, 6, 6}, x, Shape{2, 1, 6, 6}, conv0_dw_strides, conv0_dw_pads, conv0_dw_dilations, 1, conv0_dw, Shape{4, 1, 3, 3});  // conv0_dw
// CUDA: convGradWeight(dy, Shape{2, 4, 6, 6}, x, Shape{2, 1, 6, 6}, conv1_dw_strides, conv1_dw_pads, conv1_dw_dilations, 1, conv1_dw, Shape{4, 1, 3, 3});  // conv1_dw
module {
  func.func @step(%x: tensor<2x1x6x6xf32> {cleave.input = "x"},
                  %w: tensor<4x1x3x3xf32> {cleave.param = "w"},
                  %b: tensor<4xf32> {cleave.param = "b"},
                  %dy: tensor<2x4x6x6xf32> {cleave.input = "dy"})
      -> (tensor<2x4x3x3xf32> {cleave.output = "mp"},
          tensor<2x4x3x3xf32> {cleave.output = "ap"},
          tensor<2x1x6x6xf32> {cleave.output = "dx"},
          tensor<4x1x3x3xf32> {cleave.output = "dw"},
          tensor<2x4x6x6xf32> {cleave.output = "dmp"},
          tensor<2x4x6x6xf32> {cleave.output = "dap"},
          tensor<4x1x3x3xf32> {cleave.output = "dw0"},
          tensor<4x1x3x3xf32> {cleave.output = "dw2"}) {
    %c = cleave.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x1x6x6xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32> loc("conv1")
    %mp = cleave.max_pool %c {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32> loc("pool1")
    %ap = cleave.avg_pool %c {ceil_mode = false, count_include_pad = false, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x6x6xf32> -> tensor<2x4x3x3xf32> loc("pool2")
    %dw0 = cleave.conv_grad_weight %dy, %x {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x1x6x6xf32>) -> tensor<4x1x3x3xf32> loc("conv0_dw")
    %dx = cleave.conv_grad_input %dy, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<2x1x6x6xf32> loc("conv1_dx")
    %dw = cleave.conv_grad_weight %dy, %x {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x1x6x6xf32>) -> tensor<4x1x3x3xf32> loc("conv1_dw")
    %dmp = cleave.max_pool_grad %mp, %c {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x3x3xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> loc("pool1_grad")
    %dw2 = cleave.conv_grad_weight %dmp, %x {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<2x1x6x6xf32>) -> tensor<4x1x3x3xf32> loc("conv2_dw")
    %dap = cleave.avg_pool_grad %ap {ceil_mode = false, count_include_pad = false, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x3x3xf32> -> tensor<2x4x6x6xf32> loc("pool2_grad")
    return %mp, %ap, %dx, %dw, %dmp, %dap, %dw0, %dw2 : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<2x1x6x6xf32>, tensor<4x1x3x3xf32>, tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<4x1x3x3xf32>, tensor<4x1x3x3xf32>
  }
}
