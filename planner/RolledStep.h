//===- RolledStep.h - a micro-batched step predicted without unrolling -*- C++ -*-===//
//
// A step split into m micro-batches is, once cleave-unroll-microbatches
// has copied it, m copies of one micro-batch's forward and backward ops
// and the ops that run once a step (the optimizer update, the gradient
// reductions after accumulation, ZeRO-3's parameter gathers). Its
// prediction can therefore be rolled out from the same layout partitioned
// with two micro-batches of the same size (the smallest step with that
// structure; one micro-batch would not do: ZeRO-3 reduce-scatters each
// gradient there but all-reduces the accumulated ones once with
// micro-batches): each stage's busy time, compute and traffic grow by
// (m / 2 - 1) times its micro-batches' share; the pipeline's bubble is the
// schedule's (pipelineBubble); its memory grows by the activations one
// micro-batch keeps for its backward pass times the extra micro-batches
// the schedule keeps in flight. This is how Alpa and Megatron-LM's
// analytic model predict a pipeline, and what lets the planner bound and
// predict layouts whose unrolled step is too large to partition.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_ROLLEDSTEP_H
#define CLEAVE_PLANNER_ROLLEDSTEP_H

#include "planner/CostModel.h"

#include "passes/PipelineSchedule.h"

#include "llvm/ADT/ArrayRef.h"

namespace cleave::planner {

/// The micro-batches whose activations stage `stage` of `stages` holds at
/// once (their forward pass done, their backward pass not) when the
/// schedule runs `microbatches` through `virtualStages` chunks per stage,
/// counted in whole micro-batches of the stage: 1F1B min(m, p - s); the
/// interleaved schedule Megatron-LM's warm-up, min(m V, 2 (p - s - 1) +
/// (V - 1) p + 1) chunk micro-batches of 1 / V of the stage's layers each;
/// GPipe and a step without stages all of them where the unrolled step
/// makes most of micro-batch 1's stashed activations before micro-batch
/// 0's backward pass ends (`overlapping`, StageShare::microbatchesOverlap),
/// else one (the order
/// cleave-unroll-microbatches chooses decides).
double microbatchesInFlight(mlir::cleave::PipelineSchedule schedule,
                            int64_t stages, int64_t stage,
                            int64_t microbatches, int64_t virtualStages,
                            bool overlapping);

/// Sets `p`'s step from its stages' shares (pipelineStepMs, `microbatches`
/// through `virtualStages` chunks per stage), and its critical stage's
/// compute, exposed communication, flops and the bubble around it.
void timeStages(Prediction &p, int64_t microbatches, int64_t virtualStages);

/// The prediction of a step of `microbatches` micro-batches run by
/// `schedule` over `virtualStages` chunks per stage, from `two`: the same
/// layout predicted with two micro-batches of the same size in `twoSchedule`
/// (1F1B for the interleaved schedule) and one chunk per stage. Marked
/// estimated; it has no timeline or collectives (schedule, collectives).
/// `stageOfRank` (each rank's pipeline stage) scales the interleaved
/// schedule's hand-overs: a stage of V chunks hands over at both ends of
/// each but the model's first and last, where the template's stage does
/// once or twice.
Prediction rollPrediction(const Prediction &two,
                          mlir::cleave::PipelineSchedule twoSchedule,
                          mlir::cleave::PipelineSchedule schedule,
                          int64_t microbatches, int64_t virtualStages,
                          llvm::ArrayRef<int64_t> stageOfRank = {});

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_ROLLEDSTEP_H
