// RUN: cleave-opt %s --split-input-file --cleave-apply-sharding-hints="mesh=tp=2 hints='v=[tp]'" -verify-diagnostics
// RUN: not cleave-opt %s --cleave-apply-sharding-hints="mesh=tp=2 strategy=dp" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=NODP
// RUN: not cleave-opt %s --cleave-apply-sharding-hints="mesh=tp=2 strategy=fsdp" 2>&1 | FileCheck %s --check-prefix=STRATEGY
// RUN: not cleave-opt %s --cleave-apply-sharding-hints="mesh=tp" 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not cleave-opt %s --cleave-apply-sharding-hints="mesh=dp=2 microbatches=3" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=MB
// RUN: not cleave-opt %s --cleave-apply-sharding-hints --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=NOMESH

// Errors are at the step and name the hint and where it came from.
// NODP: error: the 'dp' preset needs a mesh axis named 'dp' (for example dp=4)
// STRATEGY: error: unknown strategy 'fsdp'; the presets are none, dp, zero1, zero2, zero3, megatron, megatron+zero1, megatron+zero2 and megatron+zero3
// MESH: error: mesh 'tp' is not a list of NAME=SIZE axes with sizes >= 1 (for example mesh=dp=2,tp=2)
// MB: error: input 'x' has a batch of 8, which does not divide into 3 micro-batches; use a batch size divisible by 3
// NOMESH: error: no mesh to shard over: give the pass a mesh or the module a 'cleave.mesh' attribute

module {
  // expected-error @+1 {{sharding hint 'v=[tp]' (option 'hints') names no tensor of the model (tensors: x, w)}}
  func.func @step(%x: tensor<8x4xf32> {cleave.input = "x"},
                  %w: tensor<3x4xf32> {cleave.param = "w"})
      -> (tensor<8x3xf32> {cleave.loss}) {
    %0 = cleave.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<8x3xf32>
    return %0 : tensor<8x3xf32>
  }
}
