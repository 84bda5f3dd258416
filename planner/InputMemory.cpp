//===- InputMemory.cpp - the memory a step's inputs hold ------------------===//

#include "planner/InputMemory.h"

#include "codegen/MemoryPlan.h"
#include "dialects/cleave/CleaveOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::cleave;

namespace cleave::planner {

std::vector<int64_t> stageInputBytes(func::FuncOp step, int64_t stages,
                                     Target target) {
  MeshAttr mesh = getModuleMesh(step);
  // Every rank loads every graph input (the ranks check they were given
  // the same data); each keeps blocks of those its stage reads.
  int64_t loaded = 0;
  std::vector<int64_t> blocks(stages, 0), wholeBatch(stages, 0);
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
    if (input)
      loaded += whole;
    auto at =
        step.getArgAttrOfType<IntegerAttr>(i, CleaveDialect::kStageAttrName);
    for (int64_t s = 0; s < stages; ++s) {
      if (at && stages > 1 && at.getInt() != s)
        continue;
      blocks[s] += local;
      if (input && !rowsOnly)
        wholeBatch[s] = std::max(wholeBatch[s], whole);
    }
  }
  if (target == Target::Cuda)
    return blocks;
  for (int64_t s = 0; s < stages; ++s)
    blocks[s] += loaded + wholeBatch[s];
  return blocks;
}

} // namespace cleave::planner
