//===- PipelineSchedule.h - the order of a pipelined step -------*- C++ -*-===//
//
// Pipeline schedules (GPipe, 1F1B, interleaved 1F1B) as an order of the
// training step's ops. The step is one block of ops, each with the stage
// (rank coordinate) that runs it; every stage runs its ops in block order.
// A schedule fixes, per stage, the order of its units of work -- the
// forward or backward pass of one micro-batch through one chunk of layers
// -- and this file turns those per-stage orders into one block order whose
// projection on each stage is that stage's order. One order for all stages
// also keeps the blocking transfers and collectives deadlock-free: each is
// one point of the order, met by its ranks in the same sequence.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_PIPELINESCHEDULE_H
#define CLEAVE_PASSES_PIPELINESCHEDULE_H

#include "mlir/IR/Block.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::cleave {

/// The schedules `--pipeline-schedule` names.
enum class PipelineSchedule {
  /// Every micro-batch's forward pass, then every backward pass: all
  /// micro-batches' activations are alive at once.
  GPipe,
  /// PipeDream-flush: after a warm-up of at most p - 1 - s forward passes,
  /// stage s alternates one forward and one backward pass, so at most p
  /// micro-batches' activations are alive on a stage.
  OneFOneB,
  /// Megatron's interleaved 1F1B: each stage holds V chunks of layers
  /// (chunk c on stage c mod p); the bubble shrinks by V.
  Interleaved,
};

/// The flag's spelling ("gpipe", "1f1b", "interleaved"), and back.
llvm::StringRef pipelineScheduleName(PipelineSchedule schedule);
std::optional<PipelineSchedule> parsePipelineSchedule(llvm::StringRef name);

/// What the schedule needs to know about one op of the step.
struct ScheduledOp {
  /// The chunk of layers it belongs to (0 ... p V - 1; the stage is the
  /// chunk mod p); nullopt for an op with no stage (constants).
  std::optional<int64_t> chunk;
  /// Its micro-batch (cleave-unroll-microbatches' copies); nullopt for an
  /// op run once per step (the optimizer, gradient sums, shared inputs).
  std::optional<int64_t> microbatch;
  /// Part of the forward pass (the loss depends on it).
  bool forward = false;
  /// Relative work, for the simulated timeline that interleaves stages.
  int64_t cost = 1;
};

struct ScheduleShape {
  PipelineSchedule schedule = PipelineSchedule::GPipe;
  int64_t stages = 1;
  int64_t virtualStages = 1;
  int64_t microbatches = 1;
};

/// Reorders `body` (without its terminator) so that each stage runs its
/// units in the order `shape.schedule` gives it, keeping every op after
/// the ops it reads. Ops of no unit (run once per step) go as early as
/// what they read allows. A cleave.send_recv belongs to the unit of the
/// value it sends. Fails, with an error at `loc`, when the units' data
/// dependencies contradict the schedule (a stage waiting forever).
LogicalResult
orderForSchedule(Block &body, const llvm::DenseMap<Operation *, ScheduledOp> &ops,
                 const ScheduleShape &shape, Location loc);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_PIPELINESCHEDULE_H
