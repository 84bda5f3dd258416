//===- TrainingStep.cpp - what the step passes ask of a step --------------===//

#include "passes/TrainingStep.h"

#include "dialects/cleave/CleaveDialect.h"

using namespace mlir;
using namespace mlir::cleave;

Value mlir::cleave::lossOf(func::FuncOp func) {
  if (func.isExternal())
    return Value();
  Operation *ret = func.getBody().front().getTerminator();
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, CleaveDialect::kLossAttrName))
      return ret->getOperand(i);
  return Value();
}

llvm::DenseSet<Operation *>
mlir::cleave::forwardOps(func::FuncOp func,
                         llvm::function_ref<bool(Operation *)> skip) {
  llvm::DenseSet<Operation *> forward;
  SmallVector<Operation *> worklist;
  if (Value loss = lossOf(func))
    if (Operation *def = loss.getDefiningOp())
      worklist.push_back(def);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if ((skip && skip(op)) || !forward.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        worklist.push_back(def);
  }
  return forward;
}
