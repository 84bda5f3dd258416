//===- IntraOpLayouts.h - the search's intra-op ILP layouts -----*- C++ -*-===//
//
// Where the `megatron` preset recognises no transformer block in a model
// (a CNN, an MLP with BatchNorm between its layers), its tensor-parallel
// layouts take their shardings from the intra-op ILP (IntraOpIlp.h)
// instead: one ILP per data x tensor x pipeline degree, its hints carried
// by the layout as --shard flags, its estimate kept for --json. The
// planner then partitions and predicts those layouts as any other.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_INTRAOPLAYOUTS_H
#define CLEAVE_PLANNER_INTRAOPLAYOUTS_H

#include "planner/Planner.h"

#include <vector>

namespace cleave::planner {

/// Replaces the Megatron layouts of `candidates` by ILP layouts when the
/// preset matches no block of the step (the Megatron ones stay, rejected
/// with that reason). An ILP that keeps every tensor whole over the
/// tensor axis rejects its layout, saying what the best split would cost.
/// Nothing changes when evaluating a given layout or with the user's own
/// hints (they already say how to split).
void addIntraOpLayouts(const StepSource &steps, const SearchOptions &options,
                       std::vector<Candidate> &candidates);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_INTRAOPLAYOUTS_H
