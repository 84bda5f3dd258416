//===- OnnxImporter.h - ONNX model to the cleave dialect --------*- C++ -*-===//

#ifndef CLEAVE_FRONTEND_ONNXIMPORTER_H
#define CLEAVE_FRONTEND_ONNXIMPORTER_H

#include "frontend/OnnxModelLoader.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <string>
#include <vector>

namespace mlir::cleave {

struct ImportOptions {
  /// `--input-shape` bindings of dynamic dimensions.
  std::vector<::cleave::frontend::ShapeBinding> shapeBindings;
  /// `--batch-symbol NAME` (LoadOptions::batchSymbol).
  std::string batchSymbol;
  /// `--loss NAME`; empty selects the single scalar graph output.
  std::string loss;
  /// Import a model without a training loss (inference only).
  bool inference = false;
  /// Computes training_info initialization graphs (LoadOptions).
  ::cleave::frontend::InitializationRunner runInitialization;
};

/// What code generation needs of the model besides the IR.
struct ImportArtifacts {
  /// The little-endian bytes of every initializer that became a function
  /// argument (parameters and states), by name.
  llvm::StringMap<std::string> initialValues;
  /// The model as its file holds it (external data inlined), serialized.
  std::string originalModel;
  /// The model's metadata_props (where `cleave annotate` stores hints).
  llvm::StringMap<std::string> metadata;
};

/// Imports the ONNX model at `path` (binary protobuf or ONNX text) into a
/// module holding one func per graph: the inference graph, and one per
/// training_info algorithm. Returns null after emitting diagnostics that name
/// the file, node or tensor at fault.
/// `artifacts`, when given, receives the initial values and the model.
OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context, StringRef path,
                                      const ImportOptions &options,
                                      ImportArtifacts *artifacts = nullptr);

/// The same for a model held in memory, named by the buffer's identifier
/// (external data is refused: there is no directory to read it from).
OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context,
                                      llvm::MemoryBufferRef model,
                                      const ImportOptions &options,
                                      ImportArtifacts *artifacts = nullptr);

/// The ONNX operator types the importer supports, sorted.
std::vector<std::string> supportedOnnxOperators();

} // namespace mlir::cleave

#endif // CLEAVE_FRONTEND_ONNXIMPORTER_H
