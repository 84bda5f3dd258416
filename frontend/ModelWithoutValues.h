//===- ModelWithoutValues.h - an ONNX model less some tensors' data -*- C++ -*-===//
//
// Part of the Cleave frontend. A compiled program embeds the initial value
// of every parameter and state, and the original model for --export-onnx,
// which replaces exactly those initializers with the trained values: the
// model's copy of them is dead weight (half of a large model's binary).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_MODELWITHOUTVALUES_H
#define CLEAVE_FRONTEND_MODELWITHOUTVALUES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>

namespace mlir::cleave {

/// `serializedModel` with the data of the initializers named in `names`
/// (in the graph and in the training algorithms' graphs) removed, their
/// names, element types and dims kept; nullopt if it does not parse.
std::optional<std::string>
modelWithoutValues(llvm::StringRef serializedModel,
                   const llvm::StringSet<> &names);

} // namespace mlir::cleave

#endif // CLEAVE_FRONTEND_MODELWITHOUTVALUES_H
