//===- TrainingStep.h - what the step passes ask of a step ------*- C++ -*-===//
//
// The training step is the function with a `cleave.loss` result; the
// passes that reshape it (micro-batches, pipeline stages, recomputation)
// share these questions about it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_TRAININGSTEP_H
#define CLEAVE_PASSES_TRAININGSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::cleave {

/// The value `func` returns as its loss; null when it is not a step.
Value lossOf(func::FuncOp func);

/// The forward pass: the ops the loss depends on. Ops for which `skip`
/// holds are left out, and so is what only they depend on.
llvm::DenseSet<Operation *>
forwardOps(func::FuncOp func,
           llvm::function_ref<bool(Operation *)> skip = nullptr);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_TRAININGSTEP_H
