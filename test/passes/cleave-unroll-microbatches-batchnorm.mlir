// RUN: cleave-opt %s --split-input-file --cleave-propagate-sharding --cleave-partition --cleave-unroll-microbatches="axis=microbatch" | FileCheck %s

// A training BatchNorm with its batch in micro-batches (the reserved axis
// name of cleave compile --microbatches): each micro-batch's copy
// normalizes its own rows, starts from the running statistics the previous
// copy left, and the step returns the last copy's; the scale gradients of
// the micro-batches are summed. No gather over micro-batches.

// CHECK-LABEL: func.func @micro
// CHECK-NOT: all_gather
// CHECK: %[[X0:.*]] = cleave.slice %arg0 {offsets = array<i64: 0, 0>
// CHECK: %[[X1:.*]] = cleave.slice %arg0 {offsets = array<i64: 2, 0>
// CHECK: %{{.*}}, %[[M0:.*]], %[[V0:.*]] = cleave.batch_norm %[[X0]], %arg1, %arg2, %arg3, %arg4 {cleave.microbatch = array<i64: 0, 0>
// CHECK-SAME: (tensor<2x4xf32>
// CHECK: %{{.*}}, %[[S0:.*]], %{{.*}} = cleave.batch_norm_grad %{{.*}}, %[[X0]], %arg1 {cleave.microbatch = array<i64: 0,
// CHECK: %{{.*}}, %[[M1:.*]], %[[V1:.*]] = cleave.batch_norm %[[X1]], %arg1, %arg2, %[[M0]], %[[V0]] {cleave.microbatch = array<i64: 1, 0>
// CHECK: %{{.*}}, %[[S1:.*]], %{{.*}} = cleave.batch_norm_grad %{{.*}}, %[[X1]], %arg1 {cleave.microbatch = array<i64: 1,
// CHECK: %[[S:.*]] = cleave.add %[[S0]], %[[S1]] : (tensor<4xf32>, tensor<4xf32>)
// CHECK-NOT: all_reduce
// CHECK: return %{{.*}}, %[[S]], %[[M1]], %[[V1]]
module attributes {cleave.mesh = #cleave.mesh<microbatch = 2>} {
  func.func @micro(%x: tensor<4x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[microbatch], []]>}, %scale: tensor<4xf32> {cleave.param = "bn.weight"}, %bias: tensor<4xf32> {cleave.param = "bn.bias"}, %mean: tensor<4xf32> {cleave.state = "bn.running_mean"}, %var: tensor<4xf32> {cleave.state = "bn.running_var"}, %dy: tensor<4x4xf32> {cleave.input = "dy", cleave.sharding = #cleave.sharding<[[microbatch], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss"}, tensor<4xf32> {cleave.grad = "bn.weight"}, tensor<4xf32> {cleave.update = "bn.running_mean"}, tensor<4xf32> {cleave.update = "bn.running_var"}) {
    %y, %rm, %rv = cleave.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true} : (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>)
    %s = cleave.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x4xf32> -> tensor<f32>
    %dx, %ds, %db = cleave.batch_norm_grad %dy, %x, %scale {epsilon = 1.0e-05 : f32} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>)
    return %s, %ds, %rm, %rv : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// With data parallelism too, a micro-batch is the rows all dp ranks run
// as it: its BatchNorm gathers them over dp (not over micro-batches),
// normalizes them, and keeps this rank's; the gradient reuses the gathered
// input. Its scale gradient is whole on every dp rank (computed from the
// gathered rows): summed over micro-batches only, never all-reduced.

// CHECK-LABEL: func.func @data_parallel
// CHECK: %[[X0:.*]] = cleave.slice %arg0 {offsets = array<i64: 0, 0>
// CHECK: %[[X1:.*]] = cleave.slice %arg0 {offsets = array<i64: 2, 0>
// CHECK-NOT: all_gather {{.*}}microbatch"
// CHECK: %[[G0:.*]] = cleave.all_gather %[[X0]] over ["dp"] dim 0 {{.*}} : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK: %[[Y0:.*]], %[[M0:.*]], %[[V0:.*]] = cleave.batch_norm %[[G0]], %arg1, %arg2, %arg3, %arg4
// CHECK: cleave.all_slice %[[Y0]] over ["dp"] dim 0 {{.*}} : tensor<4x4xf32> -> tensor<2x4xf32>
// CHECK: %[[G1:.*]] = cleave.all_gather %[[X1]] over ["dp"] dim 0
// CHECK: %{{.*}}, %[[M1:.*]], %[[V1:.*]] = cleave.batch_norm %[[G1]], %arg1, %arg2, %[[M0]], %[[V0]]
// CHECK: %{{.*}}, %[[S0:.*]], %{{.*}} = cleave.batch_norm_grad %{{.*}}, %[[G0]], %arg1
// CHECK: %{{.*}}, %[[S1:.*]], %{{.*}} = cleave.batch_norm_grad %{{.*}}, %[[G1]], %arg1
// CHECK: %[[S:.*]] = cleave.add %[[S0]], %[[S1]] : (tensor<4xf32>, tensor<4xf32>)
// CHECK-NOT: cleave.all_reduce %[[S]]
// CHECK: return %{{.*}}, %[[S]], %[[M1]], %[[V1]]
module attributes {cleave.mesh = #cleave.mesh<dp = 2, microbatch = 2>} {
  func.func @data_parallel(%x: tensor<8x4xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp, microbatch], []]>}, %scale: tensor<4xf32> {cleave.param = "bn.weight"}, %bias: tensor<4xf32> {cleave.param = "bn.bias"}, %mean: tensor<4xf32> {cleave.state = "bn.running_mean"}, %var: tensor<4xf32> {cleave.state = "bn.running_var"}, %dy: tensor<8x4xf32> {cleave.input = "dy", cleave.sharding = #cleave.sharding<[[dp, microbatch], []]>}) -> (tensor<f32> {cleave.loss, cleave.output = "loss"}, tensor<4xf32> {cleave.grad = "bn.weight"}, tensor<4xf32> {cleave.update = "bn.running_mean"}, tensor<4xf32> {cleave.update = "bn.running_var"}) {
    %y, %rm, %rv = cleave.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true} : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
    %s = cleave.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : tensor<8x4xf32> -> tensor<f32>
    %dx, %ds, %db = cleave.batch_norm_grad %dy, %x, %scale {epsilon = 1.0e-05 : f32} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
    return %s, %ds, %rm, %rv : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
