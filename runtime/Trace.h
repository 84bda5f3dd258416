//===- Trace.h - timeline traces of training steps --------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). `./train --trace FILE
// --trace-steps A:B` records, for steps A to B-1, a slice per op the
// generated step runs (a GEMM, a fused loop, a collective with the bytes
// this rank sends in it, a send/recv with its peer, an optimizer update),
// named after its ONNX node, inside one slice per step; rank 0 gathers
// every rank's and writes Chrome's trace-event JSON (Perfetto and
// chrome://tracing open it): one process per rank, its "otherData" naming
// the program (model, mesh, ranks) for `cleave report`.
//
// The generated step brackets each op with CLEAVE_TRACE_BEGIN/END: when
// no step is being traced that is one load and an untaken branch.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_TRACE_H
#define CLEAVE_RUNTIME_TRACE_H

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace cleave::rt {

struct Program;

/// One op of the generated step, as its trace slices name it.
struct TraceOp {
  /// The ONNX node (or the op's name when it has none).
  const char *name;
  /// "gemm", "fused loop", "all_reduce", "send_recv", "sgd", ...
  const char *kind;
  /// "forward", "backward", "update", "other", "forward+backward"
  /// (codegen/StepPhases.h); collectives count as "collective".
  const char *phase;
  /// The stage, and the micro-batch: -1 for none, kPartMicrobatch for the
  /// micro-batch of the part of the step that runs it (the op's code is
  /// shared by every micro-batch's part; codegen/EmitParts.cpp).
  int stage, microbatch;
  /// A send/recv's other stage and the pipeline axis (-1: none).
  int peerStage, peerAxis;
};

constexpr int kPartMicrobatch = -2;

/// Whether the current step is traced (read by the macros below, and by
/// the communication thread).
extern std::atomic<bool> tracing;

/// Opens a slice of `op` run for `microbatch` (-1: none).
void traceBegin(int op, int microbatch);
/// Ends the slice `traceBegin(op)` opened; `bytes` this rank sent in it
/// (-1: not a collective).
void traceEnd(int op, int64_t bytes);

#define CLEAVE_TRACE_BEGIN(op, microbatch)                                     \
  do {                                                                         \
    if (::cleave::rt::tracing)                                                 \
      ::cleave::rt::traceBegin(op, microbatch);                                \
  } while (0)
#define CLEAVE_TRACE_END(op, bytes)                                            \
  do {                                                                         \
    if (::cleave::rt::tracing)                                                 \
      ::cleave::rt::traceEnd(op, bytes);                                       \
  } while (0)

/// `task`, a collective the step queues for the communication thread
/// (runtime/CommThread.cpp), made to record a slice on that thread's
/// track, named after the op that started it, when the step is traced.
std::function<void()> traceCommunication(std::function<void()> task);

/// Traces steps [first, last) of `program`'s run (every rank calls it,
/// after the mesh is up: the ranks' clocks start together).
void startTracing(const Program &program, int64_t first, int64_t last);
/// Around each step; trace only the chosen ones.
void traceStepBegin(int64_t step);
void traceStepEnd(int64_t step);
/// Gathers every rank's slices on rank 0, which writes `path` (every
/// rank calls it). False, and why in `error`, when rank 0 cannot write.
bool writeTrace(const std::string &path, std::string &error);
/// How many steps were traced on this rank.
int64_t tracedSteps();

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_TRACE_H
