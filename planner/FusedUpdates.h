//===- FusedUpdates.h - updates run inside another op's call -*- C++ -*-===//
//
// The emitted program applies some plain-SGD updates inside the call that
// computes their gradient: a GEMM adds its product to the parameter
// (MemoryPlan::gemmInUpdate, both targets) and, on the cpu target, an input
// gradient's pass over the weight, a convolution weight gradient and a
// live-tap update take the update with them (codegen/FusionPlan.h,
// BackwardFusion). The cost model charges such an op the part of its own
// work the fused call still does, and no call of its own.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_FUSEDUPDATES_H
#define CLEAVE_PLANNER_FUSEDUPDATES_H

#include "codegen/FusionPlan.h"
#include "codegen/MemoryPlan.h"

#include "llvm/ADT/DenseMap.h"

namespace cleave::planner {

/// How the program runs an op that takes part in a fused update.
struct FusedUpdate {
  /// The share of the op's own cost (costOf) it still takes: 0 for an op
  /// another call does for free.
  double share = 1;
  /// Whether a call is made where this op stands (named after it in a
  /// trace): an op's own, or the fused one.
  bool call = true;
};

/// The ops that take part in an update the program fuses with memory plan
/// `plan`, fusion `fusion` and, where the target fuses updates into the
/// backward pass (codegen::TargetTraits::fusedBackwardSgd), `backward`
/// (planBackwardFusion of the same stage; null elsewhere).
llvm::DenseMap<mlir::Operation *, FusedUpdate>
fusedUpdates(const mlir::cleave::MemoryPlan &plan,
             const mlir::cleave::FusionPlan &fusion,
             const mlir::cleave::BackwardFusion *backward);

/// How the program the partitioner makes of the step will run `sgd`,
/// judged on the step before partitioning (the intra-op ILP's view): a
/// plain-SGD step on a gradient that one GEMM or convolution weight
/// gradient computes for it alone is fused as fusedUpdates says (on the
/// `cpu` target also with the weight's input gradient GEMM), where no
/// all-reduce of the data axis (`dataParallel`) comes between; with one, a
/// cropped kernel's update is a live-tap update on the cpu target.
FusedUpdate updateBeforePartitioning(mlir::cleave::SgdOp sgd, bool dataParallel,
                                     bool cpu);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_FUSEDUPDATES_H
