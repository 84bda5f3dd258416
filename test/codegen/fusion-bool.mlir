// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s

// A fused loop reads bool operands as bytes (cleave::loadElement,
// runtime/HostDevice.h), which g++ vectorizes where it does not vectorize
// a select on a loaded bool: a Clip's gradient, two Wheres on kept masks.

// CHECK-LABEL: static void stepPart(
// CHECK: // fused: w1 w2
// CHECK: #pragma omp parallel for simd schedule(static)
// CHECK: const auto v0 = body::Where{}(cleave::loadElement(lo, i), zero[0], g[i]);
// CHECK: [[OUT:[a-z0-9_]+]][i] = body::Where{}(cleave::loadElement(hi, i), zero[0], v0);
module {
  func.func @step(%lo: tensor<256x256xi1> {cleave.input = "lo"},
                  %hi: tensor<256x256xi1> {cleave.input = "hi"},
                  %g: tensor<256x256xf32> {cleave.input = "g"},
                  %zero: tensor<f32> {cleave.input = "zero"})
      -> (tensor<256x256xf32> {cleave.output = "out"}) {
    %0 = cleave.where %lo, %zero, %g : (tensor<256x256xi1>, tensor<f32>, tensor<256x256xf32>) -> tensor<256x256xf32> loc("w1")
    %1 = cleave.where %hi, %zero, %0 : (tensor<256x256xi1>, tensor<f32>, tensor<256x256xf32>) -> tensor<256x256xf32> loc("w2")
    return %1 : tensor<256x256xf32>
  }
}
