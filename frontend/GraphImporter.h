//===- GraphImporter.h - one ONNX graph to one func -------------*- C++ -*-===//

#ifndef CLEAVE_FRONTEND_GRAPHIMPORTER_H
#define CLEAVE_FRONTEND_GRAPHIMPORTER_H

#include "frontend/NodeImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <set>

namespace mlir::cleave {

/// How a graph's initializers become function arguments.
enum class InitializerRole {
  /// Not an argument: imported as `cleave.constant` where used.
  Constant,
  /// A trainable parameter (`cleave.param`).
  Param,
  /// A training state of an algorithm graph (`cleave.state`).
  State,
};

/// Translates one ONNX graph (with complete value_info) into a func.func.
class GraphImporter {
public:
  GraphImporter(ModuleOp module, StringRef modelPath, int64_t opset,
                StringRef modelFunction, const OpImportTable &table);

  /// Builds `@name` from `graph`. `roleOf` decides each initializer's role.
  /// Returns the function, or failure after emitting an error.
  FailureOr<func::FuncOp>
  importGraph(const onnx::GraphProto &graph, StringRef name,
              llvm::function_ref<InitializerRole(const onnx::TensorProto &)>
                  roleOf);

  /// The batch dim of each data input (frontend/BatchDims.h); an input
  /// whose batch is not dim 0 becomes a batch-first argument, transposed
  /// back to the graph's layout before any node reads it.
  void setBatchDims(std::map<std::string, int64_t> dims) {
    batchDims_ = std::move(dims);
  }

  /// The bytes of every initializer that became an argument, by name.
  llvm::StringMap<std::string> &initialValues() { return initialValues_; }

  // Services for NodeImporter.
  OpBuilder &builder() { return builder_; }
  int64_t opset() const { return opset_; }
  StringRef modelFunction() const { return modelFunction_; }
  Value lookup(const std::string &name, Location loc);
  const onnx::TensorProto *constant(const std::string &name) const;
  FailureOr<RankedTensorType> typeOf(const std::string &name, Location loc,
                                     StringRef role);
  bool isUsed(const std::string &name) const { return used_.count(name) > 0; }
  void bind(const std::string &name, Value value) { values_[name] = value; }
  Location fileLoc() const { return fileLoc_; }

  /// Converts an ONNX element type; null when cleave does not support it.
  Type elementType(int32_t onnxType);
  /// Checks that cleave supports the tensor's element type and that it
  /// holds exactly the data its shape needs; reports at `loc` otherwise.
  LogicalResult checkTensor(const onnx::TensorProto &tensor, Location loc);
  /// The little-endian bytes of a tensor, from raw_data or the typed
  /// fields; reports unsupported types or inconsistent sizes at `loc`.
  FailureOr<std::string> tensorBytes(const onnx::TensorProto &tensor,
                                     Location loc);
  /// Converts a tensor constant, reporting unsupported types at `loc`.
  FailureOr<DenseElementsAttr> toAttr(const onnx::TensorProto &tensor,
                                      Location loc);

private:
  LogicalResult importNode(const onnx::NodeProto &node, size_t index);

  OpBuilder builder_;
  ModuleOp module_;
  std::string modelPath_;
  Location fileLoc_;
  int64_t opset_;
  std::string modelFunction_;
  const OpImportTable &table_;

  std::map<std::string, Value> values_;
  std::map<std::string, const onnx::TensorProto *> constants_;
  std::map<std::string, const onnx::TypeProto *> types_;
  std::set<std::string> used_;
  std::map<std::string, int64_t> batchDims_;
  llvm::StringMap<std::string> initialValues_;
};

} // namespace mlir::cleave

#endif // CLEAVE_FRONTEND_GRAPHIMPORTER_H
