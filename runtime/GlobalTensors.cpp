//===- GlobalTensors.cpp - a distributed program's tensors, whole ---------===//

#include "runtime/GlobalTensors.h"
#include "runtime/Collectives.h"
#include "runtime/DriverOptions.h"

namespace cleave::rt {

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

void GlobalTensors::gatherWhole(int i, const void *local, void *whole) const {
  if (isStaged(i)) {
    // The stage holding it assembles it and sends it to the others.
    if (holds(i))
      gatherGlobal(static_cast<const char *>(local), localShape(i),
                   shardings[i], program.mesh, coords.data(), stageGroup(),
                   dtypeSize(specs[i].dtype), static_cast<char *>(whole));
    broadcast(whole, wholeBytes(i), specs[i].stage, pipelineGroup());
  } else if (isSplit(i))
    gatherGlobal(static_cast<const char *>(local), localShape(i), shardings[i],
                 program.mesh, coords.data(), allAxes(program.mesh),
                 dtypeSize(specs[i].dtype), static_cast<char *>(whole));
}

bool allSucceeded(bool ok, const GlobalTensors &global) {
  if (!global.distributed)
    return ok;
  int64_t failures = ok ? 0 : 1;
  allReduceSum(&failures, 1, DType::I64, allAxes(global.program.mesh));
  return failures == 0;
}

} // namespace cleave::rt
