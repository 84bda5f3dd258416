//===- CpuWorkspace.cpp - memory the cpu kernels hold beside the plan -----===//

#include "planner/CpuWorkspace.h"

#include "dialects/cleave/CleaveDialect.h"
#include "dialects/cleave/CleaveOps.h"
#include "planner/CpuConvolution.h"
#include "runtime/MatmulGeometry.h"
#include "runtime/OneDnnConvolution.h"

#include <algorithm>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The stage `op` runs on: its own or its nearest ancestor's; -1 for all.
int64_t stageOf(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto at = op->getAttrOfType<IntegerAttr>(CleaveDialect::kStageAttrName))
      return at.getInt();
  return -1;
}

} // namespace

std::vector<int64_t> cpuKernelWorkspaceBytes(func::FuncOp step,
                                             const FusionPlan &fusion,
                                             int64_t stages, int threads) {
  // Per stage, each workspace's largest call (oneDNN's, then the strided
  // products' buffer; the step calls those on one thread).
  using Slots = std::array<int64_t, rt::kOneDnnWorkspaces + 1>;
  std::vector<Slots> largest(std::max<int64_t>(stages, 1), Slots{});
  auto note = [&](Operation *op, int slot, int64_t bytes) {
    int64_t stage = stages > 1 ? stageOf(op) : -1;
    for (int64_t s = 0; s < static_cast<int64_t>(largest.size()); ++s)
      if (stage < 0 || stage == s)
        largest[s][slot] = std::max(largest[s][slot], bytes);
  };
  step.walk([&](Operation *op) {
    if (auto matmul = dyn_cast<MatmulOp>(op);
        matmul && runsStrided(matmul, fusion)) {
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(matmul.getType()).getShape();
      size_t r = shape.size();
      int64_t count = 1;
      for (int64_t d : shape.drop_back(2))
        count *= d;
      int64_t k =
          cast<RankedTensorType>(matmul.getLhs().getType()).getShape().back();
      note(
          op, rt::kOneDnnWorkspaces,
          rt::stridedProductBufferFloats(count, shape[r - 2], shape[r - 1], k) *
              int64_t(sizeof(float)));
      return;
    }
    std::optional<CpuConvCall> call = cpuConvCall(op, threads);
    if (!call || !call->oneDnn)
      return;
    int64_t bytes[rt::kOneDnnWorkspaces];
    rt::oneDnnConvWorkspaces(
        call->pass, call->x, call->w, call->y, call->strides, call->pads,
        call->dilations, call->group, call->bias, call->layout, threads, bytes);
    for (int i = 0; i < rt::kOneDnnWorkspaces; ++i)
      note(op, i, bytes[i]);
  });
  std::vector<int64_t> total;
  for (const Slots &slots : largest) {
    int64_t sum = 0;
    for (int64_t bytes : slots)
      sum += bytes;
    total.push_back(sum);
  }
  return total;
}

} // namespace cleave::planner
