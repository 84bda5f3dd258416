//===- NodeImporter.h - what an op importer sees of one node ----*- C++ -*-===//
//
// The per-node view handed to the import function of each ONNX operator:
// operands as MLIR values, attributes and constant inputs as C++ values,
// result types from ONNX shape inference, and errors located at the node.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_NODEIMPORTER_H
#define CLEAVE_FRONTEND_NODEIMPORTER_H

#include "dialects/cleave/TensorBuilder.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <vector>

namespace mlir::cleave {

class GraphImporter;

class NodeImporter {
public:
  NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
               StringRef name, Location loc);

  const onnx::NodeProto &node() const { return node_; }
  OpBuilder &builder();
  Location loc() const { return loc_; }
  /// The default-domain opset the model imports.
  int64_t opset() const;
  /// The symbol of the function holding the inference graph.
  StringRef modelFunction() const;

  /// Number of inputs the node lists (absent optional inputs included).
  unsigned numInputs() const { return node_.input_size(); }
  /// Whether input `i` is given (listed and not the empty name).
  bool hasInput(unsigned i) const;
  /// The value of input `i`; null when absent.
  Value input(unsigned i);
  /// Input `i` as a constant list of integers (shape arithmetic is folded
  /// before import); fails with an error when it is not constant.
  FailureOr<std::vector<int64_t>> constantInts(unsigned i);
  /// Input `i` as a constant scalar; fails with an error when not constant.
  FailureOr<double> constantScalar(unsigned i);
  /// Input `i` as a constant tensor; fails with an error when not constant.
  FailureOr<DenseElementsAttr> constantTensor(unsigned i);
  /// Converts a tensor held in an attribute.
  FailureOr<DenseElementsAttr> tensorAttr(const onnx::TensorProto &tensor);

  unsigned numOutputs() const { return node_.output_size(); }
  /// Whether output `i` is listed and used by the graph.
  bool outputUsed(unsigned i) const;
  /// The statically shaped type ONNX shape inference gave output `i`.
  FailureOr<RankedTensorType> outputType(unsigned i);
  /// Binds output `i` to `value`.
  void setOutput(unsigned i, Value value);
  void setOutputs(ValueRange values);

  bool hasAttr(StringRef name) const { return findAttr(name) != nullptr; }
  int64_t intAttr(StringRef name, int64_t fallback) const;
  float floatAttr(StringRef name, float fallback) const;
  std::string stringAttr(StringRef name, StringRef fallback) const;
  std::optional<std::vector<int64_t>> intsAttr(StringRef name) const;
  std::vector<std::string> stringsAttr(StringRef name) const;
  const onnx::AttributeProto *findAttr(StringRef name) const;

  /// Normalizes a possibly negative axis against `rank`, reporting an error
  /// naming `what` when it is out of range.
  FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                   StringRef what = "axis");

  /// Reports an error located at the node; the message is prefixed with the
  /// node's name and operator.
  InFlightDiagnostic emitError();

  /// Builds ops at the node's location with inferred result types (for
  /// operators imported as compositions of cleave ops).
  TensorBuilder tensors() { return TensorBuilder(builder(), loc_); }

  /// Shorthand for creating an op at the node's location.
  template <typename OpTy, typename... Args>
  OpTy create(Args &&...args) {
    return OpTy::create(builder(), loc_, std::forward<Args>(args)...);
  }

private:
  GraphImporter &graph_;
  const onnx::NodeProto &node_;
  std::string name_;
  Location loc_;
};

/// Imports a node whose inputs map one to one onto the operands of `OpTy`
/// and whose single result has the type ONNX inferred.
template <typename OpTy>
LogicalResult importOneToOne(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  SmallVector<Value> operands;
  for (unsigned i = 0; i < node.numInputs(); ++i)
    operands.push_back(node.input(i));
  node.setOutput(0, node.create<OpTy>(TypeRange{*type}, operands)->getResult(0));
  return success();
}

/// The import function of one ONNX operator.
using OpImportFn = LogicalResult (*)(NodeImporter &);
using OpImportTable = llvm::StringMap<OpImportFn>;

/// Operators of the ONNX training domain are keyed `training.<op_type>`.
constexpr const char *kTrainingDomainPrefix = "ai.onnx.preview.training.";

/// The operator names in `table`, sorted, training ops with their domain.
std::vector<std::string> supportedOnnxOperatorsOf(const OpImportTable &table);

/// Each op family registers its operators (one file per family).
void registerElementwiseImporters(OpImportTable &table);
void registerLinalgImporters(OpImportTable &table);
void registerNormalizationImporters(OpImportTable &table);
void registerTensorImporters(OpImportTable &table);
void registerConvolutionImporters(OpImportTable &table);
void registerLossImporters(OpImportTable &table);
void registerTrainingImporters(OpImportTable &table);
void registerActivationImporters(OpImportTable &table);
void registerSpatialImporters(OpImportTable &table);
void registerEinsumImporters(OpImportTable &table);

} // namespace mlir::cleave

#endif // CLEAVE_FRONTEND_NODEIMPORTER_H
