//===- ImportNormalization.cpp - softmax and normalization layers ---------===//

#include "frontend/NodeImporter.h"

#include "dialects/cleave/CleaveOps.h"

namespace mlir::cleave {

namespace {

template <typename OpTy>
LogicalResult importSoftmax(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.intAttr("axis", -1), type->getRank());
  if (failed(axis))
    return failure();
  node.setOutput(0, node.create<OpTy>(*type, node.input(0),
                                      node.builder().getI64IntegerAttr(*axis))
                        .getResult());
  return success();
}

LogicalResult importLayerNormalization(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  if (node.intAttr("stash_type", 1) != 1)
    return node.emitError() << "stash_type " << node.intAttr("stash_type", 1)
                            << " is not supported; only float statistics "
                               "(stash_type = 1)";
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.intAttr("axis", -1), type->getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> reduced(type->getShape());
  std::fill(reduced.begin() + *axis, reduced.end(), 1);
  auto statsType = RankedTensorType::get(reduced, type->getElementType());
  OpBuilder &b = node.builder();
  auto op = node.create<LayerNormOp>(
      *type, statsType, statsType, node.input(0), node.input(1), node.input(2),
      b.getI64IntegerAttr(*axis),
      b.getF32FloatAttr(node.floatAttr("epsilon", 1e-5f)));
  node.setOutputs(op->getResults());
  return success();
}

LogicalResult importBatchNormalization(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  Type statsType = node.input(3).getType();
  OpBuilder &b = node.builder();
  auto op = node.create<BatchNormOp>(
      *type, statsType, statsType, node.input(0), node.input(1), node.input(2),
      node.input(3), node.input(4),
      b.getF32FloatAttr(node.floatAttr("epsilon", 1e-5f)),
      b.getF32FloatAttr(node.floatAttr("momentum", 0.9f)),
      b.getBoolAttr(node.intAttr("training_mode", 0) != 0));
  node.setOutputs(op->getResults());
  return success();
}

} // namespace

void registerNormalizationImporters(OpImportTable &table) {
  table["Softmax"] = importSoftmax<SoftmaxOp>;
  table["LogSoftmax"] = importSoftmax<LogSoftmaxOp>;
  table["LayerNormalization"] = importLayerNormalization;
  table["BatchNormalization"] = importBatchNormalization;
}

} // namespace mlir::cleave
