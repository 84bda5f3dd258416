//===- GuardedSchemaRegistry.h - ONNX schemas safe on bad input -*- C++ -*-===//
//
// ONNX 1.12's shape inference divides by a zero stride and indexes past the
// input's dims when a convolution weight has more dims than its input,
// crashing the process on such a model. This registry hands out the
// affected schemas with a check in front of their inference function, so
// these models fail shape inference with a message instead.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_GUARDEDSCHEMAREGISTRY_H
#define CLEAVE_FRONTEND_GUARDEDSCHEMAREGISTRY_H

#include "onnx/defs/schema.h"

namespace cleave::frontend {

/// ONNX's registry, with convolution and pooling schemas whose inference
/// first rejects non-positive strides and weights of another rank than the
/// input. Thread-safe.
const onnx::ISchemaRegistry *guardedSchemaRegistry();

} // namespace cleave::frontend

#endif // CLEAVE_FRONTEND_GUARDEDSCHEMAREGISTRY_H
