//===- CleaveDialect.cpp - The cleave dialect -----------------------------===//

#include "dialects/cleave/CleaveDialect.h"
#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace mlir::cleave;

#include "dialects/cleave/CleaveDialect.cpp.inc"

void CleaveDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/cleave/CleaveOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *CleaveDialect::materializeConstant(OpBuilder &builder,
                                              Attribute value, Type type,
                                              Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
