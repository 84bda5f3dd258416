//===- ImportCommand.cpp - `cleave import` --------------------------------===//

#include "tools/cleave/Commands.h"
#include "tools/cleave/ImportFlags.h"
#include "tools/cleave/OutputFile.h"

#include "frontend/OnnxImporter.h"

#include "mlir/IR/BuiltinOps.h"

namespace cleave::driver {

namespace {

namespace cl = llvm::cl;

class ImportCommand : public Command {
public:
  ImportCommand()
      : sub_("import", "Import an ONNX model and print it in the cleave "
                       "dialect"),
        flags_(sub_),
        output_("o", cl::desc("Output file (default: stdout)"),
                cl::value_desc("file"), cl::init("-"), cl::sub(sub_)),
        printLocations_("print-locations",
                        cl::desc("Print each op's location (its ONNX node "
                                 "name and the model file)"),
                        cl::sub(sub_)),
        listOps_("list-supported-ops",
                 cl::desc("Print the ONNX operators cleave imports and exit"),
                 cl::sub(sub_)) {}

  cl::SubCommand &subCommand() override { return sub_; }

  int run(mlir::MLIRContext &context) override {
    if (listOps_) {
      for (const std::string &op : mlir::cleave::supportedOnnxOperators())
        llvm::outs() << op << "\n";
      return 0;
    }
    if (flags_.model.empty()) {
      llvm::errs() << "cleave import: error: no model given; usage: cleave "
                      "import MODEL.onnx [options]\n";
      return 1;
    }
    if (flags_.outputIsModel(output_, "import"))
      return 1;
    mlir::cleave::ImportOptions options;
    if (!flags_.toOptions(options))
      return 1;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::cleave::importOnnxModel(context, flags_.model, options);
    if (!module)
      return 1;
    mlir::OpPrintingFlags printing;
    if (printLocations_)
      printing.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false)
          .useLocalScope();
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, printing);
    os << "\n";
    return writeOutputFile(output_, text, "import") ? 0 : 1;
  }

private:
  cl::SubCommand sub_;
  ImportFlags flags_;
  cl::opt<std::string> output_;
  cl::opt<bool> printLocations_;
  cl::opt<bool> listOps_;
};

} // namespace

std::unique_ptr<Command> makeImportCommand() {
  return std::make_unique<ImportCommand>();
}

} // namespace cleave::driver
