//===- Commands.h - the cleave driver's subcommands -------------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_COMMANDS_H
#define CLEAVE_TOOLS_CLEAVE_COMMANDS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"

namespace cleave::driver {

/// A subcommand: its options are registered on construction (bound to its
/// llvm::cl::SubCommand) and `run` executes it, returning the exit code.
class Command {
public:
  virtual ~Command() = default;
  virtual llvm::cl::SubCommand &subCommand() = 0;
  virtual int run(mlir::MLIRContext &context) = 0;
};

/// `cleave import MODEL`: prints the imported IR.
std::unique_ptr<Command> makeImportCommand();
/// `cleave compile MODEL -o train`: builds a training program.
std::unique_ptr<Command> makeCompileCommand();
/// `cleave annotate MODEL --shard ... -o OUT`: stores sharding hints in the
/// model.
std::unique_ptr<Command> makeAnnotateCommand();

/// `cleave plan MODEL --cluster C --nodes N --global-batch B`: ranks the
/// parallel layouts of a model on a cluster.
std::unique_ptr<Command> makePlanCommand();
/// `cleave calibrate -o FILE`: measures this machine for the cpu target.
std::unique_ptr<Command> makeCalibrateCommand();
/// `cleave report --plan FILE [--log FILE] [--trace FILE] -o FILE`: draws
/// a plan and a run as one HTML page.
std::unique_ptr<Command> makeReportCommand();

/// Installs a diagnostic handler that prints `FILE: error: message` (plus
/// notes) to stderr, and returns whether any error was reported.
class DiagnosticPrinter {
public:
  explicit DiagnosticPrinter(mlir::MLIRContext &context);
  ~DiagnosticPrinter();

private:
  mlir::MLIRContext &context_;
  mlir::DiagnosticEngine::HandlerID id_;
};

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_COMMANDS_H
