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
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/cleave/CleaveOps.h.inc"

#endif // CLEAVE_DIALECTS_CLEAVE_CLEAVEOPS_H
