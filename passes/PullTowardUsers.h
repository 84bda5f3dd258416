//===- PullTowardUsers.h - backward ops join their readers -*- C++ -*-===//
//
// After cleave-pipeline-stages places each op of a step, a backward op
// (or a gradient all-reduce over another mesh axis) whose results only
// one other stage reads moves into that stage where this sends no more
// bytes, taking along the producers that only it reads: a weight's
// gradient is then computed where the small activation gradient arrives,
// instead of being sent whole to the weight's update. The stage cut's
// prediction of where ops will run (StageCut.h) applies the same rule to
// forward units, so that it weighs the values that will actually cross.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_PULLTOWARDUSERS_H
#define CLEAVE_PASSES_PULLTOWARDUSERS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace mlir::cleave {

/// Where a step's ops run, as the rule reads and changes it: `at` gives an
/// op's stage (or unit; nullopt for an op every stage computes, or one
/// not placed), `producedAt` where a value is computed (nullopt where
/// every stage has it), and `move` places an op elsewhere.
struct StagePlacement {
  llvm::function_ref<std::optional<int64_t>(Operation *)> at;
  llvm::function_ref<std::optional<int64_t>(Value)> producedAt;
  llvm::function_ref<void(Operation *, int64_t)> move;
};

/// Applies the rule to the ops of `body` that are placed and not
/// `forward`, that are pure (or all-reduces) and that read no parameter or
/// optimizer state (`isParamOrState`), in a few rounds so that chains of
/// such ops move one after the other.
void pullTowardUsers(Block &body, const StagePlacement &placement,
                     llvm::function_ref<bool(Operation *)> forward,
                     llvm::function_ref<bool(BlockArgument)> isParamOrState);

/// The bytes of a value of static shape (a boolean takes one byte); 0 for
/// others.
double bytesOf(Value value);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_PULLTOWARDUSERS_H
