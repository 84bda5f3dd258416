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
// CHECK: %[[S:.*]] = cleave.add %[[S0]], %[[S1]] {cleave.microbatch = array<i64: 1, {{[0-9]+}}>} : (tensor<4xf32>, tensor<4xf32>)
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
// as it: its BatchNorm normalizes this rank's rows with the statistics of
// all of them, from per-rank sums all-reduced over dp (C values each, not
// the rows; never over micro-batches; divided by the micro-batch's 4 rows
// over both ranks), and so does its gradient. Its scale
// gradient is such an all-reduced sum, whole on every dp rank: summed over
// micro-batches only, never all-reduced again.

// CHECK-LABEL: func.func @data_parallel
// CHECK: %[[X0:.*]] = cleave.slice %arg0 {offsets = array<i64: 0, 0>
// CHECK: %[[X1:.*]] = cleave.slice %arg0 {offsets = array<i64: 2, 0>
// CHECK-NOT: all_gather
// CHECK: %[[S0:.*]] = cleave.batch_norm_sum %[[X0]] {{{.*}}divisor = 4 : i64} : tensor<2x4xf32> -> tensor<4xf32>
// CHECK: %[[MEAN0:.*]] = cleave.all_reduce %[[S0]] over ["dp"]
// CHECK: %[[VAR0:.*]] = cleave.all_reduce %{{.*}} over ["dp"]
// CHECK: %{{.*}}, %[[M0:.*]], %[[V0:.*]] = cleave.batch_norm %[[X0]], %arg1, %arg2, %arg3, %arg4, %[[MEAN0]], %[[VAR0]]
// CHECK: %{{.*}}, %[[M1:.*]], %[[V1:.*]] = cleave.batch_norm %[[X1]], %arg1, %arg2, %[[M0]], %[[V0]],
// CHECK-NOT: batch_norm_grad {{.*}}
// CHECK: %[[G0:[0-9]+]]:2 = cleave.all_reduce %{{.*}}, %{{.*}} over ["dp"]
// CHECK: %{{.*}}, %[[DS0:.*]], %{{.*}} = cleave.batch_norm_grad_from_sums %{{.*}}, %[[X0]], %arg1, %[[MEAN0]], %[[VAR0]], %[[G0]]#0, %[[G0]]#1 {{{.*}}count = 4 : i64
// CHECK: %[[G1:[0-9]+]]:2 = cleave.all_reduce %{{.*}}, %{{.*}} over ["dp"]
// CHECK: %{{.*}}, %[[DS1:.*]], %{{.*}} = cleave.batch_norm_grad_from_sums %{{.*}}, %[[X1]], %arg1, {{.*}}, %[[G1]]#0, %[[G1]]#1
// CHECK: %[[S:.*]] = cleave.add %[[DS0]], %[[DS1]]
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
