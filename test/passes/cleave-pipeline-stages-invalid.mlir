// RUN: cleave-opt %s --cleave-pipeline-stages="axis=pp" --split-input-file --verify-diagnostics

// Refusals of cleave-pipeline-stages that depend on the program; those of
// its options are in cleave-pipeline-stages-errors.mlir.

// The mesh has no axis to split the program along.
// expected-error @+1 {{pipeline stages need a mesh with the axis 'pp'}}
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @no_axis(%x: tensor<4x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}) {
    %s = cleave.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// Nothing to pipeline: no function computes a loss.
// expected-error @+1 {{pipeline stages need a training step (a function with a 'cleave.loss' result)}}
module attributes {cleave.mesh = #cleave.mesh<pp = 2>} {
  func.func @inference(%x: tensor<4x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>}) -> (tensor<f32> {cleave.output = "sum", cleave.sharding = #cleave.sharding<[]>}) {
    %s = cleave.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x3xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// A parameter split over the stages' axis: each stage holds its
// parameters whole (or split over the other axes).
module attributes {cleave.mesh = #cleave.mesh<pp = 2>} {
  // expected-error @+1 {{'w' is split over the pipeline axis 'pp'; sharding hints may use the other mesh axes only}}
  func.func @split_param(%x: tensor<4x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>}, %w: tensor<3x2xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<[[pp], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}) {
    %m = cleave.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %s = cleave.reduce_sum %m {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x2xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// Fewer forward ops than stages.
module attributes {cleave.mesh = #cleave.mesh<pp = 4>} {
  // expected-error @+1 {{the forward pass cannot be split into 4 pipeline stages of similar work}}
  func.func @short(%x: tensor<4x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>}, %w: tensor<3x2xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<[[], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}) {
    %m = cleave.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %s = cleave.reduce_sum %m {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x2xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
