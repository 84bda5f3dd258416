// RUN: cleave-opt %s --cleave-propagate-sharding -split-input-file -verify-diagnostics

// expected-error @+1 {{sharding propagation needs a 'cleave.mesh' module attribute}}
module {
  func.func @no_mesh(%x: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>})
      -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  // expected-error @+1 {{the sharding of 'x' does not fit: the sharding lists 1 dimension but the tensor has rank 2}}
  func.func @rank_mismatch(%x: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp]]>})
      -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  // expected-error @+1 {{the sharding of 'w' does not fit: mesh axis 'tp' is not an axis of the mesh (dp=2)}}
  func.func @unknown_axis(%w: tensor<8x4xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<[[], [tp]]>})
      -> tensor<8x4xf32> {
    return %w : tensor<8x4xf32>
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  // expected-error @+1 {{the sharding of 'w.momentum_buffer' does not fit: mesh axis 'tp' is not an axis of the mesh (dp=2)}}
  func.func @unknown_replicated_axis(%m: tensor<8x4xf32> {cleave.state = "w.momentum_buffer", cleave.sharding = #cleave.sharding<[[dp], []], replicated = [tp]>})
      -> tensor<8x4xf32> {
    return %m : tensor<8x4xf32>
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 3>} {
  // expected-error @+1 {{the sharding of argument 1 does not fit: dimension 0 has size 8, which does not divide into 6 shards (over [dp, tp])}}
  func.func @not_divisible(%x: tensor<8x4xf32> {cleave.input = "x"},
                           %y: tensor<8x4xf32> {cleave.sharding = #cleave.sharding<[[dp, tp], []]>})
      -> tensor<8x4xf32> {
    %0 = cleave.add %x, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
