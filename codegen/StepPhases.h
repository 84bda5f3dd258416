//===- StepPhases.h - forward, backward and update ops of a step -*- C++
//-*-===//
//
// Which part of a training step an op belongs to, for the planner's
// predicted timeline and the program's trace: the optimizer's updates; in
// a step split into micro-batches (cleave-unroll-microbatches), a
// micro-batch's op is backward when the op it copies came after the loss
// in the step it was unrolled from, and ops of no micro-batch are
// "other"; without micro-batches, an op is backward when it comes after
// the loss in program order. The loss: the ops that reduce a tensor to the
// returned loss (scalar arithmetic such as the sum over micro-batches is
// followed back to them).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_CODEGEN_STEPPHASES_H
#define CLEAVE_CODEGEN_STEPPHASES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::cleave {

enum class StepPhase { Forward, Backward, Update, Other, Whole };

/// "forward", "backward", "update", "other", "forward+backward" (Whole: a
/// step without a loss to tell them apart).
const char *stepPhaseName(StepPhase phase);

/// The name an op's work goes by in a trace and in the planner's node
/// times: its ONNX node's (its location), else its op name.
std::string traceNodeName(Operation *op);

class StepPhases {
public:
  explicit StepPhases(func::FuncOp step);

  StepPhase phaseOf(Operation *op) const;
  /// The micro-batch of `op`, -1 when it is none's.
  static int64_t microbatchOf(Operation *op);

private:
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t lossNumber = -1, lossPosition = -1;
};

} // namespace mlir::cleave

#endif // CLEAVE_CODEGEN_STEPPHASES_H
