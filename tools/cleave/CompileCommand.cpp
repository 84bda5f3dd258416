//===- CompileCommand.cpp - `cleave compile` ------------------------------===//
//
// Imports a model, builds its training step (autodiff, optimizer), emits the
// cpu target's C++ and compiles it into a training binary.
//
//===----------------------------------------------------------------------===//

#include "tools/cleave/AutoLayout.h"
#include "tools/cleave/Commands.h"
#include "tools/cleave/DistributionFlags.h"
#include "tools/cleave/HintSources.h"
#include "tools/cleave/ImportFlags.h"
#include "tools/cleave/InitializationGraph.h"
#include "tools/cleave/OutputFile.h"
#include "tools/cleave/TargetFlags.h"
#include "tools/cleave/TrainingFlags.h"
#include "tools/cleave/Toolchain.h"

#include "codegen/ProgramEmitter.h"
#include "frontend/ModelWithoutValues.h"
#include "dialects/cleave/CleaveOps.h"
#include "passes/CommunicationPlan.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace cleave::driver {

namespace {

using Phase = mlir::cleave::CompilePhase;
enum class Emit { Mlir, Source, Binary };
class CompileCommand : public Command {
public:
  CompileCommand()
      : sub_("compile", "Compile an ONNX model into a training program"),
        import_(sub_), training_(sub_), distribution_(sub_), auto_(sub_),
        target_(sub_),
        output_("o", cl::desc("Output file (default: train)"),
                cl::value_desc("file"), cl::init("train"), cl::sub(sub_)),
        compileTo_(
            "compile-to",
            cl::desc("Stop after a phase and write its IR (its C++ for emit)"),
            cl::values(
                clEnumValN(Phase::Import, "import", "the imported model"),
                clEnumValN(Phase::Train, "train",
                           "the training step (gradients, optimizer)"),
                clEnumValN(Phase::Distribute, "distribute",
                           "a sharding on every value"),
                clEnumValN(Phase::Partition, "partition",
                           "the per-rank program with its collectives"),
                clEnumValN(Phase::Stages, "stages",
                           "micro-batches unrolled, pipeline stages assigned"),
                clEnumValN(Phase::Emit, "emit", "the generated C++ source"),
                clEnumValN(Phase::Binary, "binary",
                           "the training program (default)")),
            cl::init(Phase::Binary), cl::sub(sub_)),
        emit_(
            "emit",
            cl::desc("Shorthand: mlir for --compile-to=stages, source for "
                     "--compile-to=emit"),
            cl::values(
                clEnumValN(Emit::Mlir, "mlir", "the training step IR"),
                clEnumValN(Emit::Source, "source", "the generated C++ source"),
                clEnumValN(Emit::Binary, "binary", "the training program")),
            cl::init(Emit::Binary), cl::sub(sub_)),
        keepSource_("keep-source",
                    cl::desc("Keep the generated source next to the binary "
                             "(<output>.cpp, or <output>.cu for --target "
                             "cuda)"),
                    cl::sub(sub_)) {}

  cl::SubCommand &subCommand() override { return sub_; }
  int run(mlir::MLIRContext &context) override;

private:
  /// The user's sharding hints, weakest first: the model's metadata,
  /// --shard-file, --shard. Returns an exit code (0: parsed).
  int userHints(const mlir::cleave::ImportArtifacts &artifacts,
                std::vector<mlir::cleave::ShardingHint> &hints);
  /// Checks that there is a model and an output file name.
  llvm::Error validateOutput() const;
  /// Checks the flags against each other (each flag struct's validate()).
  llvm::Error validateFlags() const;
  /// Writes the IR to -o (--compile-to before emit). Returns the exit code.
  int printModule(mlir::ModuleOp module);
  /// The phase to stop after (--compile-to, or --emit's equivalent).
  Phase compileTo() const;

  cl::SubCommand sub_;
  ImportFlags import_;
  TrainingFlags training_;
  DistributionFlags distribution_;
  AutoLayoutFlags auto_;
  TargetFlags target_;
  cl::opt<std::string> output_;
  cl::opt<Phase> compileTo_;
  cl::opt<Emit> emit_;
  cl::opt<bool> keepSource_;
};

/// --print-sharding: every argument's sharding, then every op result's,
/// named after the ONNX tensors and nodes.
void printShardings(mlir::func::FuncOp func, llvm::raw_ostream &os) {
  using mlir::cleave::CleaveDialect;
  os << "sharding of '" << func.getSymName() << "' on "
     << mlir::cleave::getModuleMesh(func) << ":\n";
  for (mlir::BlockArgument arg : func.getArguments()) {
    llvm::StringRef name =
        func.getArgAttr(arg.getArgNumber(), CleaveDialect::kStepAttrName)
            ? "step"
            : "?";
    for (llvm::StringRef attr :
         {CleaveDialect::kParamAttrName, CleaveDialect::kInputAttrName,
          CleaveDialect::kStateAttrName})
      if (auto named = func.getArgAttrOfType<mlir::StringAttr>(
              arg.getArgNumber(), attr))
        name = named.getValue();
    os << "  " << name << ": "
       << func.getArgAttr(arg.getArgNumber(), CleaveDialect::kShardingAttrName)
       << "\n";
  }
  func.walk([&](mlir::Operation *op) {
    auto shardings =
        op->getAttrOfType<mlir::ArrayAttr>(CleaveDialect::kShardingAttrName);
    if (!shardings)
      return;
    std::string where = op->getName().getStringRef().str();
    if (auto name = mlir::dyn_cast<mlir::NameLoc>(op->getLoc()))
      where = name.getName().str() + " (" + where + ")";
    for (auto [index, sharding] : llvm::enumerate(shardings))
      os << "  " << where
         << (shardings.size() > 1 ? "#" + std::to_string(index) : "") << ": "
         << sharding << "\n";
  });
}

/// --keep-source replaces an earlier generated source, never a file of
/// the user's own (`-o t --keep-source` beside the user's t.cpp).
bool refuseUnlessGenerated(llvm::StringRef path) {
  auto existing = llvm::MemoryBuffer::getFile(path);
  if (!existing || (*existing)->getBuffer().starts_with(
                       "// Generated by cleave from "))
    return false;
  llvm::errs() << "cleave compile: error: --keep-source would write the "
                  "program's source to '"
               << path
               << "', which exists and was not generated by cleave; move it "
                  "or give another name with -o\n";
  return true;
}

/// Reports `error` as `cleave compile: error: ...` and returns the exit
/// code 1. Errors already reported as diagnostics get a note naming the
/// flags behind the pass that failed, where `flagsBehind` knows them.
int report(llvm::Error error,
           llvm::function_ref<std::string(llvm::StringRef)> flagsBehind = {}) {
  llvm::handleAllErrors(
      std::move(error),
      [&](const mlir::cleave::DiagnosedError &diagnosed) {
        if (!flagsBehind || diagnosed.pass.empty())
          return;
        if (std::string flags = flagsBehind(diagnosed.pass); !flags.empty())
          llvm::errs() << "cleave compile: note: " << diagnosed.pass
                       << " failed " << flags << "\n";
      },
      [](const llvm::ErrorInfoBase &info) {
        llvm::errs() << "cleave compile: error: " << info.message() << "\n";
      });
  return 1;
}

/// What the note after a pass's error says: the flags that asked for the
/// pass (empty: none did).
std::string flagsBehind(llvm::StringRef pass,
                        const mlir::cleave::LayoutOptions &layout,
                        llvm::StringRef meshText, bool planned,
                        llvm::ArrayRef<std::string> freeze) {
  std::string flags;
  llvm::raw_string_ostream os(flags);
  auto micro = [&] {
    if (layout.microbatches > 1)
      os << " --microbatches " << layout.microbatches;
  };
  if (pass == "cleave-autodiff") {
    if (freeze.empty())
      return "(--freeze GLOB keeps parameters fixed; --inference compiles a "
             "forward-only program)";
    os << "for";
    for (const std::string &glob : freeze)
      os << " --freeze '" << glob << "'";
  } else if (pass == "cleave-recompute") {
    os << "for --recompute " << layout.recompute;
  } else if (pass == "cleave-unroll-microbatches") {
    os << "for";
    micro();
  } else if (pass == "cleave-pipeline-stages") {
    os << "for --pipeline " << layout.pipelineAxis << " --pipeline-schedule "
       << mlir::cleave::pipelineScheduleName(layout.schedule);
    if (layout.virtualStages > 1)
      os << " --virtual-stages " << layout.virtualStages;
    if (!layout.pipelineCuts.empty())
      os << " --pipeline-cuts " << llvm::join(layout.pipelineCuts, ",");
    if (layout.pipelineLinkBalance)
      os << " --pipeline-link-balance " << *layout.pipelineLinkBalance;
    micro();
  } else if (llvm::is_contained({"cleave-apply-sharding-hints",
                                 "cleave-propagate-sharding",
                                 "cleave-partition"},
                                pass)) {
    os << "for";
    if (!meshText.empty())
      os << " --mesh " << meshText;
    if (layout.strategy != mlir::cleave::Strategy::None)
      os << " --strategy " << mlir::cleave::strategyName(layout.strategy);
    micro();
  } else {
    return "";
  }
  if (planned)
    os << " (the layout --strategy auto chose)";
  return flags;
}

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

int writeFile(llvm::StringRef path, llvm::StringRef contents) {
  return writeOutputFile(path, contents, "compile") ? 0 : 1;
}

llvm::Error CompileCommand::validateOutput() const {
  if (import_.model.empty())
    return fail("no model given; usage: cleave compile MODEL.onnx [options] "
                "-o train");
  if (llvm::sys::fs::is_directory(output_))
    return fail("the output '" + output_ +
                "' is a directory; give a file name with -o");
  if (output_.empty())
    return fail("-o needs a file name (for example -o train)");
  return llvm::Error::success();
}

llvm::Error CompileCommand::validateFlags() const {
  if (llvm::Error error = training_.validate(import_.inference))
    return error;
  if (compileTo_.getNumOccurrences() && emit_.getNumOccurrences())
    return fail("--emit and --compile-to say the same thing; give one");
  if (output_ == "-" && compileTo() == Phase::Binary)
    return fail("-o - (standard output) is for --emit=mlir or "
                "--emit=source; name the program's file");
  // Checked now: the linker's own message would come after minutes of work.
  if (llvm::StringRef parent = llvm::sys::path::parent_path(output_);
      output_ != "-" && !parent.empty() &&
      (!llvm::sys::fs::is_directory(parent) ||
       llvm::sys::fs::access(parent, llvm::sys::fs::AccessMode::Write)))
    return fail("cannot write the output '" + output_ + "': '" + parent +
                "' is not a writable directory; create it first");
  if (llvm::Error error = target_.validate())
    return error;
  return distribution_.validate(import_.inference, auto_.given());
}

int CompileCommand::run(mlir::MLIRContext &context) {
  if (llvm::Error error = validateOutput())
    return report(std::move(error));
  if (import_.outputIsModel(output_, "compile") ||
      refuseOutputOverInput(output_, distribution_.shardFile,
                            "the hints file", "compile"))
    return 1;
  if (keepSource_) {
    ProgramBuild build;
    build.target = target_.target;
    build.output = output_;
    std::string kept = keptSourcePath(build);
    if (import_.outputIsModel(kept, "compile") ||
        refuseOutputOverInput(kept, distribution_.shardFile, "the hints file",
                              "compile") ||
        refuseUnlessGenerated(kept))
      return 1;
  }
  if (llvm::Error error = validateFlags())
    return report(std::move(error));
  mlir::cleave::ApplyOptimizerPassOptions optimizer =
      llvm::cantFail(training_.optimizerOptions());
  mlir::cleave::ImportOptions options;
  if (!import_.toOptions(options))
    return 1;
  options.runInitialization = runInitializationGraph;
  mlir::cleave::ImportArtifacts artifacts;
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::cleave::importOnnxModel(
      context, import_.model, options, &artifacts);
  if (!module)
    return 1;
  if (compileTo() == Phase::Import)
    return printModule(*module);

  // The layout: the flags', or the planner's for --strategy auto.
  std::string meshText = distribution_.mesh;
  mlir::cleave::Strategy strategy = distribution_.strategy;
  std::string pipelineAxis = distribution_.pipeline;
  int64_t microbatches = distribution_.microbatches;
  mlir::cleave::PipelineSchedule schedule = distribution_.pipelineSchedule;
  int64_t virtualStages = distribution_.virtualStages;
  std::string recompute = distribution_.recompute;
  std::optional<double> plannedLinkBalance;
  // The intra-op ILP's hints of the layout --strategy auto chose, and its
  // gradient bucket size.
  std::vector<mlir::cleave::ShardingHint> plannedHints;
  double bucketMb = distribution_.bucketMb;
  if (strategy == kAutoStrategy) {
    std::vector<mlir::cleave::ShardingHint> hints;
    if (int rc = userHints(artifacts, hints))
      return rc;
    mlir::cleave::TrainingOptions planned;
    planned.freeze.assign(training_.freeze.begin(), training_.freeze.end());
    planned.optimizer = optimizer;
    llvm::Expected<planner::PlanLayout> chosen =
        chooseLayout(context, *module, planned, hints, auto_, target_.target,
                     distribution_.bucketMb,
                     distribution_.bucketMb.getNumOccurrences() > 0,
                     llvm::outs());
    if (!chosen)
      return report(chosen.takeError());
    meshText = chosen->meshText();
    strategy = chosen->strategy;
    pipelineAxis = chosen->pipelineAxis;
    microbatches = chosen->microbatches;
    schedule = chosen->schedule;
    virtualStages = chosen->virtualStages;
    plannedLinkBalance = chosen->pipelineLinkBalance;
    recompute = chosen->recompute;
    if (chosen->intraOp)
      plannedHints = chosen->intraOp->hints;
    if (chosen->bucketMb > 0)
      bucketMb = chosen->bucketMb;
  }

  mlir::cleave::MeshAttr mesh;
  if (meshText.empty() &&
      artifacts.metadata.count(kHintsMetadataKey))
    llvm::errs() << "cleave compile: note: the model holds sharding hints; "
                    "they apply with --mesh\n";
  if (!meshText.empty()) {
    auto parsed = mlir::cleave::parseMesh(&context, meshText);
    if (!parsed)
      return report(parsed.takeError());
    mesh = *parsed;
  }
  mlir::cleave::LayoutOptions layout;
  layout.mesh = mesh;
  layout.strategy = strategy;
  layout.microbatches = microbatches;
  layout.pipelineAxis = pipelineAxis;
  layout.schedule = schedule;
  layout.virtualStages = virtualStages;
  layout.pipelineCuts.assign(distribution_.pipelineCuts.begin(),
                             distribution_.pipelineCuts.end());
  layout.pipelineLinkBalance = plannedLinkBalance;
  if (distribution_.pipelineLinkBalance.getNumOccurrences())
    layout.pipelineLinkBalance = distribution_.pipelineLinkBalance;
  layout.recompute = recompute;
  layout.bucketMb = bucketMb;
  layout.reportReshards = distribution_.printSharding;
  if (llvm::Error error = mlir::cleave::validateLayout(layout, options.inference))
    return report(std::move(error));

  // A --freeze pattern that freezes nothing is almost always a typo.
  llvm::SmallVector<llvm::StringRef> parameters;
  module->walk([&](mlir::func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<mlir::StringAttr>(
              i, mlir::cleave::CleaveDialect::kParamAttrName))
        parameters.push_back(name.getValue());
  });
  for (const std::string &text : training_.freeze) {
    auto pattern = llvm::GlobPattern::create(text);
    if (pattern && llvm::none_of(parameters, [&](llvm::StringRef name) {
          return pattern->match(name);
        })) {
      return report(fail(
          "--freeze '" + text + "' matches no parameter; the parameters are: " +
          llvm::join(llvm::ArrayRef(parameters).take_front(8), ", ") +
          (parameters.size() > 8 ? ", ..." : "")));
    }
  }

  mlir::cleave::TrainingOptions training;
  training.inference = options.inference;
  training.distributed = mesh || layout.microbatches > 1;
  training.freeze.assign(training_.freeze.begin(), training_.freeze.end());
  training.optimizer = optimizer;
  auto noteFlags = [&](llvm::StringRef pass) {
    return flagsBehind(pass, layout, meshText, strategy != distribution_.strategy,
                       training_.freeze);
  };
  llvm::Expected<mlir::func::FuncOp> step =
      mlir::cleave::buildTrainingStep(*module, training);
  if (!step)
    return report(step.takeError(), noteFlags);
  if (compileTo() == Phase::Train)
    return printModule(*module);

  if (int rc = userHints(artifacts, layout.hints))
    return rc;
  llvm::append_range(layout.hints, plannedHints);
  if (llvm::Error error = mlir::cleave::partitionForLayout(
          *module, *step, layout, std::min(compileTo(), Phase::Stages),
          [&](mlir::func::FuncOp step) {
            if (distribution_.printSharding)
              printShardings(step, llvm::outs());
          }))
    return report(std::move(error), noteFlags);
  if (compileTo() < Phase::Stages)
    return printModule(*module);
  if (mesh && distribution_.printComm)
    mlir::cleave::printBytesSent(
        mlir::cleave::predictBytesSent(*step, target_.target ==
                                                  mlir::cleave::Target::Cuda),
        llvm::outs());
  if (compileTo() == Phase::Stages)
    return printModule(*module);

  mlir::cleave::EmitOptions emitOptions{
      target_.target, llvm::sys::path::filename(import_.model).str()};
  mlir::FailureOr<mlir::cleave::EmittedProgram> program =
      mlir::cleave::emitProgram(*step, emitOptions);
  if (failed(program))
    return 1;
  if (compileTo() == Phase::Emit)
    return writeFile(output_, program->source);

  // The initial values, in the layout the program expects, then the model
  // without them (--export-onnx writes the trained values in their place).
  std::string blob(program->embeddedBytes, '\0');
  llvm::StringSet<> embeddedNames;
  for (const mlir::cleave::EmbeddedValue &value : program->embedded) {
    embeddedNames.insert(value.name);
    auto it = artifacts.initialValues.find(value.name);
    if (it == artifacts.initialValues.end() ||
        static_cast<int64_t>(it->second.size()) != value.bytes) {
      return report(
          fail("no initial value of the right size for '" + value.name + "'"));
    }
    blob.replace(value.offset, value.bytes, it->second);
  }
  std::optional<std::string> model =
      mlir::cleave::modelWithoutValues(artifacts.originalModel, embeddedNames);
  if (!model) {
    return report(fail("the model does not serialize again for --export-onnx "
                       "(an ONNX model holds at most 2 GiB)"));
  }
  blob += *model;
  ProgramBuild build;
  build.target = target_.target;
  build.cudaHostEmulation = target_.cudaHostEmulation;
  if (target_.target == mlir::cleave::Target::Cuda)
    build.cudaArchs = llvm::cantFail(target_.cudaArchitectures());
  build.output = output_;
  build.keepSource = keepSource_;
  return buildProgram(build, program->source, blob);
}

int CompileCommand::userHints(const mlir::cleave::ImportArtifacts &artifacts,
                              std::vector<mlir::cleave::ShardingHint> &hints) {
  auto given = driver::userHints(artifacts.metadata, distribution_.shardFile,
                                 distribution_.shard);
  if (!given)
    return report(given.takeError());
  llvm::append_range(hints, std::move(*given));
  return 0;
}

Phase CompileCommand::compileTo() const {
  if (!emit_.getNumOccurrences())
    return compileTo_;
  switch (emit_) {
  case Emit::Mlir:
    return Phase::Stages;
  case Emit::Source:
    return Phase::Emit;
  case Emit::Binary:
    break;
  }
  return Phase::Binary;
}

int CompileCommand::printModule(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  os << "\n";
  return writeFile(output_, text);
}

} // namespace

std::unique_ptr<Command> makeCompileCommand() {
  return std::make_unique<CompileCommand>();
}

} // namespace cleave::driver
