//===- CleaveAttrs.h - cleave dialect attributes ----------------*- C++ -*-===//

#ifndef CLEAVE_DIALECTS_CLEAVE_CLEAVEATTRS_H
#define CLEAVE_DIALECTS_CLEAVE_CLEAVEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "dialects/cleave/CleaveEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/cleave/CleaveAttrs.h.inc"

#endif // CLEAVE_DIALECTS_CLEAVE_CLEAVEATTRS_H
