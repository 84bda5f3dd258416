//===- PullTowardUsers.cpp - backward ops join their readers' stage -------===//
//
// See PullTowardUsers.h.
//
//===----------------------------------------------------------------------===//

#include "passes/PullTowardUsers.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::cleave;

double mlir::cleave::bytesOf(Value value) {
  auto type = dyn_cast<ShapedType>(value.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return 0.0;
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  return static_cast<double>(type.getNumElements()) * std::max(1u, bits / 8);
}

void mlir::cleave::pullTowardUsers(
    Block &body, const StagePlacement &placement,
    llvm::function_ref<bool(Operation *)> forward,
    llvm::function_ref<bool(BlockArgument)> isParamOrState) {
  SmallVector<Operation *> movable;
  for (Operation &op : body.without_terminator())
    if (placement.at(&op) && !forward(&op) &&
        (isPure(&op) || isa<AllReduceOp>(op)) &&
        llvm::none_of(op.getOperands(), [&](Value v) {
          auto arg = dyn_cast<BlockArgument>(v);
          return arg && isParamOrState(arg);
        }))
      movable.push_back(&op);
  // Whether stage `to` has `value` without a transfer for `op`.
  auto heldAt = [&](Value value, int64_t to, Operation *op) {
    std::optional<int64_t> from = placement.producedAt(value);
    if (!from || *from == to)
      return true;
    return llvm::any_of(value.getUsers(), [&](Operation *user) {
      return user != op && placement.at(user) == to;
    });
  };
  llvm::DenseSet<Operation *> canMove(movable.begin(), movable.end());
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (Operation *op : llvm::reverse(movable)) {
      std::optional<int64_t> to;
      bool oneStage = true;
      for (Operation *user : op->getUsers()) {
        std::optional<int64_t> at = placement.at(user);
        if (!at || (to && *to != *at)) {
          oneStage = false;
          break;
        }
        to = at;
      }
      int64_t from = *placement.at(op);
      if (!oneStage || !to || *to == from)
        continue;
      // The op moves with the producers in its stage that only it (or
      // they) read: a sum of micro-batch gradients takes the gradients'
      // computations along.
      llvm::SetVector<Operation *> group;
      group.insert(op);
      for (size_t i = 0; i < group.size(); ++i)
        for (Value operand : group[i]->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (def && canMove.contains(def) && placement.at(def) == from &&
              llvm::all_of(def->getUsers(), [&](Operation *user) {
                return group.contains(user);
              }))
            group.insert(def);
        }
      double saved = 0, added = 0;
      for (Value result : op->getResults())
        saved += bytesOf(result);
      llvm::SmallPtrSet<Value, 8> counted;
      for (Operation *member : group)
        for (Value operand : member->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if ((def && group.contains(def)) || heldAt(operand, *to, member) ||
              !counted.insert(operand).second)
            continue;
          added += bytesOf(operand);
        }
      if (added <= saved) {
        for (Operation *member : group)
          placement.move(member, *to);
        changed = true;
      }
    }
    if (!changed)
      break;
  }
}
