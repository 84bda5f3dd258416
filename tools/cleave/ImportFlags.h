//===- ImportFlags.h - the model-reading flags of the driver ----*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_IMPORTFLAGS_H
#define CLEAVE_TOOLS_CLEAVE_IMPORTFLAGS_H

#include "frontend/OnnxImporter.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"

namespace cleave::driver {

namespace cl = llvm::cl;

/// The model-reading flags, shared by every command that imports a model.
struct ImportFlags {
  explicit ImportFlags(cl::SubCommand &sub)
      : model(cl::Positional, cl::desc("<model.onnx>"), cl::sub(sub)),
        inputShapes("input-shape",
                    cl::desc("Bind a dynamic dim (batch=64) or a whole input "
                             "shape (x=64x784); repeatable"),
                    cl::value_desc("NAME=DIMS"), cl::sub(sub)),
        batchSymbol(
            "batch-symbol",
            cl::desc("The dynamic dim that is every data input's batch "
                     "(default: the one named like 'batch', else dim 0)"),
            cl::value_desc("NAME"), cl::sub(sub)),
        loss("loss",
             cl::desc("Graph output to train on (default: the single scalar "
                      "output)"),
             cl::value_desc("NAME"), cl::sub(sub)),
        inference("inference",
                  cl::desc("Import a model without a training loss"),
                  cl::sub(sub)) {}

  /// Converts the flags, reporting malformed --input-shape values.
  bool toOptions(mlir::cleave::ImportOptions &options) const {
    for (const std::string &text : inputShapes) {
      auto binding = frontend::parseShapeBinding(text);
      if (!binding) {
        llvm::errs() << "cleave: error: " << llvm::toString(binding.takeError())
                     << "\n";
        return false;
      }
      options.shapeBindings.push_back(std::move(*binding));
    }
    if (loss.getNumOccurrences() && loss.empty()) {
      llvm::errs() << "cleave: error: --loss needs the name of a graph "
                      "output\n";
      return false;
    }
    if (batchSymbol.getNumOccurrences() && batchSymbol.empty()) {
      llvm::errs() << "cleave: error: --batch-symbol needs the name of a "
                      "dynamic dim\n";
      return false;
    }
    options.batchSymbol = batchSymbol;
    options.loss = loss;
    options.inference = inference;
    return true;
  }

  /// Reports (and returns true) when `output` names the model file itself,
  /// which writing the output would destroy.
  bool outputIsModel(llvm::StringRef output, llvm::StringRef command) const {
    if (output.empty() || output == "-" ||
        !llvm::sys::fs::equivalent(model.getValue(), output))
      return false;
    llvm::errs() << "cleave " << command << ": error: the output '" << output
                 << "' is the model '" << model.getValue()
                 << "' itself; writing it would destroy the model: give "
                    "another name with -o\n";
    return true;
  }

  cl::opt<std::string> model;
  cl::list<std::string> inputShapes;
  cl::opt<std::string> batchSymbol;
  cl::opt<std::string> loss;
  cl::opt<bool> inference;
};

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_IMPORTFLAGS_H
