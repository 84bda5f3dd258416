//===- RunOutputs.cpp - the files a training run reads and keeps ----------===//

#include "runtime/RunOutputs.h"
#include "runtime/Checkpoint.h"
#include "runtime/Export.h"

#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace cleave::rt {

int64_t restoreValues(const RunOptions &options, TensorStore &store) {
  if (!options.init.empty())
    store.loadValues(options.init, /*checkpoint=*/false, options);
  int64_t firstStep = 0;
  if (!options.resume)
    return firstStep;
  std::string path, error;
  if (!findLatestCheckpoint(options.checkpointDir, path, firstStep, error))
    failRun(error);
  store.loadValues(path, /*checkpoint=*/true, options);
  if (!options.quiet && store.global.isRoot())
    std::fprintf(stderr, "resuming from '%s' after step %lld\n", path.c_str(),
                 static_cast<long long>(firstStep));
  return firstStep;
}

void Checkpointer::afterStep(int64_t step, RunReports &reports) {
  bool last = step + 1 == options.steps;
  if (options.checkpointDir.empty() ||
      !(last ||
        (options.checkpointEvery && (step + 1) % options.checkpointEvery == 0)))
    return;
  store.writeOnRoot([&](std::string &error) {
    if (!reports.syncLog(error) ||
        !saveCheckpoint(options.checkpointDir, step + 1, store.global.program,
                        store.wholeTensors(), error))
      return false;
    // --overwrite-checkpoints: the earlier run's checkpoints go once this
    // run has one of its own.
    std::string warning;
    if (options.overwriteCheckpoints && !saved &&
        !removeOtherCheckpoints(options.checkpointDir, step + 1, warning))
      std::fprintf(stderr, "warning: %s\n", warning.c_str());
    saved = true;
    return true;
  });
}

void writeFinalOutputs(const Program &program, const RunOptions &options,
                       TensorStore &store) {
  const Program &io = store.global.program;
  if (!options.dumpParams.empty())
    store.writeOnRoot([&](std::string &error) {
      return writeTensors(options.dumpParams, io, store.wholeTensors(),
                          /*outputs=*/false, error);
    });
  if (!options.exportOnnx.empty())
    store.writeOnRoot([&](std::string &error) {
      return exportOnnx(options.exportOnnx, io, store.wholeTensors(), error);
    });
  if (!options.dumpOutputs.empty())
    store.writeOnRoot([&](std::string &error) {
      return writeTensors(options.dumpOutputs, io, store.wholeTensors(),
                          /*outputs=*/true, error);
    });
  if (options.dumpLocal.empty())
    return;
  const GlobalTensors &global = store.global;
  std::string dir = options.dumpLocal + "/rank" +
                    std::to_string(global.distributed ? worldRank() : 0);
  mkdir(options.dumpLocal.c_str(), 0777);
  store.toHost({Role::Param, Role::State, Role::Output});
  // The tensors this rank holds.
  std::vector<TensorSpec> held;
  std::vector<void *> heldPointers;
  for (int i = 0; i < program.numTensors; ++i)
    if (global.holds(i)) {
      held.push_back(program.tensors[i]);
      heldPointers.push_back(store.hostCopy(i));
    }
  Program mine = program;
  mine.tensors = held.data();
  mine.numTensors = static_cast<int>(held.size());
  std::string error;
  if (!allSucceeded(writeTensors(dir, mine, heldPointers.data(),
                                 /*outputs=*/false, error),
                    global))
    failRun(error.empty() ? "another rank could not write --dump-local"
                          : error);
}

} // namespace cleave::rt
