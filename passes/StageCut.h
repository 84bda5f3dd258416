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
//  - a chunk also pays for what crosses its two cuts: the forward values
//    computed before a cut and read after it, and their gradients sent
//    back, weighed by the link's balance (operations per byte sent), so
//    that a cut through a layer's residual stream beats one that sends a
//    vocabulary's logits or a layer's attention probabilities;
//  - the units are split by the linear-partition problem: contiguous
//    chunks, cut only where a cut is allowed, minimising the most
//    expensive chunk, then, among the cuts that keep that optimum, the sum
//    of the squared chunk costs (even chunks, little sent).
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
  /// Forward ops that join the unit of their first forward reader: those
  /// that only prepare a parameter (a weight's transpose) and those of the
  /// data alone that not every stage computes.
  const llvm::DenseSet<Operation *> &joinsReader;
};

/// The unit whose chunk each op of the step is predicted to run in (ops
/// every stage computes are left out): a forward op's own; a backward or
/// update op runs with a parameter it reads, else in the earliest chunk
/// that still holds what it reads (forward values are held up to their
/// last forward reader); since chunks are contiguous, that chunk holds the
/// earliest unit that does, so units stand in for chunks. Then, as
/// cleave-pipeline-stages does, backward ops move toward their readers
/// (PullTowardUsers.h), with units for stages.
llvm::DenseMap<Operation *, int64_t>
predictedUnits(Block &body, const ForwardUnits &units, const StepFacts &facts);

/// The work of each unit: its forward ops' plus that of the backward and
/// update ops predicted to run in its chunk. The micro-batch copies after
/// the first weigh `laterCopies` times their own: the cut of a program of
/// m micro-batches is balanced as one of M when laterCopies is
/// (M - 1) / (m - 1) (the first copy starts the gradient sums, the others
/// add to them).
llvm::SmallVector<double>
unitWork(Block &body, const llvm::DenseMap<Operation *, int64_t> &placed,
         int64_t numUnits, double balance, double laterCopies = 1);

/// The bytes a cut before unit u sends per step (entry u; entries 0 and
/// numUnits are 0): the values computed on one side of it and read on the
/// other as the ops are placed (forward activations, and the gradients
/// flowing back). Values every stage computes itself and parameters (a
/// tied embedding crosses once per step, not per micro-batch) are not
/// counted. A value read several chunks on is sent there directly but
/// counted at every cut it spans: the cut sees its boundaries only.
/// Values of later micro-batch copies weigh `laterCopies` as in unitWork;
/// a sum over the micro-batches goes on once.
llvm::SmallVector<double>
cutBytes(Block &body, const llvm::DenseMap<Operation *, int64_t> &placed,
         int64_t numUnits, double laterCopies = 1);

/// What the cut minimises: a chunk from unit s up to unit e costs
/// work[s..e) + linkBalance x (crossing[s] + crossing[e]).
struct CutCosts {
  llvm::ArrayRef<double> work;     // per unit
  llvm::ArrayRef<double> crossing; // per cut position, units + 1 entries
  double linkBalance = 0;
};

/// Splits the units into `chunks` contiguous non-empty chunks, cutting
/// only before units u with cutAllowed[u] (entry 0 is ignored): the least
/// cost of the most expensive chunk, and among the splits that keep it,
/// the least sum of squared chunk costs (ties to later cuts, so free ops
/// such as a reshape stay with the op before them). Returns the first unit
/// of each chunk (the first is 0); failure when fewer than `chunks - 1`
/// cuts are allowed.
FailureOr<llvm::SmallVector<int64_t>>
balancedCut(const CutCosts &costs, llvm::ArrayRef<bool> cutAllowed,
            int64_t chunks);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_STAGECUT_H
