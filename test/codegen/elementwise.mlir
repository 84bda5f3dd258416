// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda %s | FileCheck %s --check-prefix=CUDA

// A chain of elementwise ops whose intermediate values have one use each
// runs as one loop: an OpenMP loop on the host, one kernel on the GPU.

// CPU-LABEL: static void stepPart(StepContext &ctx, void *const *refs, const int64_t *codes, const int *rows, int microbatch) {
// CPU: // fused: add relu
// CPU: #pragma omp parallel for simd schedule(static)
// CPU: const auto v0 = body::Add{}(x[i], y[i]);
// CPU: [[OUT:[a-z_]+]][i] = body::Relu{}(v0);

// CUDA-LABEL: static void stepPart(StepContext &ctx, void *const *refs, const int64_t *codes, const int *rows, int microbatch) {
// CUDA: launch(65536, [=] __host__ __device__(int64_t i) {
// CUDA: synchronize();
module {
  func.func @step(%x: tensor<256x256xf32> {cleave.input = "x"},
                  %y: tensor<256x256xf32> {cleave.input = "y"})
      -> (tensor<256x256xf32> {cleave.output = "out"}) {
    %0 = cleave.add %x, %y : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32> loc("add")
    %1 = cleave.relu %0 : tensor<256x256xf32> loc("relu")
    return %1 : tensor<256x256xf32>
  }
}
