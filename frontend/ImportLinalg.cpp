//===- ImportLinalg.cpp - MatMul and Gemm ---------------------------------===//

#include "frontend/NodeImporter.h"

#include "dialects/cleave/CleaveOps.h"

namespace mlir::cleave {

namespace {

LogicalResult importGemm(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  OpBuilder &b = node.builder();
  auto op = node.create<GemmOp>(
      *type, node.input(0), node.input(1), node.input(2),
      b.getF32FloatAttr(node.floatAttr("alpha", 1.0f)),
      b.getF32FloatAttr(node.floatAttr("beta", 1.0f)),
      b.getBoolAttr(node.intAttr("transA", 0) != 0),
      b.getBoolAttr(node.intAttr("transB", 0) != 0));
  node.setOutput(0, op.getResult());
  return success();
}

} // namespace

void registerLinalgImporters(OpImportTable &table) {
  table["MatMul"] = importOneToOne<MatmulOp>;
  table["Gemm"] = importGemm;
}

} // namespace mlir::cleave
