//===- RolledStep.cpp - a micro-batched step predicted without unrolling --===//

#include "planner/RolledStep.h"

#include "runtime/CollectiveKind.h"

#include <algorithm>

namespace cleave::planner {

using namespace mlir::cleave;

double microbatchesInFlight(PipelineSchedule schedule, int64_t stages,
                            int64_t stage, int64_t microbatches,
                            int64_t virtualStages, bool overlapping) {
  if (stages <= 1)
    return overlapping ? double(microbatches) : 1.0;
  switch (schedule) {
  case PipelineSchedule::GPipe:
    return overlapping ? double(microbatches) : 1.0;
  case PipelineSchedule::OneFOneB:
    return double(std::min(microbatches, stages - stage));
  case PipelineSchedule::Interleaved: {
    int64_t v = std::max<int64_t>(virtualStages, 1);
    int64_t chunks = std::min(microbatches * v, 2 * (stages - stage - 1) +
                                                    (v - 1) * stages + 1);
    return double(chunks) / double(v);
  }
  }
  return double(microbatches);
}

void timeStages(Prediction &p, int64_t microbatches, int64_t virtualStages) {
  if (p.stageShares.empty())
    return;
  size_t critical = 0;
  p.stepMs =
      pipelineStepMs(p.stageShares, microbatches, virtualStages, &critical);
  const StageShare &slowest = p.stageShares[critical];
  p.computeMs = slowest.computeMs;
  p.exposedCommMs = slowest.busyMs - slowest.computeMs;
  p.bubbleMs = p.stepMs - slowest.busyMs;
  p.bubbleFraction = p.stepMs > 0 ? p.bubbleMs / p.stepMs : 0;
  p.flopsPerRank = slowest.flops;
}

Prediction rollPrediction(const Prediction &two, PipelineSchedule twoSchedule,
                          PipelineSchedule schedule, int64_t microbatches,
                          int64_t virtualStages,
                          llvm::ArrayRef<int64_t> stageOfRank) {
  Prediction p = two;
  p.estimated = true;
  p.schedule.clear();
  p.collectives.clear();
  p.microbatchBytesSent.clear();
  int64_t stages = static_cast<int64_t>(two.stageShares.size());
  // The template's two micro-batches stand for m: (m / 2 - 1) more pairs.
  double more = double(microbatches) / 2 - 1;

  // Time: each stage's busy time (and the hand-overs in it) grows by its
  // micro-batches' share; the step is the pipeline's over those stages
  // (pipelineStepMs, as predictStep times the unrolled step).
  p.maxStageComputeMs = 0;
  for (StageShare &share : p.stageShares) {
    share.busyMs += more * share.microbatchBusyMs;
    share.computeMs += more * share.microbatchComputeMs;
    share.flops += more * share.microbatchFlops;
    share.handOverMs += more * share.microbatchHandOverMs;
    share.sentHandOverMs += more * share.microbatchSentHandOverMs;
    share.microbatchBusyMs *= microbatches / 2.0;
    share.microbatchComputeMs *= microbatches / 2.0;
    share.microbatchFlops *= microbatches / 2.0;
    share.microbatchHandOverMs *= microbatches / 2.0;
    share.microbatchSentHandOverMs *= microbatches / 2.0;
    p.maxStageComputeMs = std::max(p.maxStageComputeMs, share.computeMs);
  }
  timeStages(p, microbatches, virtualStages);

  // Memory: each micro-batch the schedule keeps in flight beyond the
  // template's holds one micro-batch's stashed activations more; once a
  // micro-batch's backward pass ends before the last forward pass starts
  // (fewer in flight than micro-batches), the accumulated gradients are
  // live at the peak as well.
  for (int64_t s = 0; s < stages && s < int64_t(p.stageMemory.size()); ++s) {
    const StageShare &share = p.stageShares[s];
    bool overlapping = share.microbatchesOverlap;
    double inFlight = microbatchesInFlight(schedule, stages, s, microbatches,
                                           virtualStages, overlapping);
    double extra = inFlight - microbatchesInFlight(twoSchedule, stages, s, 2,
                                                   1, overlapping);
    StageMemory &memory = p.stageMemory[s];
    memory.activations += static_cast<int64_t>(std::max(0.0, extra) *
                                               double(share.stashedBytes));
    // The step's inputs are the whole batch: m / 2 times the template's.
    int64_t graphInputs = memory.graphInputs * microbatches / 2;
    memory.inputs += graphInputs - memory.graphInputs;
    memory.graphInputs = graphInputs;
    if (inFlight < microbatches)
      memory.gradients = std::max(memory.gradients, share.handedOnBytes);
  }
  p.setMemoryFromStages();

  // Traffic: the micro-batches' collectives send m / 2 times as much; the
  // interleaved schedule's stage hands over at both ends of each of its V
  // chunks (but the model's first and last) where the template's hands
  // over at its ends that other stages hold.
  auto handOvers = [&](int64_t stage, int64_t chunks) {
    return double((chunks - (stage == stages - 1)) + (chunks - (stage == 0)));
  };
  bool moreChunks = schedule == PipelineSchedule::Interleaved &&
                    virtualStages > 1 && stages > 1 &&
                    stageOfRank.size() == p.bytesSent.size();
  constexpr size_t handOver =
      static_cast<size_t>(::cleave::rt::CollectiveKind::SendRecv);
  p.commBytesPerRank = 0;
  for (size_t rank = 0; rank < p.bytesSent.size(); ++rank) {
    int64_t sum = 0;
    for (size_t kind = 0; kind < p.bytesSent[rank].size(); ++kind) {
      double factor = more;
      if (moreChunks && kind == handOver)
        factor = double(microbatches) / 2 *
                     handOvers(stageOfRank[rank], virtualStages) /
                     handOvers(stageOfRank[rank], 1) -
                 1;
      p.bytesSent[rank][kind] += static_cast<int64_t>(
          factor * double(two.microbatchBytesSent[rank][kind]));
      sum += p.bytesSent[rank][kind];
    }
    p.commBytesPerRank = std::max(p.commBytesPerRank, sum);
  }
  return p;
}

} // namespace cleave::planner
