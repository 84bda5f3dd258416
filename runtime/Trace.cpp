//===- Trace.cpp - timeline traces of training steps ----------------------===//

#include "runtime/Trace.h"

#include "runtime/Collectives.h"
#include "runtime/DurableFile.h"
#include "runtime/Program.h"
#include "runtime/RunRecord.h"
#include "runtime/Sharding.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <vector>

namespace cleave::rt {

std::atomic<bool> tracing{false};

namespace {

struct Slice {
  /// The op's row in the program's table; -1: the step itself.
  int op, microbatch;
  int64_t step, bytes;
  /// Marks of the trace clock (mark()); end -1: not closed.
  int64_t start, end;
};

struct Tracer {
  const Program *program = nullptr;
  int64_t first = 0, last = 0, step = -1, traced = 0;
  std::chrono::steady_clock::time_point origin;
  std::vector<Slice> slices;
  /// Opened slices (index in `slices`), innermost last.
  std::vector<size_t> open;
  /// The communication thread's slices (it appends, under the mutex).
  std::vector<Slice> communication;
  std::mutex communicationMutex;
  /// The host clock's marks: microseconds since `origin`.
  std::vector<double> hostTimes;
  std::mutex clockMutex;
};

Tracer tracer;

/// The device's clock (events on its compute stream: the cuda target), or
/// none (the host's).
const DeviceHooks *deviceClock() {
  const DeviceHooks *device = tracer.program ? tracer.program->device : nullptr;
  return device && device->traceMark ? device : nullptr;
}

/// Now, as a mark whose time microseconds() gives. On the device the mark
/// is when the compute stream reaches this point of its work.
int64_t mark() {
  if (const DeviceHooks *device = deviceClock())
    return device->traceMark();
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - tracer.origin)
                  .count();
  std::lock_guard<std::mutex> lock(tracer.clockMutex);
  tracer.hostTimes.push_back(us);
  return static_cast<int64_t>(tracer.hostTimes.size()) - 1;
}

/// A mark's time in microseconds since tracing started (a device mark's
/// once the device has reached it: this waits for it).
double microseconds(int64_t mark) {
  if (const DeviceHooks *device = deviceClock())
    return device->traceMicroseconds(mark);
  std::lock_guard<std::mutex> lock(tracer.clockMutex);
  return tracer.hostTimes[mark];
}

bool distributed() {
  return tracer.program && tracer.program->mesh.numAxes > 0;
}

/// The world rank at `rank`'s coordinates but `stage` along `axis`.
int64_t peerRank(int64_t rank, int axis, int stage) {
  const MeshSpec &mesh = tracer.program->mesh;
  int64_t stride = 1;
  for (int a = mesh.numAxes - 1; a > axis; --a)
    stride *= mesh.axisSizes[a];
  int64_t coord = rank / stride % mesh.axisSizes[axis];
  return rank + (stage - coord) * stride;
}

/// One slice as a trace event on thread `tid` (followed by a comma).
std::string eventOf(const Slice &s, int64_t rank, int tid) {
  char number[160];
  double start = microseconds(s.start);
  std::snprintf(number, sizeof(number),
                ",\"pid\":%lld,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
                static_cast<long long>(rank), tid, start,
                microseconds(s.end) - start);
  std::string args = "\"step\":" + std::to_string(s.step);
  std::string name, category;
  if (s.op < 0) {
    name = tid == 0 ? "\"step " + std::to_string(s.step) + "\""
                    : std::string("\"collective\"");
    category = tid == 0 ? "\"step\"" : "\"communication\"";
  } else {
    const TraceOp &op = tracer.program->traceOps[s.op];
    name = jsonString(op.name);
    // On the communication thread: the work of the collective the op
    // started (or the op the step was in when it queued it).
    category = tid == 0 ? jsonString(op.phase) : "\"communication\"";
    args += std::string(",\"op\":") + jsonString(op.kind) +
            ",\"stage\":" + std::to_string(op.stage) + ",\"microbatch\":" +
            std::to_string(op.microbatch == kPartMicrobatch ? s.microbatch
                                                            : op.microbatch);
    if (s.bytes >= 0)
      args += ",\"bytes\":" + std::to_string(s.bytes);
    if (op.peerAxis >= 0)
      args += ",\"peer\":" +
              std::to_string(peerRank(rank, op.peerAxis, op.peerStage));
  }
  return "{\"ph\":\"X\",\"name\":" + name + ",\"cat\":" + category +
         number + ",\"args\":{" + args + "}},\n";
}

/// This rank's slices as trace events (each followed by a comma): the
/// step's thread (tid 0), the communication thread's (tid 1).
std::string eventsOf(int64_t rank) {
  std::string out;
  for (const Slice &s : tracer.slices)
    if (s.end >= 0)
      out += eventOf(s, rank, 0);
  std::lock_guard<std::mutex> lock(tracer.communicationMutex);
  for (const Slice &s : tracer.communication)
    out += eventOf(s, rank, 1);
  return out;
}

} // namespace

std::function<void()> traceCommunication(std::function<void()> task) {
  if (!tracing || tracer.open.empty())
    return task;
  const Slice &in = tracer.slices[tracer.open.back()];
  Slice slice{in.op, in.microbatch, tracer.step, -1, 0, 0};
  return [task = std::move(task), slice]() mutable {
    slice.start = mark();
    task();
    slice.end = mark();
    std::lock_guard<std::mutex> lock(tracer.communicationMutex);
    tracer.communication.push_back(slice);
  };
}

void traceBegin(int op, int microbatch) {
  tracer.open.push_back(tracer.slices.size());
  tracer.slices.push_back({op, microbatch, tracer.step, -1, mark(), -1});
}

void traceEnd(int op, int64_t bytes) {
  // Closes the innermost open slice of `op` (the step's is never closed
  // here).
  for (size_t i = tracer.open.size(); i-- > 0;) {
    Slice &slice = tracer.slices[tracer.open[i]];
    if (slice.op != op)
      continue;
    slice.end = mark();
    slice.bytes = bytes;
    tracer.open.erase(tracer.open.begin() + i);
    return;
  }
}

void startTracing(const Program &program, int64_t first, int64_t last) {
  tracer.program = &program;
  tracer.first = first;
  tracer.last = last;
  // Every rank's clock starts as the slowest reaches this point.
  if (distributed()) {
    int64_t token = 0;
    allReduceSum(&token, 1, DType::I64, allAxes(program.mesh));
  }
  tracer.origin = std::chrono::steady_clock::now();
  // The device clock's times count from its first mark.
  mark();
}

void traceStepBegin(int64_t step) {
  if (!tracer.program || step < tracer.first || step >= tracer.last)
    return;
  tracer.step = step;
  traceBegin(-1, -1);
  tracing = true;
}

void traceStepEnd(int64_t step) {
  if (!tracing)
    return;
  tracing = false;
  traceEnd(-1, -1);
  tracer.open.clear();
  ++tracer.traced;
  (void)step;
}

int64_t tracedSteps() { return tracer.traced; }

bool writeTrace(const std::string &path, std::string &error) {
  const Program &program = *tracer.program;
  int64_t rank = distributed() ? worldRank() : 0;
  int64_t ranks = distributed() ? worldSize() : 1;
  std::string mine = eventsOf(rank);
  // Variable-sized blocks through a fixed-size gather: the sizes first.
  std::vector<int64_t> sizes(ranks, static_cast<int64_t>(mine.size()));
  std::string all = mine;
  if (distributed()) {
    int64_t size = static_cast<int64_t>(mine.size());
    allGather(&size, sizes.data(), sizeof(int64_t), allAxes(program.mesh));
    int64_t widest = *std::max_element(sizes.begin(), sizes.end());
    mine.resize(widest, ' ');
    all.assign(widest * ranks, ' ');
    allGather(mine.data(), all.data(), widest, allAxes(program.mesh));
    std::string joined;
    for (int64_t r = 0; r < ranks; ++r)
      joined.append(all, r * widest, sizes[r]);
    all = std::move(joined);
    if (!isMeshRoot())
      return true;
  }
  std::string text = "{\"traceEvents\":[\n";
  const char *stepTrack =
      deviceClock() ? "compute stream (kernels, and the collectives it waits "
                      "for)"
                    : "step (compute and blocking communication)";
  for (int64_t r = 0; r < ranks; ++r) {
    std::string label = "rank " + std::to_string(r);
    text +=
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(r) +
        ",\"tid\":0,\"args\":{\"name\":" + jsonString(label.c_str()) + "}},\n";
    text +=
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(r) +
        ",\"tid\":0,\"args\":{\"name\":" + jsonString(stepTrack) + "}},\n";
    text += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" +
            std::to_string(r) +
            ",\"tid\":1,\"args\":{\"name\":\"communication thread "
            "(started collectives, hand-overs)\"}},\n";
  }
  text += all;
  text += "{\"ph\":\"M\",\"name\":\"trace_end\",\"pid\":0,\"tid\":0,"
          "\"args\":{}}\n],\"displayTimeUnit\":\"ms\",\"otherData\":{"
          "\"model\":" +
          jsonString(program.model) +
          ",\"mesh\":" + jsonString(meshText(program.mesh).c_str()) +
          ",\"ranks\":" + std::to_string(ranks) + "}}\n";
  return writeFileDurably(path, text.data(), text.size(), error);
}

} // namespace cleave::rt
