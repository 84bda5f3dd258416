//===- cleave.cpp - the cleave compiler driver ----------------------------===//
//
// `cleave <command> [options]`. Commands: import, compile, annotate, plan,
// calibrate, report.
//
//===----------------------------------------------------------------------===//

#include "tools/cleave/Commands.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>

#ifndef CLEAVE_VERSION
#define CLEAVE_VERSION "unknown"
#endif

namespace cleave::driver {

/// The file a location points into and the ONNX node it names, if any.
static std::pair<std::string, std::string> fileAndNodeOf(mlir::Location loc) {
  std::string file, node;
  loc->walk([&](mlir::Location child) {
    if (auto nameLoc = llvm::dyn_cast<mlir::NameLoc>(child); nameLoc && node.empty())
      node = nameLoc.getName().str();
    if (auto fileLoc = llvm::dyn_cast<mlir::FileLineColLoc>(child))
      file = fileLoc.getFilename().str();
    return mlir::WalkResult::advance();
  });
  return {file, node};
}

static void printDiagnostic(const mlir::Diagnostic &diag) {
  auto [file, node] = fileAndNodeOf(diag.getLocation());
  std::string message = diag.str();
  llvm::raw_ostream &os = llvm::errs();
  if (!file.empty())
    os << file << ": ";
  switch (diag.getSeverity()) {
  case mlir::DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case mlir::DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  case mlir::DiagnosticSeverity::Note:
    os << "note: ";
    break;
  case mlir::DiagnosticSeverity::Remark:
    os << "remark: ";
    break;
  }
  os << message;
  // Verifier messages do not know the ONNX node; the importer's do.
  if (!node.empty() && message.find("'" + node + "'") == std::string::npos)
    os << " (ONNX node '" << node << "')";
  os << "\n";
  for (const mlir::Diagnostic &note : diag.getNotes())
    printDiagnostic(note);
}

DiagnosticPrinter::DiagnosticPrinter(mlir::MLIRContext &context)
    : context_(context) {
  id_ = context.getDiagEngine().registerHandler([](mlir::Diagnostic &diag) {
    printDiagnostic(diag);
    return mlir::success();
  });
}

DiagnosticPrinter::~DiagnosticPrinter() {
  context_.getDiagEngine().eraseHandler(id_);
}

} // namespace cleave::driver

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Past a file-size limit (ulimit -f) a write must fail with EFBIG and be
  // reported with the file's name, not kill the process.
  std::signal(SIGXFSZ, SIG_IGN);
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "cleave " << CLEAVE_VERSION << " (MLIR/LLVM " << LLVM_VERSION_STRING
       << ", ONNX opsets 13-17)\n";
  });
  std::vector<std::unique_ptr<cleave::driver::Command>> commands;
  commands.push_back(cleave::driver::makeImportCommand());
  commands.push_back(cleave::driver::makeCompileCommand());
  commands.push_back(cleave::driver::makeAnnotateCommand());
  commands.push_back(cleave::driver::makePlanCommand());
  commands.push_back(cleave::driver::makeCalibrateCommand());
  commands.push_back(cleave::driver::makeReportCommand());
  // LLVM's and MLIR's own options (hundreds, for backends cleave does not
  // use) stay accepted but out of --help.
  for (auto &entry :
       llvm::cl::getRegisteredOptions(llvm::cl::SubCommand::getTopLevel()))
    if (!llvm::is_contained({"help", "help-list", "version"}, entry.first))
      entry.second->setHiddenFlag(llvm::cl::ReallyHidden);
  if (!llvm::cl::ParseCommandLineOptions(
          argc, argv,
          "Cleave: compiles an ONNX training graph into a distributed "
          "training program\n",
          &llvm::errs()))
    return 1;
  mlir::MLIRContext context;
  // Errors name the ONNX node; a dump of the generic op helps nobody.
  context.printOpOnDiagnostic(false);
  cleave::driver::DiagnosticPrinter printer(context);
  for (auto &command : commands)
    if (command->subCommand())
      return command->run(context);
  llvm::errs() << "cleave: no command given; run 'cleave --help' for the "
                  "list of commands\n";
  return 1;
}
