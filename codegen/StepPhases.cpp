//===- StepPhases.cpp - forward, backward and update ops of a step --------===//

#include "codegen/StepPhases.h"

#include "dialects/cleave/CleaveOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::cleave {

namespace {

/// The number of the op a micro-batch's copy copies, -1 for none.
int64_t numberOf(Operation *op) {
  auto attr =
      op->getAttrOfType<DenseI64ArrayAttr>(CleaveDialect::kMicroBatchAttrName);
  return attr && attr.size() > 1 ? attr[1] : -1;
}

} // namespace

const char *stepPhaseName(StepPhase phase) {
  switch (phase) {
  case StepPhase::Forward:
    return "forward";
  case StepPhase::Backward:
    return "backward";
  case StepPhase::Update:
    return "update";
  case StepPhase::Other:
    return "other";
  case StepPhase::Whole:
    return "forward+backward";
  }
  return "other";
}

std::string traceNodeName(Operation *op) {
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    if (!loc.getName().getValue().empty())
      return loc.getName().str();
  return op->getName().stripDialect().str();
}

int64_t StepPhases::microbatchOf(Operation *op) {
  auto attr =
      op->getAttrOfType<DenseI64ArrayAttr>(CleaveDialect::kMicroBatchAttrName);
  return attr && attr.size() ? attr[0] : -1;
}

StepPhases::StepPhases(func::FuncOp step) {
  Block &body = step.getBody().front();
  for (Operation &op : body)
    position[&op] = static_cast<int64_t>(position.size());
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    if (!step.getResultAttr(i, CleaveDialect::kLossAttrName))
      continue;
    SmallVector<Value> work{ret.getOperand(i)};
    llvm::DenseSet<Operation *> seen;
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || !seen.insert(def).second || isa<ConstantOp>(def))
        continue;
      // Scalar arithmetic leads back to the ops that reduce a tensor.
      bool reduces = def->getNumOperands() == 0 ||
                     llvm::any_of(def->getOperandTypes(), [](Type type) {
                       auto tensor = dyn_cast<RankedTensorType>(type);
                       return tensor && tensor.getRank() > 0;
                     });
      if (!reduces || isa<SendRecvOp>(def)) {
        llvm::append_range(work, def->getOperands());
        continue;
      }
      lossPosition = std::max(lossPosition, position.lookup(def));
      lossNumber = std::max(lossNumber, numberOf(def));
    }
  }
}

StepPhase StepPhases::phaseOf(Operation *op) const {
  if (isa<SgdOp, AdamwOp, MomentumOp, AdamOp, AdagradOp>(op))
    return StepPhase::Update;
  if (lossPosition < 0)
    return StepPhase::Whole;
  if (lossNumber >= 0)
    return microbatchOf(op) < 0        ? StepPhase::Other
           : numberOf(op) > lossNumber ? StepPhase::Backward
                                       : StepPhase::Forward;
  return position.lookup(op) > lossPosition ? StepPhase::Backward
                                            : StepPhase::Forward;
}

} // namespace mlir::cleave
