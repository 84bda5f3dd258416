//===- cleave-opt.cpp - cleave's mlir-opt ---------------------------------===//
//
// Runs cleave passes on IR files; the workhorse of the lit tests.
//
//===----------------------------------------------------------------------===//

#include "dialects/cleave/CleaveDialect.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::cleave::registerCleavePasses();
  mlir::cleave::registerCleavePipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::cleave::CleaveDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Cleave optimizer driver\n", registry));
}
