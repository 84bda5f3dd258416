//===- CleaveTraits.h - native traits of cleave ops -------------*- C++ -*-===//

#ifndef CLEAVE_DIALECTS_CLEAVE_CLEAVETRAITS_H
#define CLEAVE_DIALECTS_CLEAVE_CLEAVETRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::cleave {

/// Checks that the operands broadcast numpy-style and that the single result
/// has exactly the broadcast shape (static shapes leave no room for the
/// looser "compatible" check of OpTrait::ResultsBroadcastableShape).
LogicalResult verifyBroadcastingOp(Operation *op);

namespace OpTrait {
template <typename ConcreteType>
class Broadcasting : public mlir::OpTrait::TraitBase<ConcreteType, Broadcasting> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyBroadcastingOp(op);
  }
};
} // namespace OpTrait

} // namespace mlir::cleave

#endif // CLEAVE_DIALECTS_CLEAVE_CLEAVETRAITS_H
