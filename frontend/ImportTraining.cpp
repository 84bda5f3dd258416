//===- ImportTraining.cpp - the ai.onnx.preview.training operators --------===//
//
// Gradient, Momentum, Adam and Adagrad, as used by a model's training_info.
//
//===----------------------------------------------------------------------===//

#include "frontend/NodeImporter.h"

#include "dialects/cleave/CleaveOps.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace mlir::cleave {

namespace {

SmallVector<Value> inputRange(NodeImporter &node, unsigned begin,
                              unsigned count) {
  SmallVector<Value> values;
  for (unsigned i = begin; i < begin + count; ++i)
    values.push_back(node.input(i));
  return values;
}

SmallVector<Type> typesOf(ValueRange values) {
  return SmallVector<Type>(values.getTypes());
}

/// Result types of an optimizer: `groups` copies of the parameter types.
SmallVector<Type> repeatedTypes(ValueRange params, unsigned groups) {
  SmallVector<Type> types;
  for (unsigned g = 0; g < groups; ++g)
    llvm::append_range(types, params.getTypes());
  return types;
}

LogicalResult importGradient(NodeImporter &node) {
  std::vector<std::string> xs = node.stringsAttr("xs"),
                           zs = node.stringsAttr("zs");
  std::string y = node.stringAttr("y", "");
  if (xs.size() + zs.size() != node.numInputs())
    return node.emitError() << "has " << node.numInputs()
                            << " inputs but xs and zs name "
                            << xs.size() + zs.size()
                            << " tensors; the i-th input feeds the i-th name";
  std::vector<std::string> names(xs);
  llvm::append_range(names, zs);
  llvm::sort(names);
  if (auto twice = std::adjacent_find(names.begin(), names.end());
      twice != names.end())
    return node.emitError()
               << "xs and zs name '" << *twice << "' twice; each tensor once",
           failure();
  if (node.numOutputs() != xs.size())
    return node.emitError() << "has " << node.numOutputs()
                            << " outputs but xs names " << xs.size();
  SmallVector<Value> inputs = inputRange(node, 0, node.numInputs());
  OpBuilder &b = node.builder();
  auto toAttr = [&](const std::vector<std::string> &names) {
    SmallVector<StringRef> refs(names.begin(), names.end());
    return b.getStrArrayAttr(refs);
  };
  auto op = node.create<GradientOp>(
      typesOf(ValueRange(inputs).take_front(xs.size())),
      FlatSymbolRefAttr::get(b.getContext(), node.modelFunction()), inputs,
      toAttr(xs), toAttr(zs), b.getStringAttr(y));
  node.setOutputs(op->getResults());
  return success();
}

/// The optimizers take `R, T, X1..Xn, G1..Gn, S1..Sn, ...` with
/// `groups` state groups after the gradients; returns n.
FailureOr<unsigned> tensorsPerGroup(NodeImporter &node, unsigned groups) {
  unsigned tensors = node.numInputs() - 2;
  if (node.numInputs() < 2 || tensors % (groups + 2) != 0 ||
      node.numOutputs() != tensors / (groups + 2) * (groups + 1))
    return node.emitError()
               << "expects R, T, then " << groups + 2
               << " equally long groups of tensors (parameters, gradients "
                  "and optimizer states) and one output per parameter and "
                  "state, but has "
               << node.numInputs() << " inputs and " << node.numOutputs()
               << " outputs",
           failure();
  return tensors / (groups + 2);
}

LogicalResult importMomentum(NodeImporter &node) {
  FailureOr<unsigned> n = tensorsPerGroup(node, 1);
  if (failed(n))
    return failure();
  std::string modeText = node.stringAttr("mode", "standard");
  std::optional<MomentumMode> mode = symbolizeMomentumMode(modeText);
  if (!mode)
    return node.emitError() << "mode '" << modeText
                            << "' is not one of standard, nesterov";
  OpBuilder &b = node.builder();
  SmallVector<Value> params = inputRange(node, 2, *n);
  auto op = node.create<MomentumOp>(
      repeatedTypes(params, 2), node.input(0), node.input(1), params,
      inputRange(node, 2 + *n, *n), inputRange(node, 2 + 2 * *n, *n),
      b.getF32FloatAttr(node.floatAttr("alpha", 0)),
      b.getF32FloatAttr(node.floatAttr("beta", 0)),
      MomentumModeAttr::get(b.getContext(), *mode),
      b.getF32FloatAttr(node.floatAttr("norm_coefficient", 0)));
  node.setOutputs(op->getResults());
  return success();
}

LogicalResult importAdam(NodeImporter &node) {
  FailureOr<unsigned> n = tensorsPerGroup(node, 2);
  if (failed(n))
    return failure();
  OpBuilder &b = node.builder();
  SmallVector<Value> params = inputRange(node, 2, *n);
  auto op = node.create<AdamOp>(
      repeatedTypes(params, 3), node.input(0), node.input(1), params, inputRange(node, 2 + *n, *n),
      inputRange(node, 2 + 2 * *n, *n), inputRange(node, 2 + 3 * *n, *n),
      b.getF32FloatAttr(node.floatAttr("alpha", 0.9f)),
      b.getF32FloatAttr(node.floatAttr("beta", 0.999f)),
      b.getF32FloatAttr(node.floatAttr("epsilon", 1e-6f)),
      b.getF32FloatAttr(node.floatAttr("norm_coefficient", 0)),
      b.getF32FloatAttr(node.floatAttr("norm_coefficient_post", 0)));
  node.setOutputs(op->getResults());
  return success();
}

LogicalResult importAdagrad(NodeImporter &node) {
  FailureOr<unsigned> n = tensorsPerGroup(node, 1);
  if (failed(n))
    return failure();
  OpBuilder &b = node.builder();
  SmallVector<Value> params = inputRange(node, 2, *n);
  auto op = node.create<AdagradOp>(
      repeatedTypes(params, 2), node.input(0), node.input(1), params,
      inputRange(node, 2 + *n, *n), inputRange(node, 2 + 2 * *n, *n),
      b.getF32FloatAttr(node.floatAttr("decay_factor", 0)),
      b.getF32FloatAttr(node.floatAttr("epsilon", 1e-6f)),
      b.getF32FloatAttr(node.floatAttr("norm_coefficient", 0)));
  node.setOutputs(op->getResults());
  return success();
}

} // namespace

void registerTrainingImporters(OpImportTable &table) {
  table["training.Gradient"] = importGradient;
  table["training.Momentum"] = importMomentum;
  table["training.Adam"] = importAdam;
  table["training.Adagrad"] = importAdagrad;
}

} // namespace mlir::cleave
