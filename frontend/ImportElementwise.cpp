//===- ImportElementwise.cpp - elementwise ONNX operators -----------------===//
//
// Arithmetic, comparisons, activations, Cast, Where, Constant, Identity and
// Dropout.
//
//===----------------------------------------------------------------------===//

#include "frontend/NodeImporter.h"

#include "dialects/cleave/CleaveOps.h"

namespace mlir::cleave {

namespace {

LogicalResult importIdentity(NodeImporter &node) {
  node.setOutput(0, node.input(0));
  return success();
}

LogicalResult importConstant(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  OpBuilder &b = node.builder();
  ElementsAttr value;
  if (const auto *attr = node.findAttr("value")) {
    FailureOr<DenseElementsAttr> dense = node.tensorAttr(attr->t());
    if (failed(dense))
      return failure();
    value = *dense;
  } else if (const auto *attr = node.findAttr("value_float")) {
    value = DenseElementsAttr::get(*type, b.getF32FloatAttr(attr->f()));
  } else if (const auto *attr = node.findAttr("value_int")) {
    value = DenseElementsAttr::get(*type, b.getI64IntegerAttr(attr->i()));
  } else if (const auto *attr = node.findAttr("value_floats")) {
    SmallVector<float> floats(attr->floats().begin(), attr->floats().end());
    value = DenseElementsAttr::get(*type, ArrayRef<float>(floats));
  } else if (const auto *attr = node.findAttr("value_ints")) {
    SmallVector<int64_t> ints(attr->ints().begin(), attr->ints().end());
    value = DenseElementsAttr::get(*type, ArrayRef<int64_t>(ints));
  } else {
    return node.emitError()
           << "only tensor, float and int constants are supported (sparse "
              "and string constants are not)";
  }
  node.setOutput(0, node.create<ConstantOp>(value).getResult());
  return success();
}

LogicalResult importDropout(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  double ratio = 0.5;
  if (node.hasInput(1)) {
    FailureOr<double> value = node.constantScalar(1);
    if (failed(value))
      return failure();
    ratio = *value;
  }
  bool training = false;
  if (node.hasInput(2)) {
    FailureOr<double> value = node.constantScalar(2);
    if (failed(value))
      return failure();
    training = *value != 0.0;
  }
  if (!(ratio >= 0.0 && ratio < 1.0))
    return node.emitError() << "ratio " << ratio << " must be in [0, 1)";
  OpBuilder &b = node.builder();
  auto maskType = RankedTensorType::get(type->getShape(), b.getI1Type());
  IntegerAttr seed;
  if (node.hasAttr("seed"))
    seed = b.getI64IntegerAttr(node.intAttr("seed", 0));
  auto op = node.create<DropoutOp>(*type, maskType, node.input(0),
                                   b.getF32FloatAttr(ratio),
                                   b.getBoolAttr(training), seed);
  node.setOutputs(op->getResults());
  return success();
}

} // namespace

void registerElementwiseImporters(OpImportTable &table) {
  table["Add"] = importOneToOne<AddOp>;
  table["Sub"] = importOneToOne<SubOp>;
  table["Mul"] = importOneToOne<MulOp>;
  table["Div"] = importOneToOne<DivOp>;
  table["Pow"] = importOneToOne<PowOp>;
  table["Equal"] = importOneToOne<EqualOp>;
  table["Less"] = importOneToOne<LessOp>;
  table["Where"] = importOneToOne<WhereOp>;
  table["Sqrt"] = importOneToOne<SqrtOp>;
  table["Neg"] = importOneToOne<NegOp>;
  table["Erf"] = importOneToOne<ErfOp>;
  table["Tanh"] = importOneToOne<TanhOp>;
  table["Sigmoid"] = importOneToOne<SigmoidOp>;
  table["Relu"] = importOneToOne<ReluOp>;
  table["Exp"] = importOneToOne<ExpOp>;
  table["Log"] = importOneToOne<LogOp>;
  table["Cast"] = importOneToOne<CastOp>;
  table["Identity"] = importIdentity;
  table["Constant"] = importConstant;
  table["Dropout"] = importDropout;
}

} // namespace mlir::cleave
