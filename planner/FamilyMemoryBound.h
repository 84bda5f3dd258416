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
// the same scratch (they differ in what they hold), and so do Megatron and
// Megatron with ZeRO-1 or 2: one of them bounds the others without
// partitioning them. A family is bounded only when the
// search reaches it: families that cannot beat the plans found are never
// partitioned at all.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_FAMILYMEMORYBOUND_H
#define CLEAVE_PLANNER_FAMILYMEMORYBOUND_H

#include "planner/Planner.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cleave::planner {

/// Predicts `layout` at `globalBatch` (the step at another batch), or
/// nothing when it cannot be built.
using PredictAtBatch = std::function<std::optional<Prediction>(
    const PlanLayout &layout, int64_t globalBatch)>;

/// The family bounds of a search, each computed when the search first
/// reaches one of the family's layouts (a family none of whose layouts
/// can beat the plans found is never partitioned). Only for a search
/// without user hints; the family of
/// `exempt` is left to the search (it names what the smallest plan needs
/// when nothing fits). `heldBytes` is rejectByHeldBytes's lower bound on
/// what a layout holds.
class FamilyMemoryBounds {
public:
  FamilyMemoryBounds(const SearchOptions &options,
                     std::vector<Candidate> &candidates,
                     std::function<double(const PlanLayout &)> heldBytes,
                     const Candidate *exempt);

  /// The least-memory layout and global batch that bounding `candidate`'s
  /// family would partition; nothing when that needs no partition (no
  /// bound, bounded already, or another strategy's scratch on the mesh
  /// stands for it).
  std::optional<std::pair<PlanLayout, int64_t>>
  pending(const Candidate &candidate) const;

  /// Bounds `candidate`'s family once: when its least-memory layout
  /// (predicted by `predict`) does not fit, every unrejected member is
  /// rejected, saying what that layout needs.
  void bound(const Candidate &candidate, const PredictAtBatch &predict);

  /// About what `candidate` needs per rank with full recomputation, once
  /// its family is bounded (0 when not known): the least-memory layout's
  /// state and its scratch grown with the micro-batch size. An estimate,
  /// not a bound (scratch is not all activations): it only steers what the
  /// search's other threads evaluate ahead.
  double fullRecomputeEstimate(const Candidate &candidate) const;

private:
  struct Family {
    std::vector<Candidate *> members;
    int64_t mostMicrobatches = 0;
    bool bounded = false;
    /// The least-memory layout's parameters and state, and its scratch.
    double persistent = 0, scratch = 0;
  };
  const Family *familyOf(const Candidate &candidate) const;
  /// The family's least-memory layout and the key of the families that
  /// split only state on its mesh and share its scratch.
  std::pair<PlanLayout, std::string> leastOf(const Family &family) const;

  const SearchOptions &options;
  std::function<double(const PlanLayout &)> heldBytes;
  std::map<std::string, Family> families;
  /// The scratch (and workspaces) of a mesh's least-memory layout
  /// for the strategies that split only state, by mesh and micro-batches:
  /// its least stage's, a bound whichever stage holds the most state.
  std::map<std::string, double> sharedScratch;
};

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_FAMILYMEMORYBOUND_H
