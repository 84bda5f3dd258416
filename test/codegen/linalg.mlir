// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda %s | FileCheck %s --check-prefix=CUDA

// A Gemm with a bias row: on the host the bias is broadcast into the
// output and sgemm accumulates onto it (beta 1); on the GPU one cuBLASLt
// matmul with the bias epilogue. Tensors are named after their ONNX node.

// CPU-LABEL: static void stepPart(StepContext &ctx, void *const *refs, const int64_t *codes, const int *rows, int microbatch) {
// CPU-NEXT: void *slots[4];
// CPU-NEXT: resolveSlots(ctx, refs, codes, 4, slots);
// CPU-NEXT: auto *fc = static_cast<float *>(slots[0]);
// CPU: CLEAVE_TRACE_BEGIN(rows[0], microbatch);
// CPU-NEXT: broadcastTo(b, Shape{2}, fc, Shape{4, 2});  // fc
// CPU-NEXT: gemm(false, true, 4, 2, 3, 1.000000000e+00f, x, w, 1.000000000e+00f, fc);  // fc
// CPU-NEXT: CLEAVE_TRACE_END(rows[0], -1);
// The step runs its parts from a table: each call's function, where its
// slot codes (scratch by offset, the rest through refs) and trace rows
// start, its micro-batch. A slot code is an offset in the arena (>= 0),
// a tensor of the step (-1 - its index: b is tensor 2) or an entry of
// refs (constants, collective handles).
// CPU: static const PartCall kStepParts[] = {
// CPU-NEXT: {stepPart, 0, 0, -1},  // from fc
// CPU: static const int64_t kStepCodes[] = {
// CPU-NEXT: 0, -3, -2, -1,
// CPU-LABEL: static void trainStep(StepContext &ctx) {
// CPU: void *const refs[] = {nullptr};
// CPU-NEXT: runParts(ctx, refs, kStepParts, 1, kStepCodes, kStepTraceRows);
// CPU-NEXT: auto *fc = reinterpret_cast<float *>(ctx.arena + 0);
// CPU-NEXT: std::copy_n(fc, 8, static_cast<float *>(ctx.tensors[3]));  // output out

// CUDA-LABEL: static void stepPart(StepContext &ctx, void *const *refs, const int64_t *codes, const int *rows, int microbatch) {
// CUDA: gemmBias(false, true, 4, 2, 3, 1.000000000e+00f, x, w, b, fc, GemmEpilogue::Bias);  // fc
// CUDA-LABEL: static void trainStep(StepContext &ctx) {
// CUDA: runParts(ctx, refs, kStepParts, 1, kStepCodes, kStepTraceRows);
// CUDA-NEXT: auto *fc = reinterpret_cast<float *>(ctx.arena + 0);
// CUDA-NEXT: copyN(fc, 8, static_cast<float *>(ctx.tensors[3]));  // output out
// CUDA-NEXT: synchronize();
module {
  func.func @step(%x: tensor<4x3xf32> {cleave.input = "x"},
                  %w: tensor<2x3xf32> {cleave.param = "w"},
                  %b: tensor<2xf32> {cleave.param = "b"})
      -> (tensor<4x2xf32> {cleave.output = "out"}) {
    %0 = cleave.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32> loc("fc")
    return %0 : tensor<4x2xf32>
  }
}
