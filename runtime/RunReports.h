//===- RunReports.h - what a training program tells as it runs --*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The log (--log, one JSON
// record per step), the progress lines on stderr, the trace (--trace), and
// the summaries at the end (--print-memory, --print-memory-peak,
// --print-comm).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_RUNREPORTS_H
#define CLEAVE_RUNTIME_RUNREPORTS_H

#include "runtime/Collectives.h"
#include "runtime/DriverOptions.h"
#include "runtime/PeakMemory.h"
#include "runtime/Program.h"
#include "runtime/TensorStore.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace cleave::rt {

class RunReports {
public:
  /// Opens the log (appending when resuming) and announces the run.
  RunReports(const Program &program, const RunOptions &options,
             const TensorStore &store, int64_t firstStep, int64_t batch);

  /// Starts the trace, if asked for, and the clock of the progress lines;
  /// says so when a resumed run has no step left.
  void startSteps();
  /// Adds the bytes the step sent since `before` to the step's counts.
  void countCommunication(const CommCounters &before);
  /// Logs the loss of `step`, warns once when it is not finite, and prints
  /// the progress line every twentieth of the run.
  void afterStep(int64_t step, float loss);
  /// Puts the log on the disk before a checkpoint that covers it; false,
  /// and why in `error`, when it cannot.
  bool syncLog(std::string &error);
  /// Closes the log and writes the trace.
  void finishSteps();
  /// --print-memory, --print-memory-peak (what `meter` measured; the
  /// run's data holds `dataBytes`, TrainingData::heldBytes) and
  /// --print-comm.
  void printSummaries(const PeakMemoryMeter &meter, int64_t dataBytes);

private:
  /// A log that cannot be written (a full disk, /dev/full) ends the run:
  /// it must not report success with the record lost.
  std::string logError() const;

  const Program &program;
  const RunOptions &options;
  const TensorStore &store;
  const GlobalTensors &global;
  bool root;
  int64_t firstStep;
  int64_t batch;
  std::FILE *log = nullptr;
  std::chrono::steady_clock::time_point start;
  int64_t every = 1;
  bool warnedNonFinite = false;
  CommCounters stepComm{};
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_RUNREPORTS_H
