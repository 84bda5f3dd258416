//===- DriverOptions.h - the training program's command line ----*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The flags every
// generated program accepts (`./train --help` prints them), parsed and
// checked before anything is loaded.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DRIVEROPTIONS_H
#define CLEAVE_RUNTIME_DRIVEROPTIONS_H

#include "runtime/Collectives.h"

#include <cstdint>
#include <string>

namespace cleave::rt {

/// The program's flags, as parsed.
struct RunOptions {
  std::string data, log, dumpParams, dumpOutputs, init, checkpointDir,
      exportOnnx, dumpLocal, trace;
  bool synthetic = false, quiet = false, resume = false, shuffle = false,
       printComm = false, printMemory = false, printMemoryPeak = false,
       overwriteCheckpoints = false, allowNonFinite = false;
  int64_t steps = 1, checkpointEvery = 0;
  uint64_t seed = 1234, shuffleSeed = 0;
  int64_t collectiveTimeout = kDefaultCollectiveTimeoutSeconds;
  /// --trace-steps A:B: the steps traced, [traceFirst, traceLast).
  int64_t traceFirst = 1, traceLast = 3;
};

/// Parses the program's command line: prints the usage and exits 0 for
/// --help; prints the error and exits 1 for a bad or contradictory flag.
RunOptions parseRunOptions(int argc, char **argv);

/// Prints `<program>: error: <message>` and exits 1.
[[noreturn]] void failRun(const std::string &message);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DRIVEROPTIONS_H
