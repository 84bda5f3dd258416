//===- AutoLayout.cpp - `cleave compile --strategy auto` ------------------===//

#include "tools/cleave/AutoLayout.h"

#include "dialects/cleave/CleaveOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace cleave::driver {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<planner::PlanLayout>
chooseLayout(mlir::MLIRContext &context, mlir::ModuleOp module,
             const mlir::cleave::TrainingOptions &training,
             const std::vector<mlir::cleave::ShardingHint> &hints,
             const AutoLayoutFlags &flags, mlir::cleave::Target target,
             double bucketMb, bool bucketMbGiven, llvm::raw_ostream &os) {
  using namespace mlir::cleave;
  if (flags.cluster.empty())
    return fail("--strategy auto needs --cluster (a preset or a cluster "
                "file) and --ranks N or --nodes N");
  llvm::Expected<planner::Cluster> cluster =
      planner::loadCluster(flags.cluster);
  if (!cluster)
    return cluster.takeError();
  if (flags.nodes.getNumOccurrences() && flags.ranks.getNumOccurrences())
    return fail("give --nodes or --ranks, not both");
  int64_t ranks = flags.ranks > 0   ? flags.ranks.getValue()
                  : flags.nodes > 0 ? flags.nodes * cluster->devicesPerNode
                                    : cluster->nodes * cluster->devicesPerNode;
  if (ranks <= 0)
    return fail("--strategy auto: how many devices? give --ranks N or "
                "--nodes N");

  // The global batch: the data inputs' first dim, as --input-shape bound it.
  int64_t batch = 0;
  module.walk([&](mlir::func::FuncOp func) {
    for (mlir::BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), CleaveDialect::kInputAttrName))
        if (auto type = llvm::dyn_cast<mlir::RankedTensorType>(arg.getType());
            type && type.getRank() > 0 && !batch)
          batch = type.getDimSize(0);
  });
  if (batch <= 0)
    return fail("--strategy auto: the model has no data input with a batch "
                "dimension to split");

  planner::StepSource steps = planner::trainingSteps(module, training);
  // Built here, outside the search, so that its errors reach the user.
  {
    std::string name;
    llvm::Expected<mlir::ModuleOp> built = steps(ranks > 1, name);
    if (!built)
      return built.takeError();
  }
  planner::SearchOptions search;
  search.cluster = *cluster;
  search.ranks = ranks;
  search.globalBatch = batch;
  search.target = target;
  search.hints = hints;
  search.keep = 1;
  search.bucketMb = bucketMb;
  search.searchBucketSizes = !bucketMbGiven;
  search.threads = flags.threads;
  // A deep model's layouts predicted from a few of its layers (the step at
  // this batch only: compile binds the batch).
  std::map<int64_t, std::pair<mlir::OwningOpRef<mlir::ModuleOp>, std::string>>
      shallow;
  if (mlir::func::FuncOp main = planner::mainGraph(module))
    search.layers = planner::findRepeatedLayers(main);
  if (search.layers && search.layers->count < planner::kLayerRollingMinimum)
    search.layers.reset();
  if (search.layers)
    search.stepWithLayers =
        [&](int64_t keep, int64_t atBatch,
            std::string &name) -> llvm::Expected<mlir::ModuleOp> {
      if (atBatch != batch)
        return fail("the step at another batch is not built here");
      auto it = shallow.find(keep);
      if (it == shallow.end()) {
        auto built = planner::stepWithLayers(module, search.layers->count, keep,
                                             training);
        if (!built)
          return built.takeError();
        it = shallow.emplace(keep, std::move(*built)).first;
      }
      name = it->second.second;
      return *it->second.first;
    };
  planner::SearchResult result = planner::searchPlans(context, steps, search);
  if (result.plans.empty())
    return fail(llvm::formatv(
        "--strategy auto: no layout of {0} devices of '{1}' fits and builds "
        "(best rejected: {2}); run cleave plan for the details",
        ranks, cluster->name,
        result.rejected.empty() ? std::string("none")
                                : result.rejected.front().layout.summary() +
                                      ": " + result.rejected.front().rejected));
  const planner::Candidate &best = result.plans.front();
  const planner::Prediction &p = *best.prediction;
  os << llvm::formatv(
      "cleave compile: --strategy auto chose {0} of {1} layouts on {2} "
      "devices of '{3}' (global batch {4}): predicted {5:f4} ms per step "
      "(compute {6:f4}, exposed communication {7:f4}, bubble {8:f4}), {9} "
      "per rank{11}, {10} sent per rank per step\n",
      best.layout.summary(), result.candidates, ranks, cluster->name, batch,
      p.stepMs, p.computeMs, p.exposedCommMs, p.bubbleMs,
      planner::formatBytes(p.peakBytesPerRank),
      planner::formatBytes(p.commBytesPerRank),
      llvm::formatv(" (+{0} workspaces, {1} inputs{2}{3})",
                    planner::formatBytes(p.workspaceBytes),
                    planner::formatBytes(p.inputBytes),
                    p.blasPackingBytes > 0
                        ? ", " + planner::formatBytes(p.blasPackingBytes) +
                              " BLAS packing"
                        : std::string(),
                    p.libraryBytes > 0
                        ? ", " + planner::formatBytes(p.libraryBytes) +
                              " libraries' own"
                        : std::string())
          .str());
  std::string flagsText;
  // Quoted where the shell would read a hint's brackets as a glob.
  for (const std::string &flag : best.layout.flags())
    flagsText += flag.find_first_of("[]{}*?") == std::string::npos
                     ? " " + flag
                     : " '" + flag + "'";
  os << "cleave compile: the same as" << flagsText << "\n";
  if (search.layers)
    os << llvm::formatv(
        "cleave compile: layouts predicted from a few of the model's {0} "
        "identical layers, {1} of them then partitioned in full\n",
        search.layers->count, result.confirmed);
  for (const planner::Candidate &skipped : result.rejected)
    if (skipped.prediction && skipped.prediction->stepMs < p.stepMs)
      os << llvm::formatv("cleave compile: skipped {0} (predicted {1:f4} ms): "
                          "{2}\n",
                          skipped.layout.summary(), skipped.prediction->stepMs,
                          skipped.rejected);
  return best.layout;
}

} // namespace cleave::driver
