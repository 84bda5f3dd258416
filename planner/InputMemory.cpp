//===- InputMemory.cpp - the memory a step's inputs hold ------------------===//

#include "planner/InputMemory.h"

#include "codegen/MemoryPlan.h"
#include "dialects/cleave/CleaveOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::cleave;

namespace cleave::planner {

std::vector<InputBytes> stageInputBytes(func::FuncOp step, int64_t stages,
                                        Target target) {
  MeshAttr mesh = getModuleMesh(step);
  // A rank makes the synthetic rows it reads: its block's, or one whole
  // batch for an input split along another dimension, from which it
  // assembles the batch (one buffer, as large as the largest such input)
  // and cuts its block.
  std::vector<int64_t> blocks(stages, 0), counters(stages, 0), made(stages, 0),
      wholeBatch(stages, 0);
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    bool input = step.getArgAttr(i, CleaveDialect::kInputAttrName) != nullptr;
    if (!input && !step.getArgAttr(i, CleaveDialect::kStepAttrName))
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    int64_t local = tensorBytes(type), whole = local;
    bool rowsOnly = true;
    if (auto sharding = step.getArgAttrOfType<ShardingAttr>(
            i, CleaveDialect::kShardingAttrName);
        sharding && mesh) {
      for (int64_t d = 0; d < type.getRank(); ++d) {
        whole *= mesh.getGroupSize(sharding.getDimAxes(d));
        rowsOnly = rowsOnly && (d == 0 || sharding.getDimAxes(d).empty());
      }
    }
    auto at =
        step.getArgAttrOfType<IntegerAttr>(i, CleaveDialect::kStageAttrName);
    for (int64_t s = 0; s < stages; ++s) {
      if (at && stages > 1 && at.getInt() != s)
        continue;
      (input ? blocks : counters)[s] += local;
      if (input)
        made[s] += rowsOnly ? local : whole;
      if (input && !rowsOnly)
        wholeBatch[s] = std::max(wholeBatch[s], whole);
    }
  }
  std::vector<InputBytes> bytes(stages);
  for (int64_t s = 0; s < stages; ++s) {
    bytes[s].graphInputs = blocks[s];
    if (target == Target::Cpu)
      bytes[s].graphInputs += made[s] + wholeBatch[s];
    bytes[s].total = bytes[s].graphInputs + counters[s];
  }
  return bytes;
}

} // namespace cleave::planner
