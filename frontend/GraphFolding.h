//===- GraphFolding.h - shape arithmetic folded before import ---*- C++ -*-===//
//
// With every dimension bound, the shape computations torch exports (Shape,
// Gather, Concat, ... feeding Reshape, Expand, Resize) are constants. The
// loader alternates these steps with ONNX's shape inference until nothing
// changes: fold what is computable into initializers, and give the nodes
// ONNX 1.12 leaves without dims (Einsum) their static output shapes.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_GRAPHFOLDING_H
#define CLEAVE_FRONTEND_GRAPHFOLDING_H

#include "onnx/onnx_pb.h"

#include <set>
#include <string>

namespace cleave::frontend {

/// Evaluates shape arithmetic (Shape, Size, Constant and the integer ops,
/// and the data movement of small float constants, fed by them) and
/// replaces the nodes by initializers, adding their names to `folded`.
/// Returns whether anything was folded.
bool foldShapeArithmetic(onnx::GraphProto &graph,
                         std::set<std::string> &folded);

/// Gives the outputs of the nodes ONNX's shape inference leaves without
/// dims (Einsum, in ONNX 1.12) their static shapes, so that inference can
/// carry on past them. Returns whether any shape was added.
bool completeShapes(onnx::GraphProto &graph);

} // namespace cleave::frontend

#endif // CLEAVE_FRONTEND_GRAPHFOLDING_H
