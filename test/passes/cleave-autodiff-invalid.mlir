// RUN: cleave-opt %s --cleave-autodiff -split-input-file -verify-diagnostics

func.func @no_rule(%w: tensor<3xf32> {cleave.param = "w"}) -> (tensor<f32> {cleave.loss}) {
  // expected-error @+1 {{'cleave.reduce_max' op has no gradient rule; cleave cannot train through it}}
  %0 = cleave.reduce_max %w {axes = array<i64: 0>, keepdims = false} : tensor<3xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
