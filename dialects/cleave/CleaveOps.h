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
/// The `cleave.mesh` of the module holding `op` (or of `op` itself when it
/// is the module); null when the program is not distributed.
MeshAttr getModuleMesh(Operation *op);
} // namespace mlir::cleave

#endif // CLEAVE_DIALECTS_CLEAVE_CLEAVEOPS_H
