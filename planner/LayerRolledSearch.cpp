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

SearchResult searchPlans(MLIRContext &context, const StepSource &sharedSteps,
                         const SearchOptions &searchOptions) {
  if (searchOptions.given || !searchOptions.layers ||
      !searchOptions.stepWithLayers)
    return searchLayouts(context, sharedSteps, searchOptions);
  auto start = std::chrono::steady_clock::now();
  // The searches below (the confirmations on several threads) build steps
  // one at a time between them.
  SearchOptions options = searchOptions;
  StepSource steps = oneAtATime(sharedSteps, options);
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
    double needed = double(p.neededBytesPerRank);
    llvm::StringRef reason = candidate.rejected;
    if (reason.empty() || reason.starts_with("may not fit") ||
        (doesNotFit(candidate) &&
         needed * (1 - kLayerRolledMemoryTolerance) <= memory))
      contenders.push_back(&candidate);
  }
  // A contender that recomputed for memory may fit with less recomputation
  // (the estimate of its memory may be over): it is ranked and confirmed
  // with the least recomputation whose estimate was within the tolerance
  // of fitting, then with more where that does not fit.
  auto modesOf = [&](const Candidate *c) {
    std::vector<std::string> modes;
    bool own = false;
    for (const char *mode : {"none", "selective", "full"}) {
      // The estimate's own mode, then (searching) more recomputation
      // where that does not fit after all: its memory estimate may be
      // under too.
      if ((own && !options.given) || mode == c->layout.recompute) {
        modes.push_back(mode);
        own = true;
        continue;
      }
      auto it = c->trials.find(mode);
      if (it != c->trials.end() &&
          it->second.neededBytes * (1 - kLayerRolledMemoryTolerance) <= memory)
        modes.push_back(mode);
    }
    return modes;
  };
  auto rank = [&](const Candidate *c) {
    auto it = c->trials.find(modesOf(c).front());
    return it != c->trials.end() && it->second.stepMs > 0
               ? std::min(it->second.stepMs, c->prediction->stepMs)
               : c->prediction->stepMs;
  };
  std::stable_sort(contenders.begin(), contenders.end(),
                   [&](const Candidate *a, const Candidate *b) {
                     return rank(a) < rank(b);
                   });

  // Each evaluated as a given layout is (with the modes above), one thread
  // each; the next ones while this thread decides (those it does not need
  // are dropped). The plans shown are written once all are known.
  SearchOptions exact = options;
  exact.writePlans = false;
  exact.threads = 1;
  // (A 1F1B layout and its interleaved sibling share their template.)
  EvaluationMemo memo;
  auto confirm = [&](PlanLayout layout) {
    SearchOptions one = exact;
    one.given = std::move(layout);
    return std::function<SearchResult()>([&context, &steps, &memo, one] {
      return searchLayouts(context, steps, one, &memo);
    });
  };
  auto withMode = [](PlanLayout layout, const std::string &mode) {
    layout.recompute = mode;
    return layout;
  };
  unsigned threads = searchThreads(context, options.threads);
  Speculation<SearchResult> ahead(threads);
  std::vector<double> fitting;
  // The partitioned modules of the fastest `keep` plans confirmed, for
  // writing them.
  std::vector<std::pair<double, std::string>> fastest;
  std::map<std::string, std::shared_ptr<OwningOpRef<ModuleOp>>> modules;
  auto keepModule = [&](const Candidate &plan, SearchResult &one) {
    auto it = one.keptModules.find(plan.layout.key());
    if (it == one.keptModules.end())
      return;
    modules[it->first] = it->second;
    fastest.emplace_back(plan.prediction->stepMs, it->first);
    std::sort(fastest.begin(), fastest.end());
    while (static_cast<int64_t>(fastest.size()) > options.keep) {
      modules.erase(fastest.back().second);
      fastest.pop_back();
    }
  };
  for (size_t i = 0; i < contenders.size(); ++i) {
    Candidate *candidate = contenders[i];
    std::sort(fitting.begin(), fitting.end());
    if (static_cast<int64_t>(fitting.size()) >= options.keep &&
        rank(candidate) * (1 - kLayerRolledTimeTolerance) >=
            fitting[options.keep - 1])
      break;
    for (size_t j = i + 1; j < contenders.size() && j < i + threads; ++j) {
      PlanLayout next =
          withMode(contenders[j]->layout, modesOf(contenders[j]).front());
      ahead.prefetch(next.key(), confirm(next));
    }
    // The first mode that fits, or the first refusal (a later mode's, "the
    // compiler cannot build it", would hide why).
    std::optional<Candidate> found, refused;
    for (const std::string &mode : modesOf(candidate)) {
      PlanLayout layout = withMode(candidate->layout, mode);
      SearchResult one = ahead.take(layout.key(), confirm(layout));
      ++result.confirmed;
      result.rolled += one.rolled;
      Candidate confirmed = std::move(one.plans.empty() ? one.rejected.front()
                                                        : one.plans.front());
      if (confirmed.rejected.empty()) {
        keepModule(confirmed, one);
        found = std::move(confirmed);
        break;
      }
      if (!refused)
        refused = std::move(confirmed);
    }
    *candidate = std::move(found ? *found : *refused);
    if (candidate->rejected.empty())
      fitting.push_back(
          candidate->prediction->stepMs *
          (candidate->prediction->estimated ? 1 + kRolledTimeTolerance : 1));
  }
  for (Candidate &candidate : all)
    (candidate.rejected.empty() ? result.plans : result.rejected)
        .push_back(std::move(candidate));
  std::stable_sort(result.plans.begin(), result.plans.end(), fasterPlan);
  finishSearch(context, steps, options, result, [&](const std::string &key) {
    auto it = modules.find(key);
    return it == modules.end() ? OwningOpRef<ModuleOp>()
                               : std::move(*it->second);
  });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

} // namespace cleave::planner
