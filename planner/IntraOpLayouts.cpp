//===- IntraOpLayouts.cpp - the search's intra-op ILP layouts -------------===//

#include "planner/IntraOpLayouts.h"

#include "passes/TransformerBlocks.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <optional>
#include <tuple>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

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
    if (layout.strategy != Strategy::Megatron || !megatron.rejected.empty())
      continue;
    megatron.rejected = "the 'megatron' preset finds no transformer MLP or "
                        "attention block in this model; its tensor "
                        "parallelism comes from the intra-op ILP instead "
                        "(not partitioned)";
    IntraOpProblem problem;
    problem.axisSize = layout.axisSize("tp");
    problem.dataDegree = layout.axisSize("dp");
    problem.stages =
        layout.pipelineAxis.empty() ? 1 : layout.axisSize(layout.pipelineAxis);
    // The tensor axis is innermost and divides a node (enumerateLayouts).
    problem.interNode = problem.axisSize > options.cluster.devicesPerNode;
    problem.dataInterNode = problem.axisSize * problem.dataDegree >
                            options.cluster.devicesPerNode;
    problem.ringOnly = options.target == Target::Cuda;
    auto key = std::make_tuple(problem.axisSize, problem.dataDegree,
                               problem.stages);
    auto [it, fresh] = solved.try_emplace(key);
    if (fresh) {
      llvm::Expected<IntraOpPlan> plan =
          solveIntraOpIlp(step, options.cluster, problem);
      if (plan)
        it->second.plan = std::move(*plan);
      else
        it->second.error = llvm::toString(plan.takeError());
    }
    Candidate ilp;
    ilp.layout = layout;
    ilp.layout.strategy =
        problem.dataDegree > 1 ? Strategy::DataParallel : Strategy::None;
    ilp.layout.intraOp = it->second.plan;
    if (!it->second.plan) {
      ilp.rejected = "the intra-op ILP: " + it->second.error;
    } else if (const IntraOpPlan &plan = *it->second.plan;
               plan.splitTensors == 0) {
      std::string split =
          plan.bestSplitMs > 0
              ? llvm::formatv("{0:f4} ms", plan.bestSplitMs).str()
              : std::string("none (no dimension divides)");
      ilp.rejected = llvm::formatv(
          "the intra-op ILP keeps every tensor whole over tp={0} (its "
          "estimate of the step: {1:f4} ms whole, {2} with the best split of "
          "any parameter); not partitioned: the ranks serve data parallelism "
          "better",
          problem.axisSize, plan.objectiveMs, split);
    }
    added.push_back(std::move(ilp));
  }
  llvm::append_range(candidates, std::move(added));
}

} // namespace cleave::planner
