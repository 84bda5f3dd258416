// RUN: cleave-opt %s --cleave-unroll-microbatches="axis=mb" --split-input-file --verify-diagnostics

// A value computed once and sliced over the micro-batch axis and another,
// with the micro-batch axis major: micro-batch m's rows are not one block
// of this rank's rows, so it is refused.
module attributes {cleave.mesh = #cleave.mesh<dp = 2, mb = 2>} {
  func.func @major(%x: tensor<1x2xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp, mb], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}) {
    %n = cleave.random_normal {mean = 0.000000e+00 : f32, scale = 1.000000e+00 : f32} : tensor<4x2xf32>
    // expected-error @+1 {{slices a value over the axes ["mb", "dp"] with the micro-batch axis not innermost}}
    %s = cleave.all_slice %n over ["mb", "dp"] dim 0 : tensor<4x2xf32> -> tensor<1x2xf32>
    %a = cleave.add %x, %s : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    %r = cleave.reduce_sum %a {axes = array<i64: 0, 1>, keepdims = false} : tensor<1x2xf32> -> tensor<f32>
    %l = cleave.all_reduce %r over ["dp", "mb"] : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Data moving between micro-batches (a gather over the axis) is refused.
module attributes {cleave.mesh = #cleave.mesh<mb = 2>} {
  func.func @gather(%x: tensor<2x2xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[mb], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}) {
    // expected-error @+1 {{needs data of every micro-batch at once}}
    %g = cleave.all_gather %x over ["mb"] dim 0 : tensor<2x2xf32> -> tensor<4x2xf32>
    %r = cleave.reduce_sum %g {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x2xf32> -> tensor<f32>
    return %r : tensor<f32>
  }
}

// -----

// A rank index over the micro-batch axis and another, the micro-batch axis
// major (a split dropout's offset): micro-batch m's index is not m plus a
// block of this rank's, so it is refused.
module attributes {cleave.mesh = #cleave.mesh<dp = 2, mb = 2>} {
  func.func @index(%x: tensor<1x2xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp, mb], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}) {
    // expected-error @+1 {{indexes ranks over the axes ["mb", "dp"] with the micro-batch axis not innermost}}
    %i = cleave.axis_index over ["mb", "dp"] : tensor<i64>
    %f = cleave.cast %i : tensor<i64> to tensor<f32>
    %a = cleave.add %x, %f : (tensor<1x2xf32>, tensor<f32>) -> tensor<1x2xf32>
    %r = cleave.reduce_sum %a {axes = array<i64: 0, 1>, keepdims = false} : tensor<1x2xf32> -> tensor<f32>
    %l = cleave.all_reduce %r over ["dp", "mb"] : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// A training BatchNorm left with one value per channel in each
// micro-batch has no batch statistics: refused.
module attributes {cleave.mesh = #cleave.mesh<mb = 2>} {
  func.func @one_row(%x: tensor<1x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[mb], []]>}, %scale: tensor<4xf32> {cleave.param = "s", cleave.sharding = #cleave.sharding<[[]]>}, %bias: tensor<4xf32> {cleave.param = "b", cleave.sharding = #cleave.sharding<[[]]>}, %mean: tensor<4xf32> {cleave.state = "m", cleave.sharding = #cleave.sharding<[[]]>}, %var: tensor<4xf32> {cleave.state = "v", cleave.sharding = #cleave.sharding<[[]]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}) {
    // expected-error @+1 {{normalizes 1 row per micro-batch, one value per channel, which has no batch statistics to train with; use fewer micro-batches (at least 2 rows each)}}
    %y, %rm, %rv = cleave.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true} : (tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>)
    %r = cleave.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<1x4xf32> -> tensor<f32>
    %l = cleave.all_reduce %r over ["mb"] : tensor<f32>
    return %l : tensor<f32>
  }
}
