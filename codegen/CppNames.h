//===- CppNames.h - the identifiers of one generated source -----*- C++ -*-===//

#ifndef CLEAVE_CODEGEN_CPPNAMES_H
#define CLEAVE_CODEGEN_CPPNAMES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <string>

namespace mlir::cleave {

/// Hands out C identifiers made from ONNX names, each once, never one the
/// generated code already uses (runtime functions and types, C++ keywords).
class CppNames {
public:
  CppNames();

  /// cppIdentifier(base), suffixed `_1`, `_2`, ... when taken.
  std::string unique(llvm::StringRef base);

private:
  llvm::StringSet<> used;
  /// Per base, the suffix to try first.
  llvm::StringMap<int> nextSuffix;
};

} // namespace mlir::cleave

#endif // CLEAVE_CODEGEN_CPPNAMES_H
