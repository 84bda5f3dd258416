//===- InitializationGraph.h - training_info initialization -----*- C++ -*-===//
//
// `cleave compile` computes a model's training_info initialization graph
// once, at compile time, with a program of its own (the graph compiled by
// this cleave in inference mode and run on the host); the loader then puts
// the outputs into the initializers they are bound to.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_INITIALIZATIONGRAPH_H
#define CLEAVE_TOOLS_CLEAVE_INITIALIZATIONGRAPH_H

#include "frontend/OnnxModelLoader.h"

namespace cleave::driver {

/// Compiles and runs `model` (an initialization graph as a model: no
/// inputs) and returns its outputs. Errors say what failed, with the nested
/// compiler's or program's own message.
llvm::Expected<frontend::TensorsByName>
runInitializationGraph(const onnx::ModelProto &model);

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_INITIALIZATIONGRAPH_H
