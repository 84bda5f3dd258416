//===- FusionPlan.cpp - ops the emitter runs together ---------------------===//

#include "codegen/FusionPlan.h"

namespace mlir::cleave {

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

} // namespace

Operation *firstUser(Operation *op) {
  Operation *first = nullptr;
  for (Operation *user : op->getUsers())
    if (!first || user->isBeforeInBlock(first))
      first = user;
  return first;
}

FusionPlan planFusion(func::FuncOp func,
                      llvm::function_ref<bool(Operation *)> isElementwise) {
  // No other broadcasting than of single elements: the loop indexes every
  // operand by the result's index.
  auto isFusible = [&](Operation *op) {
    if (op->getNumResults() != 1 || !isElementwise(op))
      return false;
    ArrayRef<int64_t> shape = tensorType(op->getResult(0)).getShape();
    return llvm::all_of(op->getOperands(), [&](Value v) {
      return tensorType(v).getShape() == shape ||
             tensorType(v).getNumElements() == 1;
    });
  };
  FusionPlan fusion;
  Block &block = func.getBody().front();
  for (Operation &first : block.without_terminator()) {
    if (fusion.fusedAway.contains(&first) || fusion.groups.count(&first) ||
        !isFusible(&first))
      continue;
    SmallVector<Operation *> chain{&first};
    while (true) {
      Value value = chain.back()->getResult(0);
      if (!value.hasOneUse())
        break;
      Operation *user = *value.user_begin();
      // A chain is linear: an op joins at most one group.
      if (!isFusible(user) || user->getBlock() != &block ||
          fusion.fusedAway.contains(user) || fusion.groups.count(user) ||
          tensorType(user->getResult(0)).getShape() !=
              tensorType(value).getShape() ||
          tensorType(value).getNumElements() == 1)
        break;
      chain.push_back(user);
    }
    if (chain.size() < 2)
      continue;
    for (Operation *op : ArrayRef<Operation *>(chain).drop_back())
      fusion.fusedAway.insert(op);
    fusion.groups[chain.back()] = chain;
  }
  for (auto &[tail, chain] : fusion.groups)
    for (Operation *op : chain)
      fusion.executedAt[op] = tail;
  // All-reduces run asynchronously up to the first use of a result.
  func.walk([&](AllReduceOp op) {
    if (Operation *finish = firstUser(op))
      fusion.executedAt[op] = finish;
  });
  return fusion;
}

BackwardFusion planBackwardFusion(Block &block, const MemoryPlan &plan,
                                  const FusionPlan &fusion, int64_t stage) {
  BackwardFusion backward;
  // Where each op runs: a fused op in its group's loop, an all-reduce up to
  // its first reader, a gradient GEMM at its update.
  auto runsAt = [&](Operation *op) {
    if (Operation *at = fusion.executedAt.lookup(op))
      return at;
    if (Operation *at = plan.gemmInUpdate.lookup(op))
      return at;
    return op;
  };
  for (auto [updateGemmOp, sgdOp] : plan.gemmInUpdate) {
    auto update = cast<GemmOp>(updateGemmOp);
    auto sgd = cast<SgdOp>(sgdOp);
    Value w = sgd.getParam();
    // The update's gradient dw = dy^T x, unscaled.
    if (!update.getTransA() || update.getTransB() ||
        !update.getAlpha().isExactlyValue(1.0))
      continue;
    Value dy = update.getA();
    for (Operation *user : dy.getUsers()) {
      auto dx = dyn_cast<GemmOp>(user);
      // dx in a buffer of its own (not itself a parameter's update).
      if (!dx || dx == update || dx.getB() != w || dx.getTransA() ||
          dx.getTransB() || dx.getC() || !dx.getAlpha().isExactlyValue(1.0) ||
          !runsOnStage(dx, stage) || dx->getBlock() != sgd->getBlock() ||
          !dx->isBeforeInBlock(sgd) ||
          backward.updateWithInputGradient.count(dx) ||
          backward.fusedUpdates.contains(sgd) ||
          plan.root(dx.getResult()) != dx.getResult())
        continue;
      // The update's x must be complete by then (it runs early), in a
      // buffer.
      Operation *xDef = update.getB().getDefiningOp();
      if (xDef && (xDef->getBlock() != dx->getBlock() ||
                   !runsAt(xDef)->isBeforeInBlock(dx) ||
                   fusion.fusedAway.contains(xDef)))
        continue;
      // Nothing that runs from the input gradient to the update may read w
      // (or a view of it), which is updated early.
      bool readsW = false;
      for (Operation &op : block.without_terminator()) {
        Operation *at = runsAt(&op);
        if (&op == dx.getOperation() || &op == sgd.getOperation() ||
            !runsOnStage(&op, stage) || !dx->isBeforeInBlock(at) ||
            !at->isBeforeInBlock(sgd))
          continue;
        for (Value operand : op.getOperands())
          readsW |= plan.root(operand) == plan.root(w);
      }
      if (!readsW) {
        backward.updateWithInputGradient[dx] = sgd;
        backward.fusedUpdates.insert(sgd);
      }
    }
  }
  return backward;
}

} // namespace mlir::cleave
