// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s

// Elementwise ops whose results have one use each fuse into one loop even
// where two of them feed one op (a tree, not a chain): GELU's backward has
// this form. A value read twice (%x) stays a buffer the loop reads twice;
// ops run in block order inside the loop.

// CHECK: // fused: ex th mul add
// CHECK-NEXT: #pragma omp simd
// CHECK-NEXT: for (int64_t i = 0; i < 64; ++i) {
// CHECK-NEXT: const auto v0 = body::Exp{}(x[i]);
// CHECK-NEXT: const auto v1 = body::Tanh{}(y[i]);
// CHECK-NEXT: const auto v2 = body::Mul{}(v0, v1);
// CHECK-NEXT: [[OUT:[a-z_]+]][i] = body::Add{}(v2, x[i]);
// CHECK-NEXT: }
// CHECK-NOT: mapUnary
// CHECK-NOT: mapBinary
module {
  func.func @step(%x: tensor<8x8xf32> {cleave.input = "x"},
                  %y: tensor<8x8xf32> {cleave.input = "y"})
      -> (tensor<8x8xf32> {cleave.output = "out"}) {
    %0 = cleave.exp %x : tensor<8x8xf32> loc("ex")
    %1 = cleave.tanh %y : tensor<8x8xf32> loc("th")
    %2 = cleave.mul %0, %1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("mul")
    %3 = cleave.add %2, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("add")
    return %3 : tensor<8x8xf32>
  }
}
