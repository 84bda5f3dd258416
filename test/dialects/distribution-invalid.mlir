// RUN: cleave-opt %s -split-input-file -verify-diagnostics

// Every verifier error of #cleave.mesh, #cleave.sharding, cleave.reshard and
// the collectives.

// expected-error @+1 {{mesh axis 'dp' appears twice}}
module attributes {cleave.mesh = #cleave.mesh<dp = 2, dp = 4>} {}

// -----

// expected-error @+1 {{mesh axis 'dp' has size 0; sizes must be >= 1}}
module attributes {cleave.mesh = #cleave.mesh<dp = 0>} {}

// -----

// expected-error @+1 {{mesh axis 'tp' has size -2; sizes must be >= 1}}
module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = -2>} {}

// -----

// expected-error @+1 {{mesh axis names must not be empty}}
module attributes {cleave.mesh = #cleave.mesh<"" = 2>} {}

// -----

// expected-error @+1 {{mesh axis 'dp' is used twice in one sharding}}
module attributes {test.sharding = #cleave.sharding<[[dp], [dp]]>} {}

// -----

// expected-error @+1 {{mesh axis 'dp' is used twice in one sharding}}
module attributes {test.sharding = #cleave.sharding<[[dp], []], replicated = [tp], partial = [dp]>} {}

// -----

// expected-error @+1 {{mesh axis 'tp' is used twice in one sharding}}
module attributes {test.sharding = #cleave.sharding<[[]], replicated = [tp], partial = [tp]>} {}

// -----

// expected-error @+1 {{expected 'replicated' or 'partial', got 'reduced'}}
module attributes {test.sharding = #cleave.sharding<[[dp]], reduced = [tp]>} {}

// -----

func.func @all_reduce_no_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'cleave.all_reduce' op needs a module with a 'cleave.mesh' attribute}}
  %0 = cleave.all_reduce %x over ["dp"] : tensor<4xf32>
  return
}

// -----

func.func @reshard_no_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'cleave.reshard' op needs a module with a 'cleave.mesh' attribute}}
  %0 = cleave.reshard %x to <[[dp]]> : tensor<4xf32>
  return
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_reduce_unknown_axis(%x: tensor<4xf32>) {
    // expected-error @+1 {{'cleave.all_reduce' op names axis 'pp', which the mesh #cleave.mesh<dp = 2, tp = 2> does not have}}
    %0 = cleave.all_reduce %x over ["pp"] : tensor<4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_reduce_axis_twice(%x: tensor<4xf32>) {
    // expected-error @+1 {{'cleave.all_reduce' op names axis 'dp' twice}}
    %0 = cleave.all_reduce %x over ["dp", "tp", "dp"] : tensor<4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_reduce_no_inputs() {
    // expected-error @+1 {{'cleave.all_reduce' op needs at least one input}}
    "cleave.all_reduce"() <{axes = ["dp"]}> : () -> ()
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_reduce_result_type(%x: tensor<4xf32>) {
    // expected-error @+2 {{'cleave.all_reduce' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
    // expected-error @+1 {{'cleave.all_reduce' op failed to infer returned types}}
    %0 = "cleave.all_reduce"(%x) <{axes = ["dp"]}> : (tensor<4xf32>) -> tensor<2xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_gather_result_dim(%x: tensor<4x3xf32>) {
    // expected-error @+1 {{'cleave.all_gather' op expects the result's dimension 0 to be 16 (the input's times the group size 4), got 8}}
    %0 = cleave.all_gather %x over ["dp", "tp"] dim 0 : tensor<4x3xf32> -> tensor<8x3xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_gather_other_dim(%x: tensor<4x3xf32>) {
    // expected-error @+1 {{'cleave.all_gather' op expects the result's dimension 1 to be 3 (the input's), got 6}}
    %0 = cleave.all_gather %x over ["dp"] dim 0 : tensor<4x3xf32> -> tensor<8x6xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_gather_dim_range(%x: tensor<4x3xf32>) {
    // expected-error @+1 {{'cleave.all_gather' op dim 2 is out of range for rank 2}}
    %0 = cleave.all_gather %x over ["dp"] dim 2 : tensor<4x3xf32> -> tensor<4x3xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_gather_element_type(%x: tensor<4x3xf32>) {
    // expected-error @+1 {{'cleave.all_gather' op changes the element type}}
    %0 = cleave.all_gather %x over ["dp"] dim 0 : tensor<4x3xf32> -> tensor<8x3xf16>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_gather_rank(%x: tensor<4x3xf32>) {
    // expected-error @+1 {{'cleave.all_gather' op changes the rank}}
    %0 = cleave.all_gather %x over ["dp"] dim 0 : tensor<4x3xf32> -> tensor<24xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @reduce_scatter_result_dim(%x: tensor<8x3xf32>) {
    // expected-error @+1 {{'cleave.reduce_scatter' op expects the input's dimension 0 to be 4 (the result's times the group size 2), got 8}}
    %0 = cleave.reduce_scatter %x over ["tp"] dim 0 : tensor<8x3xf32> -> tensor<2x3xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @reduce_scatter_not_divisible(%x: tensor<5x3xf32>) {
    // expected-error @+1 {{'cleave.reduce_scatter' op expects the input's dimension 0 to be 4 (the result's times the group size 2), got 5}}
    %0 = cleave.reduce_scatter %x over ["dp"] dim 0 : tensor<5x3xf32> -> tensor<2x3xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_slice_result_dim(%x: tensor<8x4xf32>) {
    // expected-error @+1 {{'cleave.all_slice' op expects the input's dimension 1 to be 8 (the result's times the group size 4), got 4}}
    %0 = cleave.all_slice %x over ["dp", "tp"] dim 1 : tensor<8x4xf32> -> tensor<8x2xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_slice_not_divisible(%x: tensor<8x3xf32>) {
    // expected-error @+1 {{'cleave.all_slice' op expects the input's dimension 1 to be 2 (the result's times the group size 2), got 3}}
    %0 = cleave.all_slice %x over ["tp"] dim 1 : tensor<8x3xf32> -> tensor<8x1xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_slice_unknown_axis(%x: tensor<8x4xf32>) {
    // expected-error @+1 {{'cleave.all_slice' op names axis 'ep', which the mesh #cleave.mesh<dp = 2, tp = 2> does not have}}
    %0 = cleave.all_slice %x over ["ep"] dim 0 : tensor<8x4xf32> -> tensor<4x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_to_all_dim_range(%x: tensor<4x8xf32>) {
    // expected-error @+1 {{'cleave.all_to_all' op split and concat dims must be in [0, 2)}}
    %0 = cleave.all_to_all %x over ["tp"] split 2 concat 0 : tensor<4x8xf32> -> tensor<8x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_to_all_negative_dim(%x: tensor<4x8xf32>) {
    // expected-error @+1 {{'cleave.all_to_all' op split and concat dims must be in [0, 2)}}
    %0 = cleave.all_to_all %x over ["tp"] split 1 concat -1 : tensor<4x8xf32> -> tensor<8x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_to_all_not_divisible(%x: tensor<4x3xf32>) {
    // expected-error @+1 {{'cleave.all_to_all' op split dimension 1 of size 3 does not divide into the group size 2}}
    %0 = cleave.all_to_all %x over ["tp"] split 1 concat 0 : tensor<4x3xf32> -> tensor<8x1xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_to_all_result(%x: tensor<4x8xf32>) {
    // expected-error @+1 {{'cleave.all_to_all' op expects result dimension 0 to be 8, got 4}}
    %0 = cleave.all_to_all %x over ["tp"] split 1 concat 0 : tensor<4x8xf32> -> tensor<4x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @all_to_all_element_type(%x: tensor<4x8xf32>) {
    // expected-error @+1 {{'cleave.all_to_all' op changes the element type or rank}}
    %0 = cleave.all_to_all %x over ["tp"] split 1 concat 0 : tensor<4x8xf32> -> tensor<8x4xi32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @broadcast_root(%x: tensor<4xf32>) {
    // expected-error @+1 {{'cleave.broadcast' op root 4 is not a rank of a group of 4}}
    %0 = cleave.broadcast %x over ["dp", "tp"] root 4 : tensor<4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @broadcast_negative_root(%x: tensor<4xf32>) {
    // expected-error @+1 {{'cleave.broadcast' op root -1 is not a rank of a group of 2}}
    %0 = cleave.broadcast %x over ["dp"] root -1 : tensor<4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @reshard_rank(%x: tensor<8x4xf32>) {
    // expected-error @+1 {{'cleave.reshard' op has an invalid sharding: the sharding lists 1 dimension but the tensor has rank 2}}
    %0 = cleave.reshard %x to <[[dp]]> : tensor<8x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @reshard_unknown_axis(%x: tensor<8x4xf32>) {
    // expected-error @+1 {{'cleave.reshard' op has an invalid sharding: mesh axis 'pp' is not an axis of the mesh (dp=2,tp=2)}}
    %0 = cleave.reshard %x to <[[pp], []]> : tensor<8x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @reshard_unknown_partial_axis(%x: tensor<8x4xf32>) {
    // expected-error @+1 {{'cleave.reshard' op has an invalid sharding: mesh axis 'pp' is not an axis of the mesh (dp=2,tp=2)}}
    %0 = cleave.reshard %x to <[[], []], partial = [pp]> : tensor<8x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 3>} {
  func.func @reshard_not_divisible(%x: tensor<8x4xf32>) {
    // expected-error @+1 {{'cleave.reshard' op has an invalid sharding: dimension 1 has size 4, which does not divide into 6 shards (over [dp, tp])}}
    %0 = cleave.reshard %x to <[[], [dp, tp]]> : tensor<8x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {
  func.func @reshard_type(%x: tensor<8x4xf32>) {
    // expected-error @+1 {{'cleave.reshard' op failed to verify that all of {input, result} have same type}}
    %0 = "cleave.reshard"(%x) <{sharding = #cleave.sharding<[[dp], []]>}> : (tensor<8x4xf32>) -> tensor<4x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @reshard_to_partial(%x: tensor<8x4xf32>) {
    // expected-error @+1 {{'cleave.reshard' op cannot produce partial sums (its sharding has 'partial')}}
    %0 = cleave.reshard %x to <[[], []], partial = [dp]> : tensor<8x4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @axis_index_unknown_axis() {
    // expected-error @+1 {{'cleave.axis_index' op names axis 'tp', which the mesh #cleave.mesh<dp = 2> does not have}}
    %0 = cleave.axis_index over ["tp"] : tensor<i64>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @axis_index_type() {
    // expected-error @+1 {{'cleave.axis_index' op result #0 must be 0D tensor of 64-bit signless integer values}}
    %0 = cleave.axis_index over ["dp"] : tensor<2xi64>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, pp = 2>} {
  func.func @send_recv_unknown_axis(%x: tensor<4xf32>) {
    // expected-error @+1 {{'cleave.send_recv' op names axis 'tp', which the mesh #cleave.mesh<dp = 2, pp = 2> does not have}}
    %0 = cleave.send_recv %x over "tp" from 0 to 1 : tensor<4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, pp = 2>} {
  func.func @send_recv_stage_range(%x: tensor<4xf32>) {
    // expected-error @+1 {{'cleave.send_recv' op stage 2 is not a coordinate of axis 'pp' (size 2)}}
    %0 = cleave.send_recv %x over "pp" from 0 to 2 : tensor<4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<dp = 2, pp = 2>} {
  func.func @send_recv_to_itself(%x: tensor<4xf32>) {
    // expected-error @+1 {{'cleave.send_recv' op sends stage 1 to itself}}
    %0 = cleave.send_recv %x over "pp" from 1 to 1 : tensor<4xf32>
    return
  }
}

// -----

module attributes {cleave.mesh = #cleave.mesh<pp = 2>} {
  func.func @send_recv_type(%x: tensor<4xf32>) {
    // expected-error @+1 {{'cleave.send_recv' op failed to verify that all of {input, result} have same type}}
    %0 = "cleave.send_recv"(%x) <{axis = "pp", source = 0, dest = 1}> : (tensor<4xf32>) -> tensor<2xf32>
    return
  }
}
