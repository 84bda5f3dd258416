//===- CleaveOps.h - cleave dialect operations ------------------*- C++ -*-===//

#ifndef CLEAVE_DIALECTS_CLEAVE_CLEAVEOPS_H
#define CLEAVE_DIALECTS_CLEAVE_CLEAVEOPS_H

#include "dialects/cleave/CleaveAttrs.h"
#include "dialects/cleave/CleaveDialect.h"
#include "dialects/cleave/CleaveTraits.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/cleave/CleaveOps.h.inc"

namespace mlir::cleave {
/// Prints a shape as `[2, 3]` for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

/// The `cleave.mesh` of the module holding `op` (or of `op` itself when it
/// is the module); null when the program is not distributed.
MeshAttr getModuleMesh(Operation *op);

/// The size of axis `axis` of `module`'s mesh, for a pass that splits the
/// program along it; emits "<what> need a mesh with the axis '<axis>'" at
/// the module and fails when there is no such axis.
FailureOr<int64_t> getModuleMeshAxisSize(ModuleOp module, StringRef axis,
                                         StringRef what);

/// The dim of data input `input` along which the ONNX model holds its
/// samples (the module's cleave.batch_dims; 0 where it records none): the
/// function takes such an input batch-first.
int64_t getModelBatchDim(Operation *op, StringRef input);

/// Pipeline stages (cleave-pipeline-stages): whether the ranks of stage
/// `stage` run `op` (all do for stage -1, an unsplit program), and whether
/// they hold `value` (a send_recv's result only at its destination).
bool runsOnStage(Operation *op, int64_t stage);
bool isHeldOnStage(Value value, int64_t stage);
} // namespace mlir::cleave

#endif // CLEAVE_DIALECTS_CLEAVE_CLEAVEOPS_H
