//===- PlanCommandModel.h - a model for planning, without its data -*- C++
//-*-===//
//
// `cleave plan` never reads weight data: a float initializer stored as
// external data becomes a graph input of its type and shape for import
// (ONNX's checker and shape inference see a well-formed graph; the data
// file may be absent or a sparse placeholder), and a parameter again once
// imported. The batch dimension of the data inputs (frontend/BatchDims.h)
// is bound to --global-batch.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_PLANCOMMANDMODEL_H
#define CLEAVE_TOOLS_CLEAVE_PLANCOMMANDMODEL_H

#include "frontend/OnnxModelLoader.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <set>
#include <string>
#include <vector>

namespace cleave::driver {

struct PlanningModel {
  /// The model to import from memory (binary protobuf or the file's text).
  std::string bytes;
  /// Initializers whose data was not read (graph inputs in `bytes`).
  std::set<std::string> shapeOnly;
  /// Bindings of the data inputs' batch dims to the global batch.
  std::vector<frontend::ShapeBinding> batchBindings;
};

/// Reads the model at `path` for planning with `globalBatch` samples per
/// step; `bindings` are the user's --input-shape values, `batchSymbol`
/// their --batch-symbol (frontend/BatchDims.h).
llvm::Expected<PlanningModel>
readPlanningModel(llvm::StringRef path, int64_t globalBatch,
                  const std::vector<frontend::ShapeBinding> &bindings,
                  llvm::StringRef batchSymbol);

/// Turns the arguments imported from `shapeOnly` initializers back into
/// parameters.
void restoreShapeOnlyParameters(mlir::ModuleOp module,
                                const std::set<std::string> &shapeOnly);

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_PLANCOMMANDMODEL_H
