//===- Passes.h - cleave passes ---------------------------------*- C++ -*-===//

#ifndef CLEAVE_PASSES_PASSES_H
#define CLEAVE_PASSES_PASSES_H

#include "dialects/cleave/CleaveDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cleave {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Appends the reverse-mode backward pass of `forward` (ops in program
/// order) at `builder`'s insertion point and returns the gradient of the
/// scalar `loss` with respect to each `wrt` value (a zero constant where the
/// loss does not depend on it). Fails, at the op, where an op on the path has
/// no gradient rule.
FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder,
                                             ArrayRef<Operation *> forward,
                                             Value loss, ArrayRef<Value> wrt);

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_PASSES_H
