// RUN: cleave-opt %s --cleave-autodiff -split-input-file -verify-diagnostics

func.func @no_rule(%w: tensor<3xf32> {cleave.param = "w"}) -> (tensor<f32> {cleave.loss}) {
  // expected-error @+1 {{'cleave.slice_grad' op has no gradient rule; cleave cannot train through it}}
  %0 = cleave.slice_grad %w {offsets = array<i64: 1>, strides = array<i64: 1>} : tensor<3xf32> -> tensor<4xf32>
  %1 = cleave.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : tensor<4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A loss that reaches no parameter: training would change nothing.
// expected-error @+1 {{the loss depends on none of the 1 trainable parameters; training would change nothing: build a forward-only program instead}}
func.func @unused(%x: tensor<2xf32> {cleave.input = "x"}, %u: tensor<2xf32> {cleave.param = "u"})
    -> (tensor<f32> {cleave.loss, cleave.output = "loss"}) {
  %0 = cleave.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{the model has no trainable parameter; training would change nothing: build a forward-only program instead}}
func.func @no_params(%x: tensor<2xf32> {cleave.input = "x"})
    -> (tensor<f32> {cleave.loss, cleave.output = "loss"}) {
  %0 = cleave.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
