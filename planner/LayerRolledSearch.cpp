//===- LayerRolledSearch.cpp - a deep model's search in two passes --------===//
//
// searchPlans. A model with a run of identical layers (SearchOptions::
// layers) is searched twice: first with every layout predicted from the
// same layout on a few of its layers (LayerRolledStep.h), which partitions
// small steps only; then the layouts that may be among the `keep` fastest
// are evaluated as the search evaluates a given layout (partitioned in
// full, or rolled out from two micro-batches), fastest estimate first,
// until `keep` plans are known to be faster than any estimate left can be
// (within kLayerRolledTimeTolerance); so are the layouts estimated not to
// fit by less than kLayerRolledMemoryTolerance. The other layouts keep
// their estimates (marked) or their reasons.
//
//===----------------------------------------------------------------------===//

#include "planner/LayerRolledStep.h"
#include "planner/LayoutEvaluation.h"
#include "planner/RolledStep.h"
#include "planner/Speculation.h"

#include <algorithm>
#include <chrono>

namespace cleave::planner {

using namespace mlir;

SearchResult searchPlans(MLIRContext &context, const StepSource &steps,
                         const SearchOptions &options) {
  if (options.given || !options.layers || !options.stepWithLayers)
    return searchLayouts(context, steps, options);
  auto start = std::chrono::steady_clock::now();
  SearchOptions first = options;
  first.rollLayers = true;
  SearchResult result = searchLayouts(context, steps, first);

  std::vector<Candidate> all;
  for (auto *list : {&result.plans, &result.rejected})
    for (Candidate &candidate : *list)
      all.push_back(std::move(candidate));
  result.plans.clear();
  result.rejected.clear();
  double memory = options.cluster.memoryBytes();
  std::vector<Candidate *> contenders;
  for (Candidate &candidate : all) {
    if (!candidate.prediction || !candidate.prediction->layerTemplateStages)
      continue;
    ++result.layerRolled;
    const Prediction &p = *candidate.prediction;
    double needed = double(p.peakBytesPerRank + p.workspaceBytes);
    llvm::StringRef reason = candidate.rejected;
    if (reason.empty() || reason.starts_with("may not fit") ||
        (doesNotFit(candidate) &&
         needed * (1 - kLayerRolledMemoryTolerance) <= memory))
      contenders.push_back(&candidate);
  }
  std::stable_sort(contenders.begin(), contenders.end(),
                   [](const Candidate *a, const Candidate *b) {
                     return a->prediction->stepMs < b->prediction->stepMs;
                   });

  // Each evaluated as a given layout is, with the recomputation its
  // estimate needed, one thread each; the next ones while this thread
  // decides (those it does not need are dropped). The plans shown are
  // written once all are known.
  SearchOptions exact = options;
  exact.writePlans = false;
  exact.threads = 1;
  // (A 1F1B layout and its interleaved sibling share their template.)
  EvaluationMemo memo;
  auto confirm = [&](const Candidate *candidate) {
    SearchOptions one = exact;
    one.given = candidate->layout;
    return std::function<SearchResult()>([&context, &steps, &memo, one] {
      return searchLayouts(context, steps, one, &memo);
    });
  };
  unsigned threads =
      context.isMultithreadingEnabled()
          ? (options.threads ? options.threads
                             : llvm::hardware_concurrency().compute_thread_count())
          : 1;
  Speculation<SearchResult> ahead(threads);
  std::vector<double> fitting;
  for (size_t i = 0; i < contenders.size(); ++i) {
    Candidate *candidate = contenders[i];
    std::sort(fitting.begin(), fitting.end());
    if (static_cast<int64_t>(fitting.size()) >= options.keep &&
        candidate->prediction->stepMs * (1 - kLayerRolledTimeTolerance) >=
            fitting[options.keep - 1])
      break;
    for (size_t j = i + 1; j < contenders.size() && j < i + threads; ++j)
      ahead.prefetch(contenders[j]->layout.key(), confirm(contenders[j]));
    SearchResult one =
        ahead.take(candidate->layout.key(), confirm(candidate));
    ++result.confirmed;
    result.rolled += one.rolled;
    Candidate &found = one.plans.empty() ? one.rejected.front()
                                         : one.plans.front();
    *candidate = std::move(found);
    if (candidate->rejected.empty())
      fitting.push_back(
          candidate->prediction->stepMs *
          (candidate->prediction->estimated ? 1 + kRolledTimeTolerance : 1));
  }
  for (Candidate &candidate : all)
    (candidate.rejected.empty() ? result.plans : result.rejected)
        .push_back(std::move(candidate));
  std::stable_sort(result.plans.begin(), result.plans.end(), fasterPlan);
  finishSearch(context, steps, options, result,
               [](const std::string &) { return OwningOpRef<ModuleOp>(); });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

} // namespace cleave::planner
