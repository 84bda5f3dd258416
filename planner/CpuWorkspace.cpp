//===- CpuWorkspace.cpp - memory the cpu kernels hold beside the plan -----===//

#include "planner/CpuWorkspace.h"

#include "dialects/cleave/CleaveDialect.h"
#include "planner/CpuConvolution.h"
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

std::vector<int64_t> cpuKernelWorkspaceBytes(func::FuncOp step, int64_t stages,
                                             int threads) {
  // Per stage, each workspace's largest call.
  using Slots = std::array<int64_t, rt::kOneDnnWorkspaces>;
  std::vector<Slots> largest(std::max<int64_t>(stages, 1), Slots{});
  step.walk([&](Operation *op) {
    std::optional<CpuConvCall> call = cpuConvCall(op, threads);
    if (!call || !call->oneDnn)
      return;
    int64_t bytes[rt::kOneDnnWorkspaces];
    rt::oneDnnConvWorkspaces(
        call->pass, call->x, call->w, call->y, call->strides, call->pads,
        call->dilations, call->group, call->bias, call->layout, threads, bytes);
    int64_t stage = stages > 1 ? stageOf(op) : -1;
    for (int64_t s = 0; s < static_cast<int64_t>(largest.size()); ++s)
      if (stage < 0 || stage == s)
        for (int i = 0; i < rt::kOneDnnWorkspaces; ++i)
          largest[s][i] = std::max(largest[s][i], bytes[i]);
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
