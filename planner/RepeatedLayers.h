//===- RepeatedLayers.h - a model's run of identical layers -----*- C++ -*-===//
//
// Models people train are mostly a run of identical layers (a GPT's
// decoder blocks, a ViT's encoder blocks) between a few ops before and
// after. This finds that run in an imported model, structurally: a
// sequence of ops repeated back to back, each copy reading its own
// parameters (of the same types), the values of its own copy, the copy
// before it, or values every copy shares; and cuts the model down to
// fewer copies. The planner predicts a deep model's layouts from the same
// layouts of the model with a few of its layers (LayerRolledStep.h), as
// Megatron-LM's and Alpa's cost models reason per layer.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_REPEATEDLAYERS_H
#define CLEAVE_PLANNER_REPEATEDLAYERS_H

#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace cleave::planner {

/// A run of identical layers in a model's forward function: `count`
/// copies of `period` ops from op index `start` (in the function's body),
/// each copy's first op reading what the copy before it hands on.
struct RepeatedLayers {
  int64_t start = 0, period = 0, count = 0;
  /// The ONNX node each layer starts with (the location name of its first
  /// op that computes something), layer by layer: a pipeline cut before
  /// layer i names startNames[i].
  std::vector<std::string> startNames;
};

/// The longest run of identical layers in `func` (at least `minimum`
/// copies), with the boundary between copies where the fewest values
/// cross; nothing when the model has none.
std::optional<RepeatedLayers> findRepeatedLayers(mlir::func::FuncOp func,
                                                 int64_t minimum = 4);

/// The function of `module` a model's layers are looked for in: the one
/// with the most ops (the main graph; subgraphs are smaller).
mlir::func::FuncOp mainGraph(mlir::ModuleOp module);

/// Cuts `func`'s run `layers` down to its first `keep` copies: the ops
/// after the run read the last kept copy instead of the last one, and the
/// dropped copies' parameters leave the function's arguments.
void keepLayers(mlir::func::FuncOp func, const RepeatedLayers &layers,
                int64_t keep);

/// The fewest identical layers a model must have for a search to predict
/// its layouts from a few of them (their templates hold up to 6).
inline constexpr int64_t kLayerRollingMinimum = 16;

/// A copy of `model` (imported, before its training step) cut down to
/// `keep` of its `count` identical layers (0: kept whole), and the name of
/// its training step built with `training` (distributed). Fails where the
/// copy's layers are not the `count` found before (another batch changed
/// them).
llvm::Expected<std::pair<mlir::OwningOpRef<mlir::ModuleOp>, std::string>>
stepWithLayers(mlir::ModuleOp model, int64_t count, int64_t keep,
               mlir::cleave::TrainingOptions training);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_REPEATEDLAYERS_H
