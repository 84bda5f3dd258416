//===- ImportLoss.cpp - SoftmaxCrossEntropyLoss and NLL loss --------------===//

#include "frontend/NodeImporter.h"

#include "dialects/cleave/CleaveOps.h"

namespace mlir::cleave {

namespace {

/// Reads `reduction` and `ignore_index`, shared by both losses.
LogicalResult readLossAttrs(NodeImporter &node, LossReductionAttr &reduction,
                            IntegerAttr &ignoreIndex) {
  std::string text = node.stringAttr("reduction", "mean");
  std::optional<LossReduction> kind = symbolizeLossReduction(text);
  if (!kind)
    return node.emitError() << "reduction '" << text
                            << "' is not one of none, sum, mean";
  OpBuilder &b = node.builder();
  reduction = LossReductionAttr::get(b.getContext(), *kind);
  if (node.hasAttr("ignore_index"))
    ignoreIndex = b.getI64IntegerAttr(node.intAttr("ignore_index", 0));
  return success();
}

/// Both losses take (scores, labels, optional weights); the cross entropy
/// also yields its log-probabilities.
template <typename OpTy>
LogicalResult importLoss(NodeImporter &node) {
  FailureOr<RankedTensorType> lossType = node.outputType(0);
  if (failed(lossType))
    return failure();
  LossReductionAttr reduction;
  IntegerAttr ignoreIndex;
  if (failed(readLossAttrs(node, reduction, ignoreIndex)))
    return failure();
  Value scores = node.input(0);
  SmallVector<Type> types{*lossType};
  if constexpr (std::is_same_v<OpTy, SoftmaxCrossEntropyOp>)
    types.push_back(scores.getType());
  auto op = node.create<OpTy>(TypeRange(types), scores, node.input(1),
                              node.input(2), reduction, ignoreIndex);
  node.setOutputs(op->getResults());
  return success();
}

} // namespace

void registerLossImporters(OpImportTable &table) {
  table["SoftmaxCrossEntropyLoss"] = importLoss<SoftmaxCrossEntropyOp>;
  table["NegativeLogLikelihoodLoss"] = importLoss<NllLossOp>;
}

} // namespace mlir::cleave
