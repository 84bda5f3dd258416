//===- CleaveDialect.h - The cleave dialect ---------------------*- C++ -*-===//

#ifndef CLEAVE_DIALECTS_CLEAVE_CLEAVEDIALECT_H
#define CLEAVE_DIALECTS_CLEAVE_CLEAVEDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "dialects/cleave/CleaveDialect.h.inc"

#endif // CLEAVE_DIALECTS_CLEAVE_CLEAVEDIALECT_H
