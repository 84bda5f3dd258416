//===- RunStart.h - what a program checks before it trains ------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Start-up: the mesh, the
// command line, the device, the output locations and the agreement of all
// ranks, each of which may refuse the run before its first step.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_RUNSTART_H
#define CLEAVE_RUNTIME_RUNSTART_H

#include "runtime/DriverData.h"
#include "runtime/DriverOptions.h"
#include "runtime/GlobalTensors.h"
#include "runtime/Program.h"
#include "runtime/TensorStore.h"

#include <cstdint>

namespace cleave::rt {

/// Starts the mesh (which takes its own arguments out of argc/argv) and
/// parses the program's command line; refuses a one-rank program started
/// as several ranks.
RunOptions startRun(const Program &program, int &argc, char **&argv);

/// Chooses every rank's device (the cuda target); all ranks exit when one
/// has none it can use.
void startDevice(const Program &program, const GlobalTensors &global);

/// Checks every location the run will write before it trains, and locks
/// the checkpoint directory; all ranks exit when one cannot write.
void checkOutputLocations(const RunOptions &options,
                          const GlobalTensors &global);

/// Ranks that would compute different things would wait in mismatched
/// collectives: all check first that they agree on the program, the flags
/// that decide what they compute, the data and the loaded values
/// (RankAgreement.h). `firstStep` is the step a resumed run starts at.
void requireRankAgreement(const Program &program, const RunOptions &options,
                          int64_t firstStep, const TrainingData &data,
                          const TensorStore &store);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_RUNSTART_H
