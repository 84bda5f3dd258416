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
      b.getBoolAttr(node.intAttr("training_mode", 0) != 0),
      /*batch_statistics=*/ValueRange{});
  node.setOutputs(op->getResults());
  return success();
}

/// InstanceNormalization (what torch's GroupNorm and InstanceNorm export
/// to): each (sample, channel) normalized over its spatial positions with
/// the biased variance, then a per-channel scale and bias. Written with
/// reductions, so autodiff derives its gradient.
LogicalResult importInstanceNormalization(NodeImporter &node) {
  TensorBuilder t = node.tensors();
  Value x = node.input(0), scale = node.input(1), bias = node.input(2);
  RankedTensorType type = t.typeOf(x);
  if (type.getRank() < 3 || !isa<FloatType>(type.getElementType()))
    return node.emitError() << "expects a float input [N, C, D1, ...] of "
                               "rank 3 or more",
           failure();
  SmallVector<int64_t> axes, channelShape{type.getDimSize(1)};
  for (int64_t i = 2; i < type.getRank(); ++i) {
    axes.push_back(i);
    channelShape.push_back(1);
  }
  for (Value v : {scale, bias})
    if (t.typeOf(v).getShape() != ArrayRef<int64_t>{type.getDimSize(1)})
      return node.emitError() << "scale and bias must have shape ["
                              << type.getDimSize(1) << "]",
             failure();
  Value centered = t.sub(x, t.reduce<ReduceMeanOp>(x, axes, true));
  Value variance =
      t.reduce<ReduceMeanOp>(t.mul(centered, centered), axes, true);
  Value stddev = t.unary<SqrtOp>(
      t.add(variance, node.floatAttr("epsilon", 1e-5f)));
  Value y = t.mul(t.div(centered, stddev), t.reshape(scale, channelShape));
  node.setOutput(0, t.add(y, t.reshape(bias, channelShape)));
  return success();
}

} // namespace

void registerNormalizationImporters(OpImportTable &table) {
  table["Softmax"] = importSoftmax<SoftmaxOp>;
  table["LogSoftmax"] = importSoftmax<LogSoftmaxOp>;
  table["LayerNormalization"] = importLayerNormalization;
  table["BatchNormalization"] = importBatchNormalization;
  table["InstanceNormalization"] = importInstanceNormalization;
}

} // namespace mlir::cleave
