//===- cleave-translate.cpp - cleave's mlir-translate ---------------------===//
//
// Emits the program of a scheduled training step (`cleave compile
// --compile-to=stages` output, or IR written by hand) as C++ or CUDA C++,
// so that emission is tested from .mlir files, one op family at a time.
//
//===----------------------------------------------------------------------===//

#include "codegen/ProgramEmitter.h"
#include "dialects/cleave/CleaveDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/Path.h"

using namespace mlir;

/// Emits the module's one function for `target`. The program names the
/// model the module was imported from (cleave.source), else "model".
static LogicalResult emit(ModuleOp module, raw_ostream &os,
                          cleave::Target target) {
  auto funcs = module.getOps<func::FuncOp>();
  if (!llvm::hasSingleElement(funcs))
    return module.emitError() << "expected one function (the training step), "
                                 "found "
                              << llvm::range_size(funcs);
  cleave::EmitOptions options;
  options.target = target;
  options.modelName = "model";
  if (auto source = module->getAttrOfType<StringAttr>(
          cleave::CleaveDialect::kSourceAttrName))
    options.modelName = llvm::sys::path::filename(source.getValue()).str();
  FailureOr<cleave::EmittedProgram> program =
      cleave::emitProgram(*funcs.begin(), options);
  if (failed(program))
    return failure();
  os << program->source;
  return success();
}

int main(int argc, char **argv) {
  auto dialects = [](DialectRegistry &registry) {
    registry.insert<cleave::CleaveDialect, func::FuncDialect>();
  };
  TranslateFromMLIRRegistration toCpp(
      "cleave-to-cpp", "the cpu target's C++ program",
      [](ModuleOp module, raw_ostream &os) {
        return emit(module, os, cleave::Target::Cpu);
      },
      dialects);
  TranslateFromMLIRRegistration toCuda(
      "cleave-to-cuda", "the cuda target's CUDA C++ program",
      [](ModuleOp module, raw_ostream &os) {
        return emit(module, os, cleave::Target::Cuda);
      },
      dialects);
  return failed(mlirTranslateMain(argc, argv, "Cleave translation driver"));
}
