// RUN: cleave-opt %s --cleave-recompute="mode=bogus" --verify-diagnostics

// An unknown recomputation mode is refused at the step it would apply to,
// naming the modes there are.

// expected-error @+1 {{unknown recomputation mode 'bogus'; use full or selective}}
func.func @step(%x: tensor<4x3xf32> {cleave.input = "x"}) -> (tensor<f32> {cleave.loss, cleave.output = "loss"}) {
  %r = cleave.relu %x : tensor<4x3xf32>
  %s = cleave.reduce_sum %r {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
  return %s : tensor<f32>
}
