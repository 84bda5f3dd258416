//===- CollectiveBuffers.cpp - what the cpu collectives hold --------------===//

#include "codegen/CollectiveBuffers.h"
#include "codegen/FusionPlan.h"
#include "codegen/MemoryPlan.h"

#include "runtime/CollectiveBuffers.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

namespace mlir::cleave {

namespace {

int64_t elementBytesOf(Value value) {
  return tensorBytes(value.getType()) /
         std::max<int64_t>(cast<ShapedType>(value.getType()).getNumElements(),
                           1);
}

int64_t numElements(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

/// The size of the group over `axes`.
int groupSize(MeshAttr mesh, ArrayAttr axes) {
  int64_t size = 1;
  for (StringAttr axis : axes.getAsRange<StringAttr>())
    size *= mesh.getAxisSize(axis.getValue());
  return static_cast<int>(size);
}

/// Whether `value` has dimensions of more than one element before `dim`:
/// then allGatherDim and reduceScatterDim rearrange it through the
/// caller's workspace.
bool rearranged(Value value, int64_t dim) {
  ArrayRef<int64_t> shape = cast<ShapedType>(value.getType()).getShape();
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  return outer != 1;
}

/// The element counts of a bucket's tensors.
SmallVector<int64_t> countsOf(AllReduceOp op) {
  SmallVector<int64_t> counts;
  for (Value input : op.getInputs())
    counts.push_back(numElements(input));
  return counts;
}

} // namespace

int64_t collectiveStagingBytes(AllReduceOp op) {
  SmallVector<int64_t> counts = countsOf(op);
  return ::cleave::rt::bucketStagingBytes(counts.data(),
                                          static_cast<int>(counts.size()),
                                          elementBytesOf(op.getInputs()[0]));
}

bool sendsUncopied(SendRecvOp op, const MemoryPlan &plan,
                   const FusionPlan &fusion) {
  Operation *done = fusion.executedAt.lookup(op);
  Value root = plan.root(op.getInput());
  if (!done || !plan.arenaOffset.count(root))
    return false;
  // No op before `done` writes the buffer in place (an alias of the sent
  // tensor other than a reshape's view; the plan's in-place rules take only
  // values read once, which a sent one is not, so this holds; checked
  // since a miss would corrupt data).
  int64_t stage = op.getSourceAttr().getInt();
  for (Operation *later = op->getNextNode(); later && later != done;
       later = later->getNextNode())
    if (runsOnStage(later, stage) && !isa<ReshapeOp>(later) &&
        llvm::any_of(later->getResults(),
                     [&](Value result) { return plan.root(result) == root; }))
      return false;
  return true;
}

CollectiveBufferBytes collectiveBufferBytes(func::FuncOp func,
                                            const MemoryPlan &plan,
                                            const FusionPlan &fusion,
                                            int64_t stage) {
  namespace rt = ::cleave::rt;
  MeshAttr mesh = getModuleMesh(func);
  if (!mesh)
    return {};
  int64_t workspace = 0, caller = 0, staging = 0;
  for (Operation &op : func.getBody().front()) {
    if (!runsOnStage(&op, stage))
      continue;
    if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
      int g = groupSize(mesh, allReduce.getAxes());
      int64_t elementBytes = elementBytesOf(allReduce.getInputs()[0]);
      SmallVector<int64_t> counts = countsOf(allReduce);
      rt::forEachBucketSegment(
          counts.data(), static_cast<int>(counts.size()), elementBytes,
          [&](int first, int end) {
            int64_t count = 0;
            for (int i = first; i < end; ++i)
              count += counts[i];
            workspace = std::max(
                workspace, rt::allReduceWorkspaceBytes(count, elementBytes, g));
          });
      staging += rt::bucketStagingBytes(
          counts.data(), static_cast<int>(counts.size()), elementBytes);
    } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
      int g = groupSize(mesh, scatter.getAxes());
      workspace =
          std::max(workspace, rt::reduceScatterWorkspaceBytes(
                                  numElements(scatter.getResult()),
                                  elementBytesOf(scatter.getResult()), g));
      if (rearranged(scatter.getInput(), scatter.getDim()))
        caller = std::max(caller, tensorBytes(scatter.getInput().getType()));
    } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
      if (rearranged(gather.getInput(), gather.getDim()))
        caller = std::max(caller, tensorBytes(gather.getResult().getType()));
    } else if (auto send = dyn_cast<SendRecvOp>(op)) {
      if (send.getSourceAttr().getInt() == stage &&
          !sendsUncopied(send, plan, fusion))
        staging += tensorBytes(send.getInput().getType());
    }
  }
  return {workspace + caller, staging};
}

} // namespace mlir::cleave
