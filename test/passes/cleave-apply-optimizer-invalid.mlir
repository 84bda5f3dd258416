// RUN: cleave-opt %s --cleave-apply-optimizer="optimizer=lamb" -split-input-file -verify-diagnostics

// expected-error @+1 {{unknown optimizer 'lamb'; cleave supports sgd and adamw}}
func.func @step(%w: tensor<3xf32> {cleave.param = "w"}) -> (tensor<3xf32> {cleave.grad = "w"}) {
  return %w : tensor<3xf32>
}
