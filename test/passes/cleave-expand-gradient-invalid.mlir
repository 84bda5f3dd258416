// RUN: cleave-opt %s --cleave-expand-gradient -split-input-file -verify-diagnostics

func.func @model(%x: tensor<2xf32> {cleave.input = "X"}, %w: tensor<2xf32> {cleave.param = "W"},
                 %b: tensor<2xf32> {cleave.param = "B"})
    -> (tensor<f32> {cleave.output = "loss"}) {
  %0 = cleave.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = cleave.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

func.func @algorithm(%x: tensor<2xf32> {cleave.input = "X"}, %w: tensor<2xf32> {cleave.param = "W"})
    -> (tensor<2xf32> {cleave.update = "W"}) {
  // expected-error @+1 {{cannot feed model argument 'B': it is neither in xs/zs nor an argument of algorithm}}
  %g = cleave.gradient @model(%w, %x) {xs = ["W"], y = "loss", zs = ["X"]}
      : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %g : tensor<2xf32>
}
