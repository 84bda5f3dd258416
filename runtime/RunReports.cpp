//===- RunReports.cpp - what a training program tells as it runs ----------===//

#include "runtime/RunReports.h"
#include "runtime/CollectiveBuffers.h"
#include "runtime/KernelWorkspaces.h"
#include "runtime/RunRecord.h"
#include "runtime/Sharding.h"
#include "runtime/Trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace cleave::rt {

namespace {

/// --print-comm: rank 0 prints, for every rank, the bytes it sent per step
/// by collective kind (the counts are the same every step).
void printCommunication(const CommCounters &counters, int64_t steps,
                        const GlobalTensors &global) {
  std::vector<int64_t> mine(kNumCollectiveKinds);
  for (int k = 0; k < kNumCollectiveKinds; ++k)
    mine[k] = steps ? counters.bytesSent[k] / steps : 0;
  int ranks = global.distributed ? worldSize() : 1;
  std::vector<int64_t> all(mine);
  if (global.distributed) {
    all.resize(kNumCollectiveKinds * ranks);
    allGather(mine.data(), all.data(), kNumCollectiveKinds * sizeof(int64_t),
              allAxes(global.program.mesh));
    if (!isMeshRoot())
      return;
  }
  std::printf("bytes sent per step:\n");
  for (int r = 0; r < ranks; ++r) {
    std::printf("  rank %d:", r);
    for (int k = 0; k < kNumCollectiveKinds; ++k)
      std::printf(" %s=%lld",
                  collectiveKindName(static_cast<CollectiveKind>(k)),
                  static_cast<long long>(all[r * kNumCollectiveKinds + k]));
    std::printf("\n");
  }
  std::fflush(stdout);
}

/// --print-memory: rank 0 prints every rank's persistent and scratch bytes.
void printMemory(int64_t persistentBytes, int64_t scratchBytes,
                 const GlobalTensors &global) {
  std::vector<int64_t> mine = {persistentBytes, scratchBytes};
  std::vector<int64_t> all(mine);
  int ranks = global.distributed ? worldSize() : 1;
  if (global.distributed) {
    all.resize(2 * ranks);
    allGather(mine.data(), all.data(), 2 * sizeof(int64_t),
              allAxes(global.program.mesh));
    if (!isMeshRoot())
      return;
  }
  std::printf("memory per rank:\n");
  for (int r = 0; r < ranks; ++r)
    std::printf("  rank %d: parameters and state %lld bytes, scratch %lld "
                "bytes\n",
                r, static_cast<long long>(all[2 * r]),
                static_cast<long long>(all[2 * r + 1]));
  std::fflush(stdout);
}

/// --print-memory-peak: rank 0 prints every rank's measured growth
/// (PeakMemory.h) beside the compiler's plan for it: its parameters and
/// state, and the scratch of its own stage; then the bytes its kernels'
/// workspaces (KernelWorkspaces.h) and its collectives' buffers hold,
/// which the plan leaves out and the planner predicts (planner/CpuWorkspace.h,
/// codegen/CollectiveBuffers.h), the bytes its inputs hold (its blocks
/// of the step's inputs and the data they are copied from) and the oneDNN
/// convolution primitives it created (whose memory the planner predicts
/// per primitive).
void printMeasuredMemory(const MemoryGrowth &growth, int64_t persistentBytes,
                         int64_t inputBytes, const GlobalTensors &global) {
  const Program &program = global.program;
  int64_t scratch = program.scratchBytesOf(global.stage);
  std::vector<int64_t> mine = {growth.peak,
                               growth.file,
                               persistentBytes,
                               scratch,
                               kernelWorkspaceBytes(),
                               collectiveBufferBytes(),
                               inputBytes,
                               oneDnnPrimitives()};
  constexpr size_t kFields = 8;
  std::vector<int64_t> all(mine);
  int ranks = global.distributed ? worldSize() : 1;
  if (global.distributed) {
    all.resize(kFields * ranks);
    allGather(mine.data(), all.data(), kFields * sizeof(int64_t),
              allAxes(program.mesh));
    if (!isMeshRoot())
      return;
  }
  std::printf("measured memory per rank (the resident set's rise from "
              "before the tensors to its highest by the last step):\n");
  for (int r = 0; r < ranks; ++r) {
    const int64_t *at = &all[kFields * r];
    std::printf("  rank %d: peak %lld bytes, of which file-backed %lld; "
                "planned %lld (parameters and state %lld, scratch of its "
                "stage %lld); kernel workspaces %lld; collective buffers "
                "%lld; inputs %lld; oneDNN primitives %lld\n",
                r, static_cast<long long>(at[0]), static_cast<long long>(at[1]),
                static_cast<long long>(at[2] + at[3]),
                static_cast<long long>(at[2]), static_cast<long long>(at[3]),
                static_cast<long long>(at[4]), static_cast<long long>(at[5]),
                static_cast<long long>(at[6]), static_cast<long long>(at[7]));
  }
  std::fflush(stdout);
}

} // namespace

RunReports::RunReports(const Program &program, const RunOptions &options,
                       const TensorStore &store, int64_t firstStep,
                       int64_t batch)
    : program(program), options(options), store(store), global(store.global),
      root(store.global.isRoot()), firstStep(firstStep), batch(batch) {
  if (root && !options.log.empty() &&
      !(log = std::fopen(options.log.c_str(), options.resume ? "a" : "w")))
    failRun(logError());
  if (!options.quiet && root)
    std::fprintf(stderr,
                 "%s: %lld steps, batch %lld, parameters and state %.1f MiB, "
                 "scratch %.1f MiB\n",
                 program.model, static_cast<long long>(options.steps),
                 static_cast<long long>(batch),
                 store.persistentBytes() / 1048576.0,
                 program.scratchBytesOf(global.stage) / 1048576.0);
}

std::string RunReports::logError() const {
  return "cannot write the log '" + options.log + "': " + std::strerror(errno);
}

void RunReports::startSteps() {
  if (!options.trace.empty()) {
    if (!program.traceOps)
      failRun("--trace: this program's step calls nothing to trace");
    if (options.traceFirst >= options.steps || options.traceLast <= firstStep)
      failRun("--trace-steps " + std::to_string(options.traceFirst) + ":" +
              std::to_string(options.traceLast) +
              " traces no step of this run (steps " +
              std::to_string(firstStep) + " to " +
              std::to_string(options.steps - 1) +
              "); give steps inside it, or more --steps");
    startTracing(program, options.traceFirst, options.traceLast);
  }
  start = std::chrono::steady_clock::now();
  every = std::max<int64_t>(1, options.steps / 20);
  if (options.resume && firstStep >= options.steps && root)
    std::fprintf(stderr,
                 "nothing to train: the checkpoint is after step %lld and "
                 "--steps %lld is the total number of steps; give a larger "
                 "--steps to train on\n",
                 static_cast<long long>(firstStep),
                 static_cast<long long>(options.steps));
}

void RunReports::countCommunication(const CommCounters &before) {
  for (int k = 0; k < kNumCollectiveKinds; ++k) {
    stepComm.bytesSent[k] += commCounters().bytesSent[k] - before.bytesSent[k];
    stepComm.calls[k] += commCounters().calls[k] - before.calls[k];
  }
}

void RunReports::afterStep(int64_t step, float loss) {
  // A log's first record also names the program and what each rank
  // holds (runtime/RunRecord.h); every rank takes part in the gather.
  std::string runFields;
  if (step == firstStep && !options.log.empty() && !options.resume &&
      program.training) {
    RankMemory mine;
    for (int i = 0; i < program.numTensors; ++i)
      if (global.holds(i) && program.tensors[i].role == Role::Param)
        mine.parameters += global.localBytes(i);
      else if (global.holds(i) && program.tensors[i].role == Role::State)
        mine.optimizerState += global.localBytes(i);
    mine.scratch = program.scratchBytesOf(global.stage);
    runFields = runRecordFields(
        program, gatherRankMemory(mine, program.mesh, global.distributed));
  }
  // JSON has no NaN or infinity: such a loss is logged as null.
  if (log && program.training) {
    char lossText[32] = "null";
    if (std::isfinite(loss))
      std::snprintf(lossText, sizeof(lossText), "%.9g", loss);
    if (std::fprintf(log, "{\"step\":%lld,\"loss\":%s%s}\n",
                     static_cast<long long>(step), lossText,
                     runFields.c_str()) < 0)
      failRun(logError());
  }
  if (!std::isfinite(loss) && program.training && root && !warnedNonFinite) {
    std::fprintf(stderr,
                 "warning: the loss of step %lld is %g; the training has "
                 "diverged (try a smaller --lr, or --clip-grad-norm)\n",
                 static_cast<long long>(step), loss);
    warnedNonFinite = true;
  }
  if (!options.quiet && root &&
      ((step + 1) % every == 0 || step + 1 == options.steps)) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double perStep = seconds / (step + 1 - firstStep);
    std::string lossText =
        program.training ? "  loss " + std::to_string(loss) : "";
    // Three significant digits where the rate is small (a model of a
    // second a step and batch 4 runs at 4-5 samples/s).
    double rate = batch / perStep;
    int decimals = rate < 10 ? 2 : rate < 100 ? 1 : 0;
    std::fprintf(stderr, "step %lld/%lld%s  %.*f samples/s  ETA %.1fs\n",
                 static_cast<long long>(step + 1),
                 static_cast<long long>(options.steps), lossText.c_str(),
                 decimals, rate, perStep * (options.steps - step - 1));
  }
  if (log && std::fflush(log) != 0)
    failRun(logError());
}

bool RunReports::syncLog(std::string &error) {
  // A device such as /dev/null cannot be synced.
  if (log && fsync(fileno(log)) != 0 && errno != EINVAL && errno != EROFS) {
    error = logError();
    return false;
  }
  return true;
}

void RunReports::finishSteps() {
  if (log && std::fclose(log) != 0)
    failRun(logError());
  if (options.trace.empty())
    return;
  std::string error;
  if (!allSucceeded(writeTrace(options.trace, error), global))
    failRun(error.empty() ? "rank 0 could not write the trace" : error);
  if (root && !options.quiet)
    std::fprintf(
        stderr, "trace of %lld step%s (%lld:%lld) written to '%s'\n",
        static_cast<long long>(tracedSteps()), tracedSteps() == 1 ? "" : "s",
        static_cast<long long>(options.traceFirst),
        static_cast<long long>(options.traceLast), options.trace.c_str());
}

void RunReports::printSummaries(const PeakMemoryMeter &meter,
                                int64_t dataBytes) {
  if (options.printMemory)
    printMemory(store.persistentBytes(), program.scratchBytesOf(global.stage),
                global);
  if (meter.enabled())
    printMeasuredMemory(meter.growth(), store.persistentBytes(),
                        store.inputBytes() + dataBytes, global);
  if (options.printComm)
    printCommunication(stepComm, options.steps - firstStep, global);
}

} // namespace cleave::rt
