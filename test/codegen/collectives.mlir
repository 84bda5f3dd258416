// RUN: cleave-translate --cleave-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// Collectives name their group as the mesh axes they run over (AxisGroup
// of axis indices). An all-reduce starts as a bucket the step finishes
// later, its handle a static of the program the parts reach through refs;
// the others are blocking calls over one dimension (runtime/Collectives.h,
// CollectiveKernels.h; NCCL on the cuda target, with the same calls).
// `{{[{][{]0[}]}}` is FileCheck for the literal `{{0}` of AxisGroup{{0}, 1}.

// CPU-LABEL: static void stepPart(
// CPU: const void *grad_sync_comm_in[] = {w};
// CPU-NEXT: void *grad_sync_comm_out[] = {[[SUM:grad_sync]]};
// CPU-NEXT: const int64_t grad_sync_comm_count[] = {64};
// CPU-NEXT: grad_sync_comm_1 = startAllReduceBucket(grad_sync_comm_in, grad_sync_comm_out, grad_sync_comm_count, 1, DType::F32, AxisGroup{{[{][{]0[}]}}, 1});  // grad_sync
// CPU: allGatherDim(x, Shape{4, 8}, 0, 4, gather_1, AxisGroup{{[{][{]0[}]}}, 1});  // gather
// CPU: reduceScatterDim(w, Shape{8, 8}, 0, DType::F32, scatter, AxisGroup{{[{][{]0[}]}}, 1});  // scatter
// CPU: allSliceDim(w, Shape{8, 8}, 0, 4, slice_1, AxisGroup{{[{][{]0[}]}}, 1});  // slice
// CPU: writeAxisIndex(rank, AxisGroup{{[{][{]0[}]}}, 1});  // rank
// CPU: static void trainStep(StepContext &ctx) {
// CPU: void *const refs[] = {(void *)(&grad_sync_comm)};
// CPU: finishAllReduceBucket(grad_sync_comm);
// CPU: std::copy_n([[SUM]], 64, static_cast<float *>(ctx.tensors[2]));  // output sum
// CPU: program.mesh = MeshSpec{1, kMeshAxes, kMeshSizes};

// CUDA-LABEL: static void stepPart(
// CUDA: grad_sync_comm_1 = startAllReduceBucket(grad_sync_comm_in, grad_sync_comm_out, grad_sync_comm_count, 1, DType::F32, AxisGroup{{[{][{]0[}]}}, 1});  // grad_sync
// CUDA: reduceScatterDim(w, Shape{8, 8}, 0, DType::F32, scatter, AxisGroup{{[{][{]0[}]}}, 1});  // scatter
// CUDA-LABEL: static void trainStep(StepContext &ctx) {
// CUDA: finishAllReduceBucket(grad_sync_comm);
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @step(%x: tensor<4x8xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[dp], []]>},
                  %w: tensor<8x8xf32> {cleave.param = "w", cleave.sharding = #cleave.sharding<[[], []]>})
      -> (tensor<8x8xf32> {cleave.output = "sum", cleave.sharding = #cleave.sharding<[[], []]>},
          tensor<8x8xf32> {cleave.output = "whole", cleave.sharding = #cleave.sharding<[[], []]>},
          tensor<4x8xf32> {cleave.output = "part", cleave.sharding = #cleave.sharding<[[dp], []]>},
          tensor<4x8xf32> {cleave.output = "block", cleave.sharding = #cleave.sharding<[[dp], []]>},
          tensor<i64> {cleave.output = "rank", cleave.sharding = #cleave.sharding<[]>}) {
    %s = cleave.all_reduce %w over ["dp"] : tensor<8x8xf32> loc("grad_sync")
    %g = cleave.all_gather %x over ["dp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32> loc("gather")
    %r = cleave.reduce_scatter %w over ["dp"] dim 0 : tensor<8x8xf32> -> tensor<4x8xf32> loc("scatter")
    %b = cleave.all_slice %w over ["dp"] dim 0 : tensor<8x8xf32> -> tensor<4x8xf32> loc("slice")
    %i = cleave.axis_index over ["dp"] : tensor<i64> loc("rank")
    return %s, %g, %r, %b, %i : tensor<8x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>
  }
}

// -----

// A pipeline's hand-over between stages: on the host the sending stage
// posts an asynchronous send from the value's own buffer (no copy: the
// memory plan keeps it until the send completes, FusionPlan.h's
// planUncopiedSends) and the receiving stage starts the receive
// and waits for it where the value is first used; the GPU exchanges it in
// one blocking sendRecv on each side. Each stage's step is its own
// function, chosen by the rank's coordinate along the pipeline axis.

// CPU-LABEL: static void stepPart(
// CPU: sendAsyncUncopied(first, 32 * 4, 1, AxisGroup{{[{][{]0[}]}}, 1});  // handover
// CPU-LABEL: static void stepPart_1(
// CPU: [[RECV:handover_recv]] = startReceive(handover, 32 * 4, 0, AxisGroup{{[{][{]0[}]}}, 1});  // handover
// CPU: finishAllReduceBucket([[RECV]]);
// CPU: static void trainStep(StepContext &ctx) {
// CPU-NEXT: switch (meshCoord(0)) {
// CPU-NEXT: case 0:
// CPU-NEXT: return trainStepOfStage0(ctx);
// CPU-NEXT: case 1:
// CPU-NEXT: return trainStepOfStage1(ctx);
// CPU: program.pipeline = PipelineSpec{0, 0, kStageArenaBytes};

// CUDA-LABEL: static void stepPart(
// CUDA: sendRecv(first, nullptr, 32 * 4, 1, kNoPeer, AxisGroup{{[{][{]0[}]}}, 1});  // handover
// CUDA-LABEL: static void stepPart_1(
// CUDA: sendRecv(nullptr, handover, 32 * 4, kNoPeer, 0, AxisGroup{{[{][{]0[}]}}, 1});  // handover
module attributes {cleave.mesh = #cleave.mesh<pp = 2>, cleave.pipeline = "pp"} {
  func.func @step(%x: tensor<4x8xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>})
      -> (tensor<4x8xf32> {cleave.output = "y", cleave.sharding = #cleave.sharding<[[], []]>}) {
    %a = cleave.relu %x {cleave.stage = 0 : i64} : tensor<4x8xf32> loc("first")
    %b = cleave.send_recv %a over "pp" from 0 to 1 : tensor<4x8xf32> loc("handover")
    %c = cleave.relu %b {cleave.stage = 1 : i64} : tensor<4x8xf32> loc("second")
    return %c : tensor<4x8xf32>
  }
}

// -----

// An all-reduce whose sum the next call reads: on the host one blocking
// call on the step's thread (handing it to the communication thread and
// waiting at once only adds the hand-offs), where a call between them
// keeps the start and the wait; the GPU starts it on its stream either way.

// CPU-LABEL: static void stepPart(
// CPU: allReduceBucket(stats_comm_in, stats_comm_out, stats_comm_count, 1, DType::F32, AxisGroup{{[{][{]0[}]}}, 1});  // stats
// CPU-NOT: finishAllReduceBucket
// CPU: mapUnary(stats, norm, 32, body::Relu{});  // norm
// CPU: late_comm_{{[0-9]+}} = startAllReduceBucket(late_comm_in, late_comm_out, late_comm_count, 1, DType::F32, AxisGroup{{[{][{]0[}]}}, 1});  // late
// CPU: finishAllReduceBucket(

// CUDA-LABEL: static void stepPart(
// CUDA: startAllReduceBucket(stats_comm_in
// CUDA: startAllReduceBucket(late_comm_in
module attributes {cleave.mesh = #cleave.mesh<dp = 2>} {
  func.func @step(%x: tensor<4x8xf32> {cleave.input = "x", cleave.sharding = #cleave.sharding<[[], []]>})
      -> (tensor<4x8xf32> {cleave.output = "y", cleave.sharding = #cleave.sharding<[[], []]>},
          tensor<4x8xf32> {cleave.output = "z", cleave.sharding = #cleave.sharding<[[], []]>}) {
    %s = cleave.all_reduce %x over ["dp"] : tensor<4x8xf32> loc("stats")
    %r = cleave.relu %s : tensor<4x8xf32> loc("norm")
    %l = cleave.all_reduce %r over ["dp"] : tensor<4x8xf32> loc("late")
    %e = cleave.relu %x : tensor<4x8xf32> loc("other")
    %t = cleave.relu %l : tensor<4x8xf32> loc("use")
    return %t, %e : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
