//===- ImporterFuzzer.cpp - libFuzzer target for the ONNX importer --------===//
//
// Feeds arbitrary bytes to the whole import of `cleave import`: parsing
// (binary ModelProto, or ONNX text for inputs that start with '<'), ONNX's
// checker and shape inference, cleave's importer and the MLIR verifier. The
// model is given in memory, so nothing is read from disk (external data is
// refused). Beyond the sanitizers' findings, it checks that a refusal comes
// with an error, that an import succeeds only without one, and that an
// imported module prints, parses back and prints the same. Built and run by
// scripts/fuzz.sh --target importer.
//
//===----------------------------------------------------------------------===//

#include "frontend/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace {

std::string print(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// Imports `bytes` once; returns whether the import succeeded.
bool importOnce(llvm::StringRef bytes, bool inference) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  unsigned errors = 0;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    errors += d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });
  mlir::cleave::ImportOptions options;
  options.inference = inference;
  mlir::cleave::ImportArtifacts artifacts;
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::cleave::importOnnxModel(
      context, llvm::MemoryBufferRef(bytes, "fuzz.onnx"), options, &artifacts);
  if (!module) {
    if (errors == 0)
      __builtin_trap(); // refused without saying why
    return false;
  }
  if (errors != 0)
    __builtin_trap(); // an error, yet a module
  // What cleave-opt would read back.
  std::string text = print(*module);
  mlir::OwningOpRef<mlir::ModuleOp> again =
      mlir::parseSourceString<mlir::ModuleOp>(text,
                                              mlir::ParserConfig(&context));
  if (!again || errors != 0 || print(*again) != text)
    __builtin_trap();
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  // Training import differs from inference only in choosing the loss, so a
  // model refused for inference is refused for training too.
  if (importOnce(bytes, /*inference=*/true))
    importOnce(bytes, /*inference=*/false);
  return 0;
}
