// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda %s | FileCheck %s --check-prefix=CUDA

// Ops that move data are runtime calls generic over the element type
// (runtime/KernelsDataMovement.cpp): their index lists are local arrays
// named after the node, a reshape is a view of its input (no copy), and a
// constant is a table in the program (on the GPU, in device memory).

// CPU: static const float [[$K:kk]][2] = {1.500000000e+00, -2.000000000e+00};
// CPU-LABEL: static void stepPart(
// CPU: const int64_t tr_perm[] = {2, 1, 0};
// CPU-NEXT: transpose(x, Shape{2, 3, 4}, tr_perm, tr);  // tr
// CPU: const float *cat_inputs[] = {x, x};
// CPU-NEXT: const Shape cat_shapes[] = {Shape{2, 3, 4}, Shape{2, 3, 4}};
// CPU-NEXT: concat(cat_inputs, cat_shapes, 2, 1, cat);  // cat
// CPU: float *sp_outputs[] = {[[S0:sp_0]], sp_1};
// CPU-NEXT: const int64_t sp_sizes[] = {1, 2};
// CPU-NEXT: split(x, Shape{2, 3, 4}, 1, sp_sizes, 2, sp_outputs);  // sp
// CPU: const int64_t sl_offsets[] = {0, 0, 1};
// CPU-NEXT: const int64_t sl_strides[] = {1, 1, 2};
// CPU-NEXT: slice(x, Shape{2, 3, 4}, sl_offsets, sl_strides, [[SL:sl]], Shape{2, 3, 2});  // sl
// CPU: sliceGrad([[SL]], Shape{2, 3, 2}, sl_grad_offsets, sl_grad_strides, sl_grad, Shape{2, 3, 4});  // sl_grad
// CPU: gather(emb, Shape{10, 4}, ids, 10, 0, [[G:emb_lookup]]);  // emb_lookup
// CPU: gatherGrad([[G]], ids, 10, 0, emb_grad, Shape{10, 4});  // emb_grad
// CPU: broadcastTo(row, Shape{1, 4}, bc, Shape{3, 4});  // bc
// CPU: // flat: a view of its input
// CPU-NOT: reshape
// CPU: static void trainStep(StepContext &ctx) {
// CPU: std::copy_n([[S0]], 8, static_cast<float *>(ctx.tensors[6]));  // output s1
// CPU: std::copy_n(x, 24, static_cast<float *>(ctx.tensors[12]));  // output r
// CPU-NEXT: std::copy_n([[$K]], 2, static_cast<float *>(ctx.tensors[13]));  // output k

// CUDA: __device__ const float kk_data[2] = {1.500000000e+00, -2.000000000e+00};
// CUDA-LABEL: static void stepPart(
// CUDA: transpose(x, Shape{2, 3, 4}, tr_perm, tr);  // tr
// CUDA: gatherGrad(emb_lookup, ids, 10, 0, emb_grad, Shape{10, 4});  // emb_grad
// CUDA-LABEL: static void trainStep(StepContext &ctx) {
// CUDA: const float *kk = deviceAddress(kk_data);
// CUDA: copyN(kk, 2, static_cast<float *>(ctx.tensors[13]));  // output k
module {
  func.func @step(%x: tensor<2x3x4xf32> {cleave.input = "x"},
                  %ids: tensor<2x5xi64> {cleave.input = "ids"},
                  %emb: tensor<10x4xf32> {cleave.param = "emb"},
                  %row: tensor<1x4xf32> {cleave.param = "row"})
      -> (tensor<4x3x2xf32> {cleave.output = "t"},
          tensor<2x6x4xf32> {cleave.output = "cat"},
          tensor<2x1x4xf32> {cleave.output = "s1"},
          tensor<2x3x2xf32> {cleave.output = "sl"},
          tensor<2x3x4xf32> {cleave.output = "slg"},
          tensor<2x5x4xf32> {cleave.output = "g"},
          tensor<10x4xf32> {cleave.output = "gg"},
          tensor<3x4xf32> {cleave.output = "bc"},
          tensor<6x4xf32> {cleave.output = "r"},
          tensor<2xf32> {cleave.output = "k"}) {
    %t = cleave.transpose %x {permutation = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<4x3x2xf32> loc("tr")
    %cat = cleave.concat %x, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32> loc("cat")
    %s:2 = cleave.split %x {axis = 1 : i64} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>, tensor<2x2x4xf32> loc("sp")
    %sl = cleave.slice %x {offsets = array<i64: 0, 0, 1>, strides = array<i64: 1, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x2xf32> loc("sl")
    %slg = cleave.slice_grad %sl {offsets = array<i64: 0, 0, 1>, strides = array<i64: 1, 1, 2>} : tensor<2x3x2xf32> -> tensor<2x3x4xf32> loc("sl_grad")
    %g = cleave.gather %emb, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x5xi64>) -> tensor<2x5x4xf32> loc("emb_lookup")
    %gg = cleave.gather_grad %g, %ids {axis = 0 : i64} : (tensor<2x5x4xf32>, tensor<2x5xi64>) -> tensor<10x4xf32> loc("emb_grad")
    %bc = cleave.broadcast_to %row : tensor<1x4xf32> -> tensor<3x4xf32> loc("bc")
    %r = cleave.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32> loc("flat")
    %k = cleave.constant dense<[1.5, -2.0]> : tensor<2xf32> loc("k")
    return %t, %cat, %s#0, %sl, %slg, %g, %gg, %bc, %r, %k : tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<2x1x4xf32>, tensor<2x3x2xf32>, tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<10x4xf32>, tensor<3x4xf32>, tensor<6x4xf32>, tensor<2xf32>
  }
}
