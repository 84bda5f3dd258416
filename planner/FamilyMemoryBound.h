//===- FamilyMemoryBound.h - rejecting a layout family at once -*- C++ -*-===//
//
// The layouts the search enumerates come in families: one mesh, strategy
// and pipeline axis, with every micro-batch count, schedule and
// recomputation. One of them needs the least memory: a single micro-batch
// of the family's smallest micro-batch size, with full recomputation. A
// layout of more micro-batches holds all that one does and more (the
// accumulated gradients, the micro-batches its schedule keeps in flight);
// a bigger micro-batch or weaker recomputation keeps more activations.
// When that one does not fit, no layout of the family does, and the
// family is rejected after partitioning it alone: for a big model, most
// of the search. Plain data parallelism, ZeRO-1 and ZeRO-2 of one mesh keep
// the same scratch (they differ in what they hold), so one of them bounds
// the others without partitioning them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_FAMILYMEMORYBOUND_H
#define CLEAVE_PLANNER_FAMILYMEMORYBOUND_H

#include "planner/Planner.h"

#include <functional>

namespace cleave::planner {

/// Predicts `layout` at `globalBatch` (the step at another batch), or
/// nothing when it cannot be built.
using PredictAtBatch = std::function<std::optional<Prediction>(
    const PlanLayout &layout, int64_t globalBatch)>;

/// Rejects every unrejected candidate of a family whose least-memory
/// layout (predicted by `predict`) does not fit, saying what that layout
/// needs; `heldBytes` is rejectByHeldBytes's lower bound on what a layout
/// holds. The family of `exempt` is left to the search (it names what the
/// smallest plan needs when nothing fits). Only for the strategies the
/// search enumerates, without user hints. `prefetch`, where given, is told
/// first every layout `predict` will be asked for (unless one of them
/// cannot be built), so that they can be evaluated on other threads.
void rejectFamiliesThatCannotFit(
    const SearchOptions &options, std::vector<Candidate> &candidates,
    const PredictAtBatch &predict,
    const std::function<double(const PlanLayout &)> &heldBytes,
    const Candidate *exempt,
    const std::function<void(const PlanLayout &layout, int64_t globalBatch)>
        &prefetch = nullptr);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_FAMILYMEMORYBOUND_H
