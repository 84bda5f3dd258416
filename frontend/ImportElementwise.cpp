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
  auto op = node.create<DropoutOp>(
      *type, maskType, node.input(0), Value(), b.getF32FloatAttr(ratio),
      b.getBoolAttr(training), seed, IntegerAttr(), IntegerAttr());
  node.setOutputs(op->getResults());
  return success();
}

/// RandomUniform and RandomNormal (float32 only): the shape from the
/// attribute (ONNX shape inference), the distribution's two parameters, and
/// the seed, a float in ONNX, kept as its bit pattern.
template <typename Op>
LogicalResult importRandom(NodeImporter &node, StringRef first,
                           float firstDefault, StringRef second,
                           float secondDefault) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  if (node.intAttr("dtype", onnx::TensorProto_DataType_FLOAT) !=
      onnx::TensorProto_DataType_FLOAT)
    return node.emitError() << "only float32 random numbers are supported "
                               "(dtype 1)";
  OpBuilder &b = node.builder();
  IntegerAttr seed;
  if (node.hasAttr("seed"))
    seed = b.getI64IntegerAttr(
        llvm::bit_cast<uint32_t>(node.floatAttr("seed", 0.0f)));
  float a = node.floatAttr(first, firstDefault);
  float c = node.floatAttr(second, secondDefault);
  auto op =
      node.create<Op>(*type, b.getF32FloatAttr(a), b.getF32FloatAttr(c), seed);
  node.setOutput(0, op.getResult());
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
  table["RandomUniform"] = [](NodeImporter &node) {
    return importRandom<RandomUniformOp>(node, "low", 0.0f, "high", 1.0f);
  };
  table["RandomNormal"] = [](NodeImporter &node) {
    return importRandom<RandomNormalOp>(node, "mean", 0.0f, "scale", 1.0f);
  };
}

} // namespace mlir::cleave
