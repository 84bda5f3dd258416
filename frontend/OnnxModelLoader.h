//===- OnnxModelLoader.h - read and prepare an ONNX model -------*- C++ -*-===//
//
// Turns a file into a ModelProto the importer can translate node by node:
// parsed (binary or ONNX text), external data loaded, checked with ONNX's own
// checker, dynamic dimensions bound, shapes inferred by ONNX shape inference
// and shape arithmetic folded into initializers. Everything here is ONNX and
// LLVM Support; no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_ONNXMODELLOADER_H
#define CLEAVE_FRONTEND_ONNXMODELLOADER_H

#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace cleave::frontend {

/// `--input-shape NAME=DIMS`: NAME is a symbolic dimension (`batch=64`) or a
/// graph input whose whole shape is given (`x=64x784`).
struct ShapeBinding {
  std::string name;
  std::vector<int64_t> dims;
};

/// Parses `NAME=D0xD1x...` (`,` also separates dims).
llvm::Expected<ShapeBinding> parseShapeBinding(llvm::StringRef text);

/// The ONNX opsets the importer understands.
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 17;
/// Older opsets down to this one are upgraded with ONNX's version converter.
constexpr int64_t kMinConvertibleOpset = 7;
constexpr const char *kTrainingDomain = "ai.onnx.preview.training";

/// A training_info initialization graph's outputs by name.
using TensorsByName = std::map<std::string, onnx::TensorProto>;
/// Runs an initialization graph, given as a model of its own (no inputs).
using InitializationRunner =
    std::function<llvm::Expected<TensorsByName>(const onnx::ModelProto &)>;

struct LoadOptions {
  std::vector<ShapeBinding> shapeBindings;
  /// `--batch-symbol NAME`: the dynamic dim that is every data input's
  /// batch; empty: findBatchDims's rule (frontend/BatchDims.h).
  std::string batchSymbol;
  /// Computes training_info initialization graphs, whose outputs then
  /// replace the initializers they are bound to; without a runner (import,
  /// annotate) such graphs are left in the model, unrun.
  InitializationRunner runInitialization;
};

/// A model ready for import. `algorithms[i]` is training_info[i]'s algorithm
/// combined with the inference graph as the ONNX spec defines it (main graph
/// first), with inferred value_info.
struct LoadedModel {
  /// The model as the file holds it, with external data inlined: what a
  /// trained program exports with new initializer values.
  onnx::ModelProto original;
  onnx::ModelProto model;
  std::vector<onnx::GraphProto> algorithms;
  int64_t opset = 0;
  /// Initializers created from Constant nodes and folded shape arithmetic:
  /// constants, never trainable parameters.
  std::set<std::string> foldedConstants;
  /// The batch dim of each data input of the model graph, by name.
  std::map<std::string, int64_t> batchDims;
};

/// Reads, validates and prepares the model at `path`. Errors name the file,
/// tensor or node at fault and how to fix it.
llvm::Expected<LoadedModel> loadOnnxModel(llvm::StringRef path,
                                          const LoadOptions &options);

/// The same for a model held in memory, named in messages by the buffer's
/// identifier. It has no directory, so external data is refused.
llvm::Expected<LoadedModel> loadOnnxModel(llvm::MemoryBufferRef buffer,
                                          const LoadOptions &options);

} // namespace cleave::frontend

#endif // CLEAVE_FRONTEND_ONNXMODELLOADER_H
