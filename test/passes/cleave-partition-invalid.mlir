// RUN: cleave-opt %s --cleave-partition -split-input-file -verify-diagnostics

// expected-error @+1 {{partitioning needs a 'cleave.mesh' module attribute}}
module {
  func.func @no_mesh(%x: tensor<8x4xf32> {cleave.sharding = #cleave.sharding<[[], []]>})
      -> (tensor<8x4xf32> {cleave.sharding = #cleave.sharding<[[], []]>}) {
    return %x : tensor<8x4xf32>
  }
}

// -----

// Partitioning without propagated shardings: an argument has none.
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  // expected-error @+1 {{argument 1 has no sharding; run cleave-propagate-sharding first}}
  func.func @argument_without_sharding(%x: tensor<8x4xf32> {cleave.sharding = #cleave.sharding<[[dp], []]>},
                                       %w: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = cleave.add %x, %w : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}

// -----

// Partitioning without propagated shardings: an op has none.
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @op_without_sharding(%x: tensor<8x4xf32> {cleave.sharding = #cleave.sharding<[[dp], []]>})
      -> (tensor<8x4xf32> {cleave.sharding = #cleave.sharding<[[dp], []]>}) {
    // expected-error @+1 {{'cleave.relu' op has no sharding; run cleave-propagate-sharding first}}
    %0 = cleave.relu %x : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
