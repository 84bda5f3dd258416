//===- StageCut.h - where the forward pass is cut into stages ---*- C++ -*-===//
//
// The cut of a training step's forward pass into pipeline chunks (one per
// stage, or p x V for the interleaved schedule), balanced by estimated
// work rather than by forward multiply-adds alone:
//
//  - each op's work is a roofline estimate: its floating-point operations
//    or its bytes read and written times the machine balance (operations
//    per byte), whichever is larger, so memory-bound elementwise ops and
//    reductions count as the time they take;
//  - each forward unit carries the backward and update ops that will run
//    in its chunk (predicted by the rule cleave-pipeline-stages places them
//    with), so a first stage whose input needs no gradient, or a last one
//    that also computes the loss, is weighed as it will run;
//  - the units are split by the linear-partition problem: contiguous
//    chunks, cut only where a cut is allowed, minimising the most
//    expensive chunk, then each cut as near to an even share of what is
//    left as that optimum allows.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_STAGECUT_H
#define CLEAVE_PASSES_STAGECUT_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::cleave {

/// Estimated work of one op on one rank, in floating-point operations:
/// max(flops, balance x bytes). Matrix products (gemm, matmul,
/// convolutions and their gradients) do 2 M N K operations, other ops one
/// per result element; bytes are the operands and results (constants not
/// counted). Constants, reshapes and collectives count nothing (the cut
/// balances compute; the planner times communication).
double estimatedWork(Operation *op, double balance);

/// The forward pass as units of the cut: an op, or all micro-batch copies
/// of one op, in program order.
struct ForwardUnits {
  llvm::SmallVector<llvm::SmallVector<Operation *, 1>> ops;
  llvm::DenseMap<Operation *, int64_t> unitOf;
};

/// What estimating the units' work needs to know of the step.
struct StepFacts {
  /// Ops every stage computes for itself (from constants, data inputs and
  /// the step counter only).
  llvm::function_ref<bool(Operation *)> everywhere;
  /// Parameters and optimizer state (block arguments).
  llvm::function_ref<bool(BlockArgument)> isParamOrState;
  /// Forward ops that only prepare a parameter (a weight's transpose): they
  /// join the unit of their first forward reader.
  const llvm::DenseSet<Operation *> &weightOnly;
};

/// The work of each unit: its forward ops' plus that of the backward and
/// update ops predicted to run in its chunk. A backward op runs in the
/// earliest chunk that still holds what it reads; since chunks are
/// contiguous, that chunk holds the earliest unit that does, so units
/// stand in for chunks. (Later moves of cleave-pipeline-stages, such as
/// sending a weight gradient instead of the activation gradient it is
/// computed from, are not predicted.)
llvm::SmallVector<double> unitWork(Block &body, const ForwardUnits &units,
                                   const StepFacts &facts, double balance);

/// Splits `work` (per unit, in order) into `chunks` contiguous non-empty
/// chunks, cutting only before units u with cutAllowed[u] (entry 0 is
/// ignored), minimising the most expensive chunk. Returns the first unit
/// of each chunk (the first is 0); failure when fewer than `chunks - 1`
/// cuts are allowed.
FailureOr<llvm::SmallVector<int64_t>>
balancedCut(llvm::ArrayRef<double> work, llvm::ArrayRef<bool> cutAllowed,
            int64_t chunks);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_STAGECUT_H
