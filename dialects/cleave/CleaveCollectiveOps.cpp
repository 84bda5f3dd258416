//===- CleaveCollectiveOps.cpp - verifiers of the distribution ops --------===//
//
// Checks of cleave.reshard and the collectives against the module's mesh.
//
//===----------------------------------------------------------------------===//

#include "dialects/cleave/CleaveDialect.h"
#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::cleave;

MeshAttr mlir::cleave::getModuleMesh(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                  : op->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  return module->getAttrOfType<MeshAttr>(CleaveDialect::kMeshAttrName);
}

FailureOr<int64_t> mlir::cleave::getModuleMeshAxisSize(ModuleOp module,
                                                       StringRef axis,
                                                       StringRef what) {
  MeshAttr mesh = getModuleMesh(module);
  if (!mesh || mesh.getAxisIndex(axis) < 0)
    return module.emitError()
           << what << " need a mesh with the axis '" << axis << "'";
  return mesh.getAxisSize(axis);
}

bool mlir::cleave::runsOnStage(Operation *op, int64_t stage) {
  if (stage < 0)
    return true;
  if (auto transfer = dyn_cast<SendRecvOp>(op))
    return transfer.getSourceAttr().getInt() == stage ||
           transfer.getDestAttr().getInt() == stage;
  auto attr = op->getAttrOfType<IntegerAttr>(CleaveDialect::kStageAttrName);
  return !attr || attr.getInt() == stage;
}

bool mlir::cleave::isHeldOnStage(Value value, int64_t stage) {
  if (stage < 0)
    return true;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    auto attr = func ? func.getArgAttrOfType<IntegerAttr>(
                           arg.getArgNumber(), CleaveDialect::kStageAttrName)
                     : IntegerAttr();
    return !attr || attr.getInt() == stage;
  }
  Operation *def = value.getDefiningOp();
  if (auto transfer = dyn_cast<SendRecvOp>(def))
    return transfer.getDestAttr().getInt() == stage;
  return runsOnStage(def, stage);
}

namespace {

/// Returns the mesh, or emits an error when the module has none or `axes`
/// are not distinct axes of it.
FailureOr<MeshAttr> verifyAxes(Operation *op, ArrayAttr axes) {
  MeshAttr mesh = getModuleMesh(op);
  if (!mesh)
    return op->emitOpError("needs a module with a 'cleave.mesh' attribute");
  llvm::SmallSet<StringRef, 4> seen;
  for (StringAttr axis : axes.getAsRange<StringAttr>()) {
    if (mesh.getAxisIndex(axis.getValue()) < 0)
      return op->emitOpError("names axis '")
             << axis.getValue() << "', which the mesh " << mesh
             << " does not have";
    if (!seen.insert(axis.getValue()).second)
      return op->emitOpError("names axis '") << axis.getValue() << "' twice";
  }
  return mesh;
}

int64_t groupSize(MeshAttr mesh, ArrayAttr axes) {
  return mesh.getGroupSize(llvm::to_vector(axes.getAsRange<StringAttr>()));
}

/// Checks that `larger` is `smaller` with dimension `dim` multiplied by
/// `factor`, naming the op's operand roles in the message.
LogicalResult verifyScaledDim(Operation *op, ShapedType larger,
                              ShapedType smaller, int64_t dim, int64_t factor,
                              StringRef largerName, StringRef smallerName) {
  if (larger.getElementType() != smaller.getElementType())
    return op->emitOpError("changes the element type");
  if (larger.getRank() != smaller.getRank())
    return op->emitOpError("changes the rank");
  if (dim < 0 || dim >= larger.getRank())
    return op->emitOpError("dim ") << dim << " is out of range for rank "
                                   << larger.getRank();
  for (int64_t d = 0; d < larger.getRank(); ++d) {
    int64_t expected = d == dim ? smaller.getDimSize(d) * factor
                                : smaller.getDimSize(d);
    if (larger.getDimSize(d) != expected)
      return op->emitOpError("expects the ")
             << largerName << "'s dimension " << d << " to be " << expected
             << " (the " << smallerName << "'s"
             << (d == dim ? " times the group size " + std::to_string(factor)
                          : std::string())
             << "), got " << larger.getDimSize(d);
  }
  return success();
}

template <typename OpTy>
LogicalResult verifyGathering(OpTy op) {
  FailureOr<MeshAttr> mesh = verifyAxes(op, op.getAxes());
  if (failed(mesh))
    return failure();
  return verifyScaledDim(op, op.getResult().getType(), op.getInput().getType(),
                         op.getDim(), groupSize(*mesh, op.getAxes()), "result",
                         "input");
}

template <typename OpTy>
LogicalResult verifyScattering(OpTy op) {
  FailureOr<MeshAttr> mesh = verifyAxes(op, op.getAxes());
  if (failed(mesh))
    return failure();
  return verifyScaledDim(op, op.getInput().getType(), op.getResult().getType(),
                         op.getDim(), groupSize(*mesh, op.getAxes()), "input",
                         "result");
}

} // namespace

LogicalResult ReshardOp::verify() {
  MeshAttr mesh = getModuleMesh(*this);
  if (!mesh)
    return emitOpError("needs a module with a 'cleave.mesh' attribute");
  if (std::optional<std::string> problem =
          getSharding().checkAgainst(mesh, getInput().getType()))
    return emitOpError("has an invalid sharding: ") << *problem;
  // Turning a whole value into partial sums would need all but one rank to
  // zero it; nothing needs that, so it is not a reshard.
  if (!getSharding().getPartial().empty())
    return emitOpError("cannot produce partial sums (its sharding has "
                       "'partial')");
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  llvm::append_range(inferredReturnTypes, operands.getTypes());
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  return verifyAxes(*this, getAxes());
}

LogicalResult AllGatherOp::verify() { return verifyGathering(*this); }

LogicalResult AxisIndexOp::verify() { return verifyAxes(*this, getAxes()); }
LogicalResult ReduceScatterOp::verify() { return verifyScattering(*this); }
LogicalResult AllSliceOp::verify() { return verifyScattering(*this); }

LogicalResult AllToAllOp::verify() {
  FailureOr<MeshAttr> mesh = verifyAxes(*this, getAxes());
  if (failed(mesh))
    return failure();
  auto input = getInput().getType(), result = getResult().getType();
  int64_t rank = input.getRank(), split = getSplitDim(),
          concat = getConcatDim(), size = groupSize(*mesh, getAxes());
  if (split < 0 || split >= rank || concat < 0 || concat >= rank)
    return emitOpError("split and concat dims must be in [0, ") << rank << ")";
  if (input.getElementType() != result.getElementType() ||
      result.getRank() != rank)
    return emitOpError("changes the element type or rank");
  if (input.getDimSize(split) % size != 0)
    return emitOpError("split dimension ")
           << split << " of size " << input.getDimSize(split)
           << " does not divide into the group size " << size;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t expected = input.getDimSize(d);
    if (d == split)
      expected /= size;
    if (d == concat)
      expected *= size;
    if (result.getDimSize(d) != expected)
      return emitOpError("expects result dimension ")
             << d << " to be " << expected << ", got " << result.getDimSize(d);
  }
  return success();
}

LogicalResult BroadcastOp::verify() {
  FailureOr<MeshAttr> mesh = verifyAxes(*this, getAxes());
  if (failed(mesh))
    return failure();
  int64_t size = groupSize(*mesh, getAxes());
  int64_t root = getRootAttr().getInt();
  if (root < 0 || root >= size)
    return emitOpError("root ") << root << " is not a rank of a group of "
                                << size;
  return success();
}

LogicalResult SendRecvOp::verify() {
  FailureOr<MeshAttr> mesh =
      verifyAxes(*this, ArrayAttr::get(getContext(), {getAxisAttr()}));
  if (failed(mesh))
    return failure();
  int64_t size = mesh->getAxisSize(getAxis());
  for (int64_t stage : {getSource(), getDest()})
    if (stage < 0 || stage >= size)
      return emitOpError("stage ") << stage << " is not a coordinate of axis '"
                                   << getAxis() << "' (size " << size << ")";
  if (getSource() == getDest())
    return emitOpError("sends stage ") << getSource() << " to itself";
  return success();
}
