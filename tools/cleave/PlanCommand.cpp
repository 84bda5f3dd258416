//===- PlanCommand.cpp - `cleave plan` ------------------------------------===//
//
// Imports a model without its weight data, builds its training step,
// searches the layouts the compiler can build on a cluster (or evaluates
// the one given with compile's --mesh/--strategy/--pipeline/
// --microbatches) and prints the ranked plans with the `cleave compile`
// flags that reproduce each.
//
//===----------------------------------------------------------------------===//

#include "tools/cleave/Commands.h"
#include "tools/cleave/DistributionFlags.h"
#include "tools/cleave/HintSources.h"
#include "tools/cleave/ImportFlags.h"
#include "tools/cleave/OutputFile.h"
#include "tools/cleave/PlanCommandModel.h"
#include "tools/cleave/PlanJson.h"
#include "tools/cleave/ReportCommand.h"
#include "tools/cleave/TrainingFlags.h"

#include "dialects/cleave/CleaveOps.h"
#include "passes/Pipelines.h"
#include "planner/LayerRolledStep.h"
#include "planner/Planner.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <map>

namespace cleave::driver {

namespace {

using planner::Candidate;
using planner::PlanLayout;

class PlanCommand : public Command {
public:
  PlanCommand()
      : sub_("plan", "Choose a parallel layout for a model on a cluster: "
                     "ranked plans with predicted time, memory and traffic"),
        import_(sub_), training_(sub_), distribution_(sub_),
        cluster_("cluster",
                 cl::desc("Cluster: a preset (dgx-a100-40g, dgx-a100-80g, "
                          "dgx-h100) or a YAML/JSON file"),
                 cl::value_desc("PRESET|FILE"), cl::sub(sub_)),
        nodes_("nodes", cl::desc("Nodes of the cluster to plan for"),
               cl::value_desc("N"), cl::init(0), cl::sub(sub_)),
        ranks_("ranks", cl::desc("Devices in all (instead of --nodes)"),
               cl::value_desc("N"), cl::init(0), cl::sub(sub_)),
        globalBatch_("global-batch",
                     cl::desc("Samples per training step over all ranks; "
                              "binds the data inputs' batch dim"),
                     cl::value_desc("B"), cl::init(0), cl::sub(sub_)),
        top_("top", cl::desc("Plans to show (default 5)"), cl::init(5),
             cl::sub(sub_)),
        maxMicrobatches_("max-microbatches",
                         cl::desc("Largest micro-batch count searched "
                                  "(default 0: 16, or 8 per stage for "
                                  "pipelines of more stages)"),
                         cl::init(0), cl::sub(sub_)),
        maxUnrolledOps_(
            "max-unrolled-ops",
            cl::desc("Largest step (ops once its micro-batches are "
                     "unrolled) partitioned to predict a layout; a larger "
                     "one is estimated from the same layout with 2 "
                     "micro-batches of the same size (default 60000)"),
            cl::value_desc("N"), cl::init(60000), cl::sub(sub_)),
        fromLayers_(
            "predict-from-layers",
            cl::desc("Predict layouts from the model cut down to a few of "
                     "its identical layers, then partition in full only "
                     "those that may be the fastest: auto (a search, where "
                     "the model has at least 16 such layers), never, or "
                     "always (a given layout too, to check the estimate)"),
            cl::value_desc("auto|never|always"), cl::init("auto"),
            cl::sub(sub_)),
        json_("json", cl::desc("Write the plans as JSON"),
              cl::value_desc("FILE"), cl::sub(sub_)),
        report_("report",
                cl::desc("Write the plans as a self-contained HTML report "
                         "(what `cleave report` draws from --json's file)"),
                cl::value_desc("FILE"), cl::sub(sub_)),
        precision_("precision",
                   cl::desc("Predict in this precision: fp32 (what the "
                            "compiler builds) or bf16 (Megatron-LM's mixed "
                            "precision: bf16 matrix peak, 2-byte "
                            "activations, gradients and parameter copies, "
                            "fp32 master weights and optimizer state; "
                            "predicted only, plans compile in fp32)"),
                   cl::value_desc("fp32|bf16"), cl::init("fp32"),
                   cl::sub(sub_)),
        emitHints_("emit-hints",
                   cl::desc("Write the best plan's sharding hints as a "
                            "hints file (for --shard-file)"),
                   cl::value_desc("FILE"), cl::sub(sub_)),
        threads_("threads",
                 cl::desc("Threads evaluating layouts (default 0: one per "
                          "hardware thread); the plans, their order and "
                          "the reasons are the same for any count"),
                 cl::value_desc("N"), cl::init(0), cl::sub(sub_)),
        nodeTimes_("node-times",
                   cl::desc("With --json: each plan's predicted time per "
                            "ONNX node and stage (plans[].node_times), "
                            "named as ./train --trace names its events"),
                   cl::sub(sub_)) {
    // Shared with compile, meaningless here (and refused).
    for (cl::Option *option :
         {static_cast<cl::Option *>(&distribution_.printSharding),
          static_cast<cl::Option *>(&distribution_.printComm),
          static_cast<cl::Option *>(&import_.inference)})
      option->setHiddenFlag(cl::ReallyHidden);
  }

  cl::SubCommand &subCommand() override { return sub_; }
  int run(mlir::MLIRContext &context) override;

private:
  int fail(const llvm::Twine &message) {
    llvm::errs() << "cleave plan: error: " << message << "\n";
    return 1;
  }
  /// The user's hints, as `cleave compile` reads them; exit code.
  int userHints(const mlir::cleave::ImportArtifacts &artifacts,
                std::vector<mlir::cleave::ShardingHint> &hints);
  /// The layout of --mesh/--strategy/--pipeline/--microbatches, if given.
  llvm::Expected<std::optional<PlanLayout>> givenLayout() const;

  cl::SubCommand sub_;
  ImportFlags import_;
  TrainingFlags training_;
  DistributionFlags distribution_;
  cl::opt<std::string> cluster_;
  cl::opt<int64_t> nodes_, ranks_, globalBatch_, top_, maxMicrobatches_,
      maxUnrolledOps_;
  cl::opt<std::string> fromLayers_, json_, report_, precision_, emitHints_;
  cl::opt<unsigned> threads_;
  cl::opt<bool> nodeTimes_;
};

llvm::Error failure(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Milliseconds with enough digits for both tiny models and big ones.
std::string ms(double value) {
  return llvm::formatv(value < 10 ? "{0:f4}" : "{0:f1}", value).str();
}

llvm::Expected<std::optional<PlanLayout>> PlanCommand::givenLayout() const {
  const DistributionFlags &d = distribution_;
  bool search = !d.strategy.getNumOccurrences() || d.strategy == kAutoStrategy;
  if (d.mesh.empty() && search && d.pipeline.empty() &&
      !d.microbatches.getNumOccurrences() &&
      !d.pipelineSchedule.getNumOccurrences() &&
      !d.virtualStages.getNumOccurrences() &&
      !d.recompute.getNumOccurrences() && !d.pipelineCuts.getNumOccurrences() &&
      !d.pipelineLinkBalance.getNumOccurrences())
    return std::nullopt;
  if (d.strategy == kAutoStrategy)
    return failure("--strategy auto searches; drop --mesh, --pipeline, "
                   "--pipeline-cuts, --pipeline-link-balance, "
                   "--pipeline-schedule, --virtual-stages, --recompute and "
                   "--microbatches, or give the layout's preset");
  PlanLayout layout;
  if (!d.mesh.empty()) {
    for (llvm::StringRef item : llvm::split(d.mesh.getValue(), ',')) {
      auto [name, size] = item.split('=');
      int64_t value;
      if (name.trim().empty() || size.trim().getAsInteger(10, value) ||
          value < 1)
        return failure("--mesh '" + d.mesh +
                       "' is not AXIS=SIZE,... with sizes of at least 1");
      layout.mesh.push_back({name.trim().str(), value});
    }
  } else if (d.strategy.getNumOccurrences() || !d.pipeline.empty()) {
    return failure("--strategy and --pipeline need a device mesh; add --mesh "
                   "(for example --mesh dp=4)");
  }
  layout.strategy = d.strategy;
  layout.pipelineAxis = d.pipeline;
  layout.microbatches = d.microbatches;
  layout.schedule = d.pipelineSchedule;
  layout.virtualStages = d.virtualStages;
  layout.recompute = d.recompute;
  layout.pipelineCuts.assign(d.pipelineCuts.begin(), d.pipelineCuts.end());
  if (d.pipelineLinkBalance.getNumOccurrences())
    layout.pipelineLinkBalance = d.pipelineLinkBalance;
  return layout;
}

int PlanCommand::userHints(const mlir::cleave::ImportArtifacts &artifacts,
                           std::vector<mlir::cleave::ShardingHint> &hints) {
  auto given = driver::userHints(artifacts.metadata, distribution_.shardFile,
                                 distribution_.shard);
  if (!given)
    return fail(llvm::toString(given.takeError()));
  llvm::append_range(hints, std::move(*given));
  return 0;
}

int PlanCommand::run(mlir::MLIRContext &context) {
  using namespace mlir::cleave;
  if (import_.model.empty())
    return fail("no model given; usage: cleave plan MODEL.onnx --cluster "
                "PRESET|FILE (--nodes N | --ranks N) --global-batch B");
  if (import_.inference)
    return fail("--inference: cleave plan plans training steps");
  if (distribution_.printSharding || distribution_.printComm)
    return fail("--print-sharding and --print-comm apply to cleave compile");
  if (cluster_.empty())
    return fail("--cluster is required: a preset (" +
                llvm::join(planner::clusterPresetNames(), ", ") +
                ") or a YAML/JSON file");
  if (globalBatch_ <= 0)
    return fail("--global-batch B is required: the samples of one training "
                "step over all ranks (a positive number)");
  if (top_ < 1)
    return fail("--top must be at least 1");
  if (maxMicrobatches_ < 0)
    return fail("--max-microbatches must not be negative (0: the default, "
                "16 or 8 per pipeline stage)");
  if (maxUnrolledOps_ < 0)
    return fail("--max-unrolled-ops must not be negative");
  if (fromLayers_ != "auto" && fromLayers_ != "never" &&
      fromLayers_ != "always")
    return fail("--predict-from-layers must be auto, never or always, not '" +
                fromLayers_ + "'");
  std::optional<planner::Precision> precision =
      planner::parsePrecision(precision_);
  if (!precision)
    return fail("--precision must be fp32 or bf16, got '" + precision_ + "'");
  if (nodeTimes_ && json_.empty())
    return fail("--node-times adds to the plans' JSON: give --json FILE too");
  llvm::Expected<planner::Cluster> cluster = planner::loadCluster(cluster_);
  if (!cluster)
    return fail(llvm::toString(cluster.takeError()));
  if (nodes_.getNumOccurrences() && ranks_.getNumOccurrences())
    return fail("give --nodes or --ranks, not both");
  if (nodes_ < 0 || ranks_ < 0)
    return fail("--nodes and --ranks must be positive");
  int64_t ranks = ranks_   ? ranks_.getValue()
                  : nodes_ ? nodes_ * cluster->devicesPerNode
                           : cluster->nodes * cluster->devicesPerNode;
  llvm::Expected<std::optional<PlanLayout>> given = givenLayout();
  if (!given)
    return fail(llvm::toString(given.takeError()));
  if (ranks <= 0 && !*given)
    return fail("how many devices? give --nodes N or --ranks N (the cluster "
                "'" +
                cluster->name + "' does not say)");
  if (*given) {
    if (ranks > 0 && (*given)->ranks() != ranks)
      return fail(llvm::formatv("--mesh {0} has {1} ranks, but the cluster "
                                "has {2} devices; give --ranks {1}",
                                (*given)->meshText(), (*given)->ranks(),
                                ranks));
    ranks = (*given)->ranks();
    int64_t dp = 1;
    for (auto &[name, size] : (*given)->mesh)
      if (name != (*given)->pipelineAxis && name != "tp")
        dp *= size;
    if (globalBatch_ % (dp * (*given)->microbatches) != 0)
      return fail(llvm::formatv(
          "--global-batch {0} does not split into {1} data-parallel ranks x "
          "{2} micro-batches; give a batch divisible by {3}",
          globalBatch_, dp, (*given)->microbatches,
          dp * (*given)->microbatches));
  }

  // The model, without reading weight data.
  ImportOptions options;
  if (!import_.toOptions(options))
    return 1;
  llvm::Expected<PlanningModel> planning = readPlanningModel(
      import_.model, globalBatch_, options.shapeBindings, options.batchSymbol);
  if (!planning)
    return fail(llvm::toString(planning.takeError()));
  const std::vector<frontend::ShapeBinding> userBindings =
      options.shapeBindings;
  llvm::append_range(options.shapeBindings, planning->batchBindings);
  auto buffer =
      llvm::MemoryBuffer::getMemBuffer(planning->bytes, import_.model, false);
  ImportArtifacts artifacts;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importOnnxModel(context, buffer->getMemBufferRef(), options, &artifacts);
  if (!module)
    return 1;
  restoreShapeOnlyParameters(*module, planning->shapeOnly);
  // (A model in ONNX text is not rewritten: its batch is checked here.)
  for (auto func : module->getOps<mlir::func::FuncOp>())
    for (mlir::BlockArgument arg : func.getArguments())
      if (auto name = func.getArgAttrOfType<mlir::StringAttr>(
              arg.getArgNumber(), CleaveDialect::kInputAttrName))
        if (auto type = llvm::dyn_cast<mlir::RankedTensorType>(arg.getType());
            type && type.getRank() && type.getDimSize(0) != globalBatch_)
          return fail(llvm::formatv(
              "the model's input '{0}' has a batch of {1}, but "
              "--global-batch is {2}; give --global-batch {1} or bind the "
              "batch dim with --input-shape",
              name.getValue(), type.getDimSize(0), globalBatch_.getValue()));
  std::vector<ShardingHint> hints;
  if (int rc = userHints(artifacts, hints))
    return rc;
  llvm::Expected<ApplyOptimizerPassOptions> optimizer =
      training_.optimizerOptions();
  if (!optimizer)
    return fail(llvm::toString(optimizer.takeError()));

  // The training step, built once per kind.
  TrainingOptions training;
  training.freeze.assign(training_.freeze.begin(), training_.freeze.end());
  training.optimizer = *optimizer;
  planner::StepSource steps = planner::trainingSteps(*module, training);

  // Built here, outside the search, so that its errors reach the user.
  {
    std::string name;
    llvm::Expected<mlir::ModuleOp> built = steps(ranks > 1, name);
    if (!built) {
      llvm::handleAllErrors(
          built.takeError(), [](const DiagnosedError &) {},
          [&](const llvm::ErrorInfoBase &info) { fail(info.message()); });
      return 1;
    }
  }

  // The model imported again with its batch bound to another global batch
  // (the model as imported for the search's own), once per batch. Only
  // where plan binds the batch itself (not an ONNX text model).
  std::map<int64_t, mlir::OwningOpRef<mlir::ModuleOp>> modelsAtBatch;
  auto modelAtBatch = [&](int64_t batch) -> llvm::Expected<mlir::ModuleOp> {
    if (batch == globalBatch_)
      return *module;
    auto it = modelsAtBatch.find(batch);
    if (it != modelsAtBatch.end())
      return *it->second;
    llvm::Expected<PlanningModel> rebound = readPlanningModel(
        import_.model, batch, userBindings, options.batchSymbol);
    if (!rebound)
      return rebound.takeError();
    ImportOptions at = options;
    at.shapeBindings = userBindings;
    llvm::append_range(at.shapeBindings, rebound->batchBindings);
    auto bytes =
        llvm::MemoryBuffer::getMemBuffer(rebound->bytes, import_.model, false);
    mlir::OwningOpRef<mlir::ModuleOp> model =
        importOnnxModel(context, bytes->getMemBufferRef(), at);
    if (!model)
      return failure("cannot import the model at batch " +
                     std::to_string(batch));
    restoreShapeOnlyParameters(*model, rebound->shapeOnly);
    return *modelsAtBatch.emplace(batch, std::move(model)).first->second;
  };
  // The model's run of identical layers, for predicting layouts from a few
  // of them (SearchOptions::layers; their templates take other batches).
  std::optional<planner::RepeatedLayers> layers;
  if (fromLayers_ != "never" && !planning->batchBindings.empty())
    if (mlir::func::FuncOp main = planner::mainGraph(*module))
      layers = planner::findRepeatedLayers(main);
  // The distributed step of a copy of the model at a batch, cut down to
  // `count` of its identical layers (0: all of them), once each.
  std::map<std::pair<int64_t, int64_t>,
           std::pair<mlir::OwningOpRef<mlir::ModuleOp>, std::string>>
      builtSteps;
  auto stepOf = [&](int64_t count, int64_t batch,
                    std::string &name) -> llvm::Expected<mlir::ModuleOp> {
    auto key = std::make_pair(count, batch);
    auto it = builtSteps.find(key);
    if (it == builtSteps.end()) {
      llvm::Expected<mlir::ModuleOp> imported = modelAtBatch(batch);
      if (!imported)
        return imported.takeError();
      auto built = planner::stepWithLayers(*imported, count ? layers->count : 0,
                                           count, training);
      if (!built)
        return built.takeError();
      it = builtSteps.emplace(key, std::move(*built)).first;
    }
    name = it->second.second;
    return *it->second.first;
  };
  auto stepAtBatch = [&](int64_t batch, std::string &name) {
    return stepOf(0, batch, name);
  };

  planner::SearchOptions search;
  if (!planning->batchBindings.empty())
    search.stepAtBatch = stepAtBatch;
  if (layers && (fromLayers_ == "always" ||
                 (!given->has_value() &&
                  layers->count >= planner::kLayerRollingMinimum))) {
    search.layers = layers;
    search.stepWithLayers = stepOf;
    search.rollLayers = given->has_value();
  }
  search.maxUnrolledOps = maxUnrolledOps_;
  search.cluster = *cluster;
  search.ranks = ranks;
  search.globalBatch = globalBatch_;
  search.target = cluster->target == "cpu" ? Target::Cpu : Target::Cuda;
  search.maxMicrobatches = maxMicrobatches_;
  search.keep = top_;
  search.given = *given;
  search.precision = *precision;
  search.nodeTimes = nodeTimes_;
  search.hints = hints;
  search.bucketMb = distribution_.bucketMb;
  search.searchBucketSizes = !distribution_.bucketMb.getNumOccurrences();
  search.threads = threads_;
  planner::SearchResult result = planner::searchPlans(context, steps, search);

  // The flags of every plan: the model's, then the layout's.
  std::vector<std::string> common;
  for (const std::string &shape : import_.inputShapes)
    common.push_back("--input-shape=" + shape);
  for (const frontend::ShapeBinding &binding : planning->batchBindings)
    common.push_back("--input-shape=" + binding.name + "=" +
                     std::to_string(binding.dims[0]));
  if (!import_.loss.empty())
    common.push_back("--loss=" + import_.loss);
  llvm::append_range(common, training_.givenFlags());
  if (!distribution_.shardFile.empty())
    common.push_back("--shard-file=" + distribution_.shardFile);
  for (const std::string &hint : distribution_.shard)
    common.push_back("--shard=" + hint);
  if (distribution_.bucketMb.getNumOccurrences()) {
    char text[48];
    std::snprintf(text, sizeof(text), "--bucket-mb=%.17g",
                  distribution_.bucketMb.getValue());
    common.push_back(text);
  }
  if (search.target == Target::Cuda)
    common.push_back("--target=cuda");
  auto flagsOf = [&](const Candidate &c) {
    std::vector<std::string> flags = common;
    llvm::append_range(flags, c.layout.flags());
    return flags;
  };
  // Quoted where the shell would read a hint's brackets as a glob.
  auto quoted = [](const std::string &flag) {
    return flag.find_first_of("[]{}*?") == std::string::npos
               ? flag
               : "'" + flag + "'";
  };
  auto shellLine = [&](const Candidate &c) {
    std::string line = "cleave compile " + import_.model;
    for (const std::string &flag : flagsOf(c))
      line += " " + quoted(flag);
    return line + " -o train";
  };

  llvm::raw_ostream &os = llvm::outs();
  os << "cleave plan: " << import_.model << " on " << ranks << " devices of '"
     << cluster->name << "' (" << cluster->devicesPerNode
     << " per node; numbers from " << cluster->source << "), global batch "
     << globalBatch_ << "\n";
  if (*precision == planner::Precision::Bf16)
    os << "predicted in bf16 mixed precision (--precision bf16), which the "
          "compiler does not build yet: the flags below compile the same "
          "layouts in fp32\n";
  os << llvm::formatv(
      "{0} {1} in {2:f2} s: {3} fit, {4} rejected", result.candidates,
      search.given ? "layout evaluated" : "layouts searched", result.seconds,
      result.plans.size(), result.rejected.size());
  if (result.pruned)
    os << llvm::formatv(", {0} not partitioned (bound: slower than the "
                        "top {1}, or parameters and state alone too big)",
                        result.pruned, search.keep);
  if (result.rolled)
    os << llvm::formatv(", {0} with more micro-batches estimated from 2 "
                        "micro-batches of the same size, not unrolled (~)",
                        result.rolled);
  os << "\n";
  if (search.layers && !search.given)
    os << llvm::formatv(
        "the model's {0} identical layers: every layout predicted from the "
        "same layout on 1 and 2 layers per stage (at most 3 stages), {1} of "
        "them then partitioned in full (those that may be among the {2} "
        "fastest, or may fit after all)\n",
        search.layers->count, result.confirmed, search.keep);
  if (!result.plans.empty()) {
    os << llvm::formatv("\n{0,3}  {1,-16} {2,-9} {3,3} {4,11} {5,11} {6,11} "
                        "{7,11} {8,11} {9,11}\n",
                        "#", "mesh", "strategy", "mb", "step ms", "compute ms",
                        "comm ms", "bubble ms", "peak/rank", "sent/rank");
    for (auto [i, c] :
         llvm::enumerate(llvm::ArrayRef(result.plans).take_front(top_))) {
      const planner::Prediction &p = *c.prediction;
      os << llvm::formatv(
          "{0,3}  {1,-16} {2,-9} {3,3} {4,11} {5,11} {6,11} {7,11} {8,11} "
          "{9,11}\n",
          i + 1, c.layout.mesh.empty() ? "(one rank)" : c.layout.meshText(),
          c.layout.strategyLabel(), c.layout.microbatches,
          (p.estimated ? "~" : "") + ms(p.stepMs), ms(p.computeMs),
          ms(p.exposedCommMs), ms(p.bubbleMs),
          planner::formatBytes(p.peakBytesPerRank),
          planner::formatBytes(p.commBytesPerRank));
      for (auto &[axis, size] : c.layout.mesh)
        os << "     " << axis << "=" << size << ": "
           << c.layout.describeAxis(axis) << ", "
           << (c.interNode.at(axis) ? "across nodes" : "inside a node") << "\n";
      if (p.bubbleFraction > 0)
        os << llvm::formatv("     bubble {0:f1}% of the step\n",
                            100 * p.bubbleFraction);
      if (c.layout.recompute != "none")
        os << "     activations recomputed in the backward pass ("
           << c.layout.recompute << ")\n";
      if (p.layerTemplateStages)
        os << "     ~ estimated: predicted from the same layout"
           << planner::fewerLayersNote(p)
           << " (not partitioned in full; not compiled)\n";
      else if (p.estimated)
        os << "     ~ estimated: predicted from the same layout with 2 "
              "micro-batches of the same size (its step is too big to "
              "unroll here; not compiled)\n";
      std::vector<std::string> beside;
      if (p.workspaceBytes > 0)
        beside.push_back(
            "workspaces " + planner::formatBytes(p.workspaceBytes) +
            (p.collectiveBufferBytes > 0
                 ? " (collective buffers " +
                       planner::formatBytes(p.collectiveBufferBytes) + ")"
                 : std::string()));
      if (p.inputBytes > 0)
        beside.push_back("inputs " + planner::formatBytes(p.inputBytes));
      if (p.blasPackingBytes > 0)
        beside.push_back("BLAS packing " +
                         planner::formatBytes(p.blasPackingBytes));
      if (p.libraryBytes > 0)
        beside.push_back("libraries' own " +
                         planner::formatBytes(p.libraryBytes));
      if (!beside.empty())
        os << "     beside peak/rank: " << llvm::join(beside, ", ") << "; "
           << planner::formatBytes(p.neededBytesPerRank)
           << " in all, as the fit counts\n";
      os << "     " << shellLine(c) << "\n";
    }
  }
  if (!result.rejected.empty()) {
    os << "\nrejected (best first):\n";
    for (const Candidate &c :
         llvm::ArrayRef(result.rejected).take_front(top_)) {
      os << "  " << c.layout.summary();
      if (c.prediction)
        os << " (" << (c.prediction->estimated ? "~" : "")
           << ms(c.prediction->stepMs) << " ms)";
      os << ": " << c.rejected << "\n";
    }
  }

  if (!json_.empty() || !report_.empty()) {
    // The top plans carry what the report draws.
    llvm::json::Array plans, rejected;
    for (auto [i, c] : llvm::enumerate(result.plans))
      plans.push_back(
          planJson(c, flagsOf(c), i + 1, static_cast<int64_t>(i) < top_));
    for (const Candidate &c : result.rejected)
      rejected.push_back(planJson(c, flagsOf(c), 0, /*details=*/false));
    llvm::json::Object root{
        {"model", import_.model.getValue()},
        {"cluster",
         llvm::json::Object{{"name", cluster->name},
                            {"devices", ranks},
                            {"devices_per_node", cluster->devicesPerNode},
                            {"memory_bytes", cluster->memoryBytes()},
                            {"target", cluster->target}}},
        {"global_batch", globalBatch_.getValue()},
        {"precision", planner::precisionName(*precision)},
        {"plans", std::move(plans)},
        {"rejected", std::move(rejected)},
        {"search",
         llvm::json::Object{
             {"candidates", result.candidates},
             {"evaluated", static_cast<int64_t>(result.plans.size() +
                                                result.rejected.size())},
             {"pruned", result.pruned},
             {"estimated", result.rolled},
             {"layers", search.layers ? search.layers->count : 0},
             {"from_layers", result.layerRolled},
             {"partitioned_in_full", result.confirmed},
             {"compute_bound_ms", result.computeBoundMs},
             {"seconds", result.seconds}}}};
    llvm::json::Value value(std::move(root));
    if (!json_.empty()) {
      std::string text;
      llvm::raw_string_ostream jos(text);
      jos << llvm::formatv("{0:2}", value) << "\n";
      if (!writeOutputFile(json_, text, "plan"))
        return 1;
    }
    if (!report_.empty() &&
        writePlanReport(value,
                        json_.empty() ? "(not saved: add --json FILE)"
                                      : json_.getValue(),
                        report_) != 0)
      return 1;
  }

  if (!emitHints_.empty() && !result.plans.empty()) {
    // The best plan's hints: its preset's on the training step, then the
    // user's (stronger at equal priority, as compile applies them).
    const Candidate &best = result.plans.front();
    std::string name;
    bool distributed = best.layout.ranks() > 1 || best.layout.microbatches > 1;
    llvm::Expected<mlir::ModuleOp> base = steps(distributed, name);
    if (!base)
      return fail(llvm::toString(base.takeError()));
    std::vector<ShardingHint> written;
    if (!best.layout.mesh.empty() && best.layout.strategy != Strategy::None) {
      llvm::Expected<MeshAttr> mesh =
          parseMesh(&context, best.layout.meshText());
      if (!mesh)
        return fail(llvm::toString(mesh.takeError()));
      auto step = base->lookupSymbol<mlir::func::FuncOp>(name);
      auto presetHints = strategyHints(best.layout.strategy, step, *mesh);
      if (!presetHints)
        return fail(llvm::toString(presetHints.takeError()));
      written = std::move(*presetHints);
    }
    llvm::append_range(written, hints);
    if (best.layout.intraOp)
      llvm::append_range(written, best.layout.intraOp->hints);
    std::string text;
    llvm::raw_string_ostream hos(text);
    hos << "# cleave plan: the best plan for " << import_.model << " on "
        << ranks << " devices of '" << cluster->name << "', "
        << best.layout.summary() << ".\n"
        << "# The plan exactly: " << shellLine(best) << "\n"
        << "# From this file: cleave compile " << import_.model;
    for (const std::string &flag : common)
      hos << " " << flag;
    // The plan's flags with the file for the preset.
    std::vector<std::string> flags = best.layout.flags();
    for (size_t i = 0; i < flags.size(); i += 2)
      if (flags[i] != "--strategy" && flags[i] != "--shard")
        hos << " " << flags[i] << " " << flags[i + 1];
    hos << " --shard-file " << emitHints_ << " -o train\n";
    if (mlir::cleave::zeroStage(best.layout.strategy) == 3 ||
        mlir::cleave::zeroStage(best.layout.strategy) == 1)
      hos << "# (--strategy " << mlir::cleave::strategyName(best.layout.strategy)
          << " also changes how gradients and parameters move, which hints "
             "do not say: use the flags above for the plan itself.)\n";
    hos << "hints:\n";
    if (written.empty())
      hos << "  []\n";
    for (const ShardingHint &given : written) {
      // As --shard-file reads it: in the model's layout.
      ShardingHint hint = mlir::cleave::inModelLayout(given, *base);
      hos << "  - {tensor: " << llvm::json::Value(hint.pattern)
          << ", sharding: " << llvm::json::Value(formatShardingDims(hint))
          << ", priority: " << hint.priority << "}\n";
    }
    if (!writeOutputFile(emitHints_, text, "plan"))
      return 1;
  }

  if (result.plans.empty()) {
    // Say what would fit.
    const Candidate *smallest = nullptr;
    auto needs = [](const Candidate &c) {
      return c.prediction->neededBytesPerRank;
    };
    for (const Candidate &c : result.rejected)
      if (c.prediction && (!smallest || needs(c) < needs(*smallest)))
        smallest = &c;
    if (smallest &&
        llvm::StringRef(smallest->rejected).starts_with("may not fit"))
      return fail(llvm::formatv(
          "no plan is known to fit {0} devices of {1}: the closest ({2}) "
          "needs about {3} per rank, estimated from 2 micro-batches and too "
          "close to the limit to trust; raise --max-unrolled-ops to predict "
          "it exactly, or use devices with more memory, or more of them",
          ranks, planner::formatBytes(cluster->memoryBytes()),
          smallest->layout.summary(), planner::formatBytes(needs(*smallest))));
    if (smallest && needs(*smallest) > cluster->memoryBytes())
      return fail(llvm::formatv(
          "no plan fits {0} devices of {1}: the smallest ({2}) needs {3} "
          "per rank; use devices with at least that much memory, or more "
          "of them",
          ranks, planner::formatBytes(cluster->memoryBytes()),
          smallest->layout.summary(), planner::formatBytes(needs(*smallest))));
    if (result.candidates == 0)
      return fail(llvm::formatv(
          "no layout of {0} devices splits the global batch {1}: give a "
          "batch divisible by the data-parallel degree",
          ranks, globalBatch_));
    return fail("no plan: every layout was rejected (reasons above)");
  }
  return 0;
}

} // namespace

std::unique_ptr<Command> makePlanCommand() {
  return std::make_unique<PlanCommand>();
}

} // namespace cleave::driver
