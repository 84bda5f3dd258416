//===- GlobalTensors.cpp - a distributed program's tensors, whole ---------===//

#include "runtime/GlobalTensors.h"
#include "runtime/Collectives.h"
#include "runtime/DriverOptions.h"

namespace cleave::rt {

bool GlobalTensors::isFirstOfStage() const {
  if (!distributed)
    return true;
  for (int a = 0; a < program.mesh.numAxes; ++a)
    if (a != program.pipeline.axis && coords[a] != 0)
      return false;
  return true;
}

GlobalTensors::GlobalTensors(const Program &local)
    : program(local), localTensors(local.tensors) {
  distributed = local.mesh.numAxes > 0;
  if (distributed)
    coords = meshCoordsOf(local.mesh, worldRank());
  if (distributed && local.pipeline.axis >= 0)
    stage = coords[local.pipeline.axis];
  for (int i = 0; i < local.numTensors; ++i) {
    TensorSpec spec = local.tensors[i];
    TensorSharding sharding;
    std::string error;
    if (!parseSharding(spec.sharding, local.mesh, spec.shape.rank, sharding,
                       error))
      failRun(error + " (tensor '" + spec.name + "'); recompile the program");
    spec.shape = globalShape(spec.shape, sharding, local.mesh);
    specs.push_back(spec);
    shardings.push_back(sharding);
  }
  program.tensors = specs.data();
}

AxisGroup GlobalTensors::pipelineGroup() const {
  return AxisGroup{{static_cast<int8_t>(program.pipeline.axis)}, 1};
}

AxisGroup GlobalTensors::stageGroup() const {
  AxisGroup group{{}, 0};
  for (int a = 0; a < program.mesh.numAxes; ++a)
    if (a != program.pipeline.axis)
      group.axes[group.count++] = static_cast<int8_t>(a);
  return group;
}

int64_t GlobalTensors::firstLocalRow(int i) const {
  const Shape &local = localShape(i);
  if (!distributed || local.rank == 0)
    return 0;
  for (int d = 1; d < local.rank; ++d)
    if (shardings[i].dims[d].count > 0)
      return -1;
  return blockIndex(shardings[i].dims[0], program.mesh, coords.data()) *
         local.dims[0];
}

void GlobalTensors::toLocal(int i, const char *global, void *local) const {
  // A stage's tensors may be split over the other axes, never over the
  // pipeline's (the compiler refuses that).
  if (!holds(i))
    return;
  copyBlock(const_cast<char *>(global), specs[i].shape,
            static_cast<char *>(local), localShape(i), shardings[i],
            program.mesh, coords.data(), dtypeSize(specs[i].dtype),
            /*toLocal=*/true);
}

void GlobalTensors::gatherToRoot(int i, const void *local, void *whole) const {
  auto *to = static_cast<char *>(whole);
  if (isStaged(i)) {
    // The first rank of the stage holding it assembles it where its stage
    // splits it (or where that stage is rank 0's) and, on another stage
    // than rank 0's, sends it to rank 0 (both in rank 0's pipeline group:
    // every other coordinate 0); a tensor whole on its stage is sent as
    // it is.
    int from = static_cast<int>(specs[i].stage);
    const char *source = static_cast<const char *>(local);
    if (holds(i) && (from == 0 || !shardings[i].isReplicated())) {
      gatherGlobalToFirst(source, localShape(i), shardings[i], program.mesh,
                          coords.data(), stageGroup(),
                          dtypeSize(specs[i].dtype), to);
      source = to;
    }
    if (!isFirstOfStage() || from == 0)
      return;
    if (stage == from)
      sendRecv(source, nullptr, wholeBytes(i), 0, kNoPeer, pipelineGroup());
    else if (stage == 0)
      sendRecv(nullptr, to, wholeBytes(i), kNoPeer, from, pipelineGroup());
  } else if (isSplit(i))
    gatherGlobalToFirst(static_cast<const char *>(local), localShape(i),
                        shardings[i], program.mesh, coords.data(),
                        allAxes(program.mesh), dtypeSize(specs[i].dtype), to);
}

bool allSucceeded(bool ok, const GlobalTensors &global) {
  if (!global.distributed)
    return ok;
  int64_t failures = ok ? 0 : 1;
  allReduceSum(&failures, 1, DType::I64, allAxes(global.program.mesh));
  return failures == 0;
}

} // namespace cleave::rt
