//===- IntraOpLayouts.cpp - the search's intra-op ILP layouts -------------===//

#include "planner/IntraOpLayouts.h"

#include "dialects/cleave/CleaveOps.h"
#include "passes/Pipelines.h"
#include "passes/TransformerBlocks.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <optional>
#include <tuple>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// Every argument's and op's sharding once `hints` are propagated over
/// `layout`'s mesh (cleave compile's Distribute phase on a copy of the
/// step); none when the compiler refuses (its diagnostics are dropped: the
/// layout's evaluation reports them).
std::optional<std::vector<Attribute>>
propagatedShardings(ModuleOp base, StringRef stepName, const PlanLayout &layout,
                    ArrayRef<ShardingHint> hints) {
  MLIRContext *context = base.getContext();
  ScopedDiagnosticHandler quiet(context,
                                [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = base.clone();
  auto step = module->lookupSymbol<func::FuncOp>(stepName);
  llvm::Expected<MeshAttr> mesh = parseMesh(context, layout.meshText());
  if (!mesh) {
    llvm::consumeError(mesh.takeError());
    return std::nullopt;
  }
  (*module)->setAttr(CleaveDialect::kMeshAttrName, *mesh);
  LayoutOptions options;
  options.mesh = *mesh;
  options.strategy = layout.strategy;
  options.hints.assign(hints.begin(), hints.end());
  if (llvm::Error error = partitionForLayout(*module, step, options,
                                             CompilePhase::Distribute)) {
    llvm::consumeError(std::move(error));
    return std::nullopt;
  }
  std::vector<Attribute> shardings;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    shardings.push_back(step.getArgAttr(i, CleaveDialect::kShardingAttrName));
  step.walk([&](Operation *op) {
    shardings.push_back(StringAttr::get(context, op->getName().getStringRef()));
    shardings.push_back(op->getAttr(CleaveDialect::kShardingAttrName));
  });
  return shardings;
}

/// Drops the ILP's hints that keep a tensor whole where propagation keeps
/// it whole without them, so that a plan's flags name what it splits and
/// little else. Exact: the step's shardings with the hints kept must be
/// those with all of them (else all stay). A whole hint is kept for each
/// argument whose sharding differs without it, in up to four rounds.
void dropUnneededWholeHints(ModuleOp base, StringRef stepName,
                            const PlanLayout &layout, IntraOpPlan &plan) {
  std::optional<std::vector<Attribute>> all =
      propagatedShardings(base, stepName, layout, plan.hints);
  if (!all)
    return;
  auto isWhole = [](const ShardingHint &hint) {
    return llvm::all_of(hint.dims,
                        [](const auto &axes) { return axes.empty(); });
  };
  std::vector<bool> keep;
  for (const ShardingHint &hint : plan.hints)
    keep.push_back(!isWhole(hint));
  auto step = base.lookupSymbol<func::FuncOp>(stepName);
  auto argumentOf = [&](const ShardingHint &hint) -> std::optional<unsigned> {
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      for (StringRef attr :
           {CleaveDialect::kParamAttrName, CleaveDialect::kStateAttrName})
        if (auto name = step.getArgAttrOfType<StringAttr>(i, attr);
            name && hint.pattern == name.getValue())
          return i;
    return std::nullopt;
  };
  for (int round = 0; round < 4; ++round) {
    std::vector<ShardingHint> kept;
    for (auto [hint, k] : llvm::zip(plan.hints, keep))
      if (k)
        kept.push_back(hint);
    std::optional<std::vector<Attribute>> fewer =
        propagatedShardings(base, stepName, layout, kept);
    if (!fewer)
      return;
    if (*fewer == *all) {
      plan.hints = std::move(kept);
      return;
    }
    bool added = false;
    for (auto [index, hint] : llvm::enumerate(plan.hints)) {
      std::optional<unsigned> arg = argumentOf(hint);
      if (!keep[index] && arg && (*fewer)[*arg] != (*all)[*arg])
        keep[index] = added = true;
    }
    if (!added)
      return;
  }
}

} // namespace

void addIntraOpLayouts(const StepSource &steps, const SearchOptions &options,
                       std::vector<Candidate> &candidates) {
  if (options.given || !options.hints.empty())
    return;
  if (llvm::none_of(candidates, [](const Candidate &c) {
        return c.layout.strategy == Strategy::Megatron;
      }))
    return;
  std::string stepName;
  llvm::Expected<ModuleOp> module = steps(/*distributed=*/true, stepName);
  if (!module) {
    llvm::consumeError(module.takeError());
    return;
  }
  auto step = module->lookupSymbol<func::FuncOp>(stepName);
  if (!step || !findTensorParallelLayers(step).rowParallel.empty())
    return;
  // One ILP per degree: micro-batch variants share it.
  struct Solved {
    std::optional<IntraOpPlan> plan;
    std::string error;
  };
  std::map<std::tuple<int64_t, int64_t, int64_t>, Solved> solved;
  std::vector<Candidate> added;
  for (Candidate &megatron : candidates) {
    const PlanLayout &layout = megatron.layout;
    if (!isMegatron(layout.strategy) || !megatron.rejected.empty())
      continue;
    std::string noBlocks = "the 'megatron' preset finds no transformer MLP "
                           "or attention block in this model";
    if (layout.strategy != Strategy::Megatron) {
      megatron.rejected = noBlocks + " (not partitioned)";
      continue;
    }
    megatron.rejected = noBlocks + "; its tensor parallelism comes from the "
                                   "intra-op ILP instead (not partitioned)";
    IntraOpProblem problem;
    problem.axisSize = layout.axisSize("tp");
    problem.dataDegree = layout.axisSize("dp");
    problem.stages =
        layout.pipelineAxis.empty() ? 1 : layout.axisSize(layout.pipelineAxis);
    // The tensor axis is innermost and divides a node (enumerateLayouts).
    problem.interNode = problem.axisSize > options.cluster.devicesPerNode;
    problem.dataInterNode =
        problem.axisSize * problem.dataDegree > options.cluster.devicesPerNode;
    problem.ringOnly = options.target == Target::Cuda;
    auto key =
        std::make_tuple(problem.axisSize, problem.dataDegree, problem.stages);
    PlanLayout ilpLayout = layout;
    ilpLayout.strategy =
        problem.dataDegree > 1 ? Strategy::DataParallel : Strategy::None;
    auto [it, fresh] = solved.try_emplace(key);
    if (fresh) {
      llvm::Expected<IntraOpPlan> plan =
          solveIntraOpIlp(step, options.cluster, problem);
      if (plan) {
        if (plan->splitTensors > 0)
          dropUnneededWholeHints(*module, stepName, ilpLayout, *plan);
        it->second.plan = std::move(*plan);
      } else
        it->second.error = llvm::toString(plan.takeError());
    }
    Candidate ilp;
    ilp.layout = ilpLayout;
    ilp.layout.intraOp = it->second.plan;
    if (!it->second.plan) {
      ilp.rejected = "the intra-op ILP: " + it->second.error;
    } else if (const IntraOpPlan &plan = *it->second.plan;
               plan.splitTensors == 0) {
      std::string split =
          plan.bestSplitMs > 0
              ? llvm::formatv(", {0:f4} ms with the best split of any "
                              "parameter",
                              plan.bestSplitMs)
                    .str()
              : std::string();
      ilp.rejected = llvm::formatv(
          "the intra-op ILP keeps every tensor whole over tp={0} (its "
          "estimate of the step: {1:f4} ms whole{2}): a split costs more "
          "than it saves, and the tp ranks would compute the same step (not "
          "partitioned)",
          problem.axisSize, plan.objectiveMs, split);
    }
    added.push_back(std::move(ilp));
  }
  llvm::append_range(candidates, std::move(added));
}

} // namespace cleave::planner
