//===- ScheduleUpdates.cpp - AdamW updates where their gradients are ready ===//
//
// cleave-apply-optimizer appends the updates after the backward pass, so a
// step reads every gradient twice from memory: once where it is computed,
// once at the end. Moved up to where its gradient is complete, an update
// reads it while it is still in cache. See Passes.td for the contract.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/CleaveTraits.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_SCHEDULEUPDATESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// Ops the emitter may fuse into a later op's loop (codegen/FusionPlan.h):
/// such an op reads its operands where the loop runs.
bool mayFuse(Operation *op) {
  return op->hasTrait<mlir::OpTrait::Elementwise>() ||
         op->hasTrait<cleave::OpTrait::Broadcasting>();
}

/// The last op in `block` at which `value`'s storage may still be read,
/// other than by `except`: its readers, readers of reshapes of it (views of
/// the same buffer), and, for a reader that may be fused into the chain of
/// single-use elementwise ops after it, the end of that chain.
Operation *lastRead(Value value, Operation *except, Block &block) {
  Operation *last = nullptr;
  auto later = [&](Operation *op) {
    if (!last || last->isBeforeInBlock(op))
      last = op;
  };
  SmallVector<Value> views{value};
  while (!views.empty()) {
    Value view = views.pop_back_val();
    for (Operation *user : view.getUsers()) {
      if (user == except || isa<func::ReturnOp>(user))
        continue;
      Operation *reader = block.findAncestorOpInBlock(*user);
      if (!reader)
        continue;
      if (auto reshape = dyn_cast<ReshapeOp>(reader))
        views.push_back(reshape.getResult());
      while (mayFuse(reader) && reader->getNumResults() == 1 &&
             reader->getResult(0).hasOneUse()) {
        Operation *next = *reader->getResult(0).user_begin();
        if (next->getBlock() != &block || !mayFuse(next))
          break;
        reader = next;
      }
      later(reader);
    }
  }
  return last;
}

struct ScheduleUpdatesPass
    : mlir::cleave::impl::ScheduleUpdatesPassBase<ScheduleUpdatesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty() || !func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    // Learning-rate schedules read only the step count: first.
    for (auto schedule :
         llvm::make_early_inc_range(block.getOps<LrScheduleOp>()))
      if (isa<BlockArgument>(schedule.getStep()))
        schedule->moveBefore(&block, block.begin());

    // Updates moved after the same op keep their order.
    llvm::DenseMap<Operation *, Operation *> lastMovedAfter;
    for (auto adamw : llvm::make_early_inc_range(block.getOps<AdamwOp>())) {
      Operation *after = nullptr;
      auto later = [&](Operation *op) {
        if (op && (!after || after->isBeforeInBlock(op)))
          after = op;
      };
      for (Value operand : adamw->getOperands())
        if (Operation *def = operand.getDefiningOp())
          later(block.findAncestorOpInBlock(*def));
      // The update writes the parameter and its state in place.
      for (Value written :
           {adamw.getParam(), adamw.getExpAvg(), adamw.getExpAvgSq()})
        later(lastRead(written, adamw, block));
      if (!after || !after->isBeforeInBlock(adamw))
        continue;
      Operation *&anchor = lastMovedAfter[after];
      adamw->moveAfter(anchor ? anchor : after);
      anchor = adamw;
    }
  }
};

} // namespace
