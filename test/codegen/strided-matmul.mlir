// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda %s | FileCheck %s --check-prefix=CUDA

// Attention's heads split out of q, k and v and merged back: on the host
// the batched products read the split tensors through strides (k
// transposed: its columns 4 = 2 heads x 2 features apart) and the context
// product writes the merged heads the same way, so no transpose is copied
// (codegen/FusionPlan.h, planStridedMatmuls). The cuda target keeps the
// transposes.

// CPU-LABEL: static void stepPart(StepContext &ctx, void *const *refs, const int64_t *codes, const int *rows, int microbatch) {
// CPU-NOT: transpose(
// CPU: const int64_t scores_a_strides[] = {32, 2, 4, 1};
// CPU-NEXT: const int64_t scores_b_strides[] = {32, 2, 1, 4};
// CPU-NEXT: const int64_t scores_c_strides[] = {128, 64, 8, 1};
// CPU-NEXT: matmulStrided(Shape{2, 2}, 8, 8, 2, split_0, scores_a_strides, split_1, scores_b_strides, scores, scores_c_strides);  // scores
// CPU-NOT: transpose(
// CPU: const int64_t merge_a_strides[] = {128, 64, 8, 1};
// CPU-NEXT: const int64_t merge_b_strides[] = {32, 2, 4, 1};
// CPU-NEXT: const int64_t merge_c_strides[] = {32, 2, 4, 1};
// CPU-NEXT: matmulStrided(Shape{2, 2}, 8, 2, 8, softmax_1, merge_a_strides, split_2, merge_b_strides, merge, merge_c_strides);  // merge
// CPU-NOT: transpose(
// CPU: std::copy_n(merge, 64,

// CUDA-LABEL: static void stepPart(StepContext &ctx, void *const *refs, const int64_t *codes, const int *rows, int microbatch) {
// CUDA-NOT: matmulStrided
// CUDA: transpose(split_0,
// CUDA: matmul(q,
// CUDA: transpose(context,
module {
  func.func @step(%x: tensor<2x8x12xf32> {cleave.input = "x"})
      -> (tensor<2x8x2x2xf32> {cleave.output = "out"}) {
    %s = cleave.mul %x, %x : (tensor<2x8x12xf32>, tensor<2x8x12xf32>) -> tensor<2x8x12xf32> loc("qkv")
    %q3, %k3, %v3 = cleave.split %s {axis = 2 : i64} : tensor<2x8x12xf32> -> tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> loc("split")
    %q4 = cleave.reshape %q3 : tensor<2x8x4xf32> -> tensor<2x8x2x2xf32> loc("rq")
    %k4 = cleave.reshape %k3 : tensor<2x8x4xf32> -> tensor<2x8x2x2xf32> loc("rk")
    %v4 = cleave.reshape %v3 : tensor<2x8x4xf32> -> tensor<2x8x2x2xf32> loc("rv")
    %q = cleave.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x2xf32> -> tensor<2x2x8x2xf32> loc("q")
    %kt = cleave.transpose %k4 {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x2x2xf32> -> tensor<2x2x2x8xf32> loc("kt")
    %v = cleave.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x2xf32> -> tensor<2x2x8x2xf32> loc("v")
    %a = cleave.matmul %q, %kt : (tensor<2x2x8x2xf32>, tensor<2x2x2x8xf32>) -> tensor<2x2x8x8xf32> loc("scores")
    %p = cleave.softmax %a {axis = 3 : i64} : tensor<2x2x8x8xf32> loc("softmax")
    %y = cleave.matmul %p, %v : (tensor<2x2x8x8xf32>, tensor<2x2x8x2xf32>) -> tensor<2x2x8x2xf32> loc("context")
    %z = cleave.transpose %y {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x2x8x2xf32> -> tensor<2x8x2x2xf32> loc("merge")
    return %z : tensor<2x8x2x2xf32>
  }
}
