// RUN: cleave-opt %s --cleave-unroll-microbatches="axis=mb" | FileCheck %s
// RUN: cleave-opt %s --cleave-unroll-microbatches="axis=mb accumulate=true" | FileCheck %s --check-prefix=ACC

// The two-layer training step of cleave-pipeline-stages.mlir, partitioned
// over a mesh axis mb = 2 that splits the batch (cleave compile --mesh mb=2
// --shard 'x=[mb,_]' --shard 'y=[mb]'), then unrolled: the arguments become
// the whole batch, each micro-batch reads its rows, the batch-dependent
// ops run once per micro-batch (every forward op first, then every
// backward op), the all_reduce over mb becomes adds, each adding a
// micro-batch's part as soon as it exists and marked as that
// micro-batch's (the pipeline schedule runs it in its passes), and mb
// leaves the mesh (here the last axis: the module loses its mesh).

// CHECK: module {
// CHECK: func.func @two(%arg0: tensor<4x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<{{\[\[}}], []]>}, %arg1: tensor<4xi64> {cleave.input = "y", cleave.sharding = #cleave.sharding<{{\[\[}}]]>}
// CHECK: %[[X0:.*]] = cleave.slice %arg0 {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<2x3xf32>
// CHECK: %[[X1:.*]] = cleave.slice %arg0 {offsets = array<i64: 2, 0>, strides = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<2x3xf32>
// CHECK: cleave.matmul %[[X0]], %arg2 {cleave.microbatch = array<i64: 0, 3>}
// CHECK: %[[L0:.*]], %{{.*}} = cleave.softmax_cross_entropy {{.*}}cleave.microbatch = array<i64: 0, 6>
// CHECK: cleave.matmul %[[X1]], %arg2 {cleave.microbatch = array<i64: 1, 3>}
// CHECK: %[[L1:.*]], %{{.*}} = cleave.softmax_cross_entropy {{.*}}cleave.microbatch = array<i64: 1, 6>
// CHECK-NEXT: %[[L:.*]] = cleave.add %[[L0]], %[[L1]] {cleave.microbatch = array<i64: 1, {{[0-9]+}}>} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: cleave.softmax_cross_entropy_grad {{.*}}cleave.microbatch = array<i64: 0, 10>
// CHECK: %[[G0:.*]] = cleave.matmul {{.*}}cleave.microbatch = array<i64: 0, 18>} : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK: cleave.softmax_cross_entropy_grad {{.*}}cleave.microbatch = array<i64: 1, 10>
// CHECK: %[[G1:.*]] = cleave.matmul {{.*}}cleave.microbatch = array<i64: 1, 18>} : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[G:.*]] = cleave.add %[[G0]], %[[G1]] {cleave.microbatch = array<i64: 1, {{[0-9]+}}>} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: cleave.sgd %arg2, %[[G]]
// CHECK-NOT: cleave.all_reduce
// CHECK: return
// With accumulate (a step without pipeline stages), PyTorch's accumulation
// loop: each micro-batch's forward ops, then its backward ops, one
// micro-batch's activations alive at a time; each sum adds a micro-batch's
// part as soon as it exists (one part alive at a time, as .grad
// accumulates), the same chain of adds.
// ACC: %[[X0:.*]] = cleave.slice %arg0 {offsets = array<i64: 0, 0>
// ACC: %[[X1:.*]] = cleave.slice %arg0 {offsets = array<i64: 2, 0>
// ACC: cleave.matmul %[[X0]], %arg2 {cleave.microbatch = array<i64: 0, 3>}
// ACC: %[[L0:.*]], %{{.*}} = cleave.softmax_cross_entropy {{.*}}cleave.microbatch = array<i64: 0, 6>
// ACC: cleave.softmax_cross_entropy_grad {{.*}}cleave.microbatch = array<i64: 0, 10>
// ACC: %[[G0:.*]] = cleave.matmul {{.*}}cleave.microbatch = array<i64: 0, 18>} : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// ACC: cleave.matmul %[[X1]], %arg2 {cleave.microbatch = array<i64: 1, 3>}
// ACC: %[[L1:.*]], %{{.*}} = cleave.softmax_cross_entropy {{.*}}cleave.microbatch = array<i64: 1, 6>
// ACC-NEXT: %[[L:.*]] = cleave.add %[[L0]], %[[L1]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// ACC: cleave.softmax_cross_entropy_grad {{.*}}cleave.microbatch = array<i64: 1, 10>
// ACC: %[[G1:.*]] = cleave.matmul {{.*}}cleave.microbatch = array<i64: 1, 18>} : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// ACC-NEXT: %[[G:.*]] = cleave.add %[[G0]], %[[G1]] : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// ACC: cleave.sgd %arg2, %[[G]]
// ACC-NOT: cleave.all_reduce
// ACC: return
module attributes {cleave.mesh = #cleave.mesh<mb = 2>} {
  func.func @two(%arg0: tensor<2x3xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[mb], []]>}, %arg1: tensor<2xi64> {cleave.input = "y", cleave.sharding = #cleave.sharding<[[mb]]>}, %arg2: tensor<3x4xf32> {cleave.param = "w1", cleave.sharding = #cleave.sharding<[[], []]>}, %arg3: tensor<4x2xf32> {cleave.param = "w2", cleave.sharding = #cleave.sharding<[[], []]>}, %arg4: tensor<i64> {cleave.sharding = #cleave.sharding<[]>, cleave.step}) -> (tensor<f32> {cleave.loss, cleave.output = "loss", cleave.sharding = #cleave.sharding<[]>}, tensor<3x4xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "w1"}, tensor<4x2xf32> {cleave.sharding = #cleave.sharding<[[], []]>, cleave.update = "w2"}) {
    %0 = cleave.constant dense<0.000000e+00> : tensor<f32>
    %1 = cleave.constant dense<1.000000e+00> : tensor<f32>
    %2 = cleave.constant dense<4.000000e+00> : tensor<f32>
    %3 = cleave.matmul %arg0, %arg2 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %4 = cleave.relu %3 : tensor<2x4xf32>
    %5 = cleave.matmul %4, %arg3 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
    %loss, %log_prob = cleave.softmax_cross_entropy %5, %arg1 {reduction = #cleave.reduction<sum>} : (tensor<2x2xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x2xf32>)
    %6 = cleave.all_reduce %loss over ["mb"] : tensor<f32>
    %7 = cleave.div %6, %2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %8 = cleave.div %1, %2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %9 = cleave.softmax_cross_entropy_grad %8, %log_prob, %arg1 {reduction = #cleave.reduction<sum>} : (tensor<f32>, tensor<2x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
    %10 = cleave.transpose %arg3 {permutation = array<i64: 1, 0>} : tensor<4x2xf32> -> tensor<2x4xf32>
    %11 = cleave.matmul %9, %10 : (tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %12 = cleave.transpose %4 {permutation = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
    %13 = cleave.matmul %12, %9 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
    %14 = cleave.less %0, %3 : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %15 = cleave.where %14, %11, %0 : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %16 = cleave.transpose %arg0 {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
    %17 = cleave.matmul %16, %15 : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %18:2 = cleave.all_reduce %13, %17 over ["mb"] : tensor<4x2xf32>, tensor<3x4xf32>
    %19 = cleave.sgd %arg2, %18#1 step(%arg4) {dampening = 0.000000e+00 : f32, lr = 1.000000e-01 : f32, momentum = 0.000000e+00 : f32, nesterov = false, weight_decay = 0.000000e+00 : f32} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
    %20 = cleave.sgd %arg3, %18#0 step(%arg4) {dampening = 0.000000e+00 : f32, lr = 1.000000e-01 : f32, momentum = 0.000000e+00 : f32, nesterov = false, weight_decay = 0.000000e+00 : f32} : (tensor<4x2xf32>, tensor<4x2xf32>, tensor<i64>) -> tensor<4x2xf32>
    return %7, %19, %20 : tensor<f32>, tensor<3x4xf32>, tensor<4x2xf32>
  }
}
