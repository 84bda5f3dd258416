//===- Export.h - writing the trained model as ONNX -------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXPORT_H
#define CLEAVE_RUNTIME_EXPORT_H

#include "runtime/Program.h"

#include <string>

namespace cleave::rt {

/// Writes the model the program was compiled from to `path`, with every
/// parameter and state initializer replaced by its current value. Written
/// to a temporary name and renamed, so `path` is never half-written.
bool exportOnnx(const std::string &path, const Program &program,
                void *const *tensors, std::string &error);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_EXPORT_H
