//===- Planner.cpp - search over parallel layouts -------------------------===//

#include "planner/Planner.h"

#include "planner/IntraOpLayouts.h"

#include "planner/FamilyMemoryBound.h"
#include "planner/LayerRolledStep.h"
#include "planner/LayoutEvaluation.h"
#include "planner/RolledStep.h"
#include "planner/Speculation.h"
#include "planner/StepBound.h"

#include "codegen/MemoryPlan.h"
#include "dialects/cleave/CleaveOps.h"
#include "passes/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      result.push_back(d);
  return result;
}

/// Whether every group of `tp` consecutive ranks (the innermost mesh axis)
/// among `ranks` stays inside one node of `perNode` devices: always when
/// `tp` divides the node, and also when all the ranks fit one node (tp=3
/// on 3 of a node's 4 devices).
bool tensorGroupsInsideNodes(int64_t tp, int64_t ranks, int64_t perNode) {
  for (int64_t first = 0; first < ranks; first += tp)
    if (first / perNode != (first + tp - 1) / perNode)
      return false;
  return true;
}

/// Sets the searched layouts' stage cut to weigh what crosses it by the
/// link between their stages (a given layout is evaluated as its flags
/// compile: with compile's default unless --pipeline-link-balance).
void setLinkBalance(const SearchOptions &options,
                    std::vector<Candidate> &candidates) {
  const Cluster &cluster = options.cluster;
  for (Candidate &candidate : candidates) {
    PlanLayout &layout = candidate.layout;
    if (layout.pipelineAxis.empty() || !layout.pipelineCuts.empty())
      continue;
    const Link &link =
        layout.crossesNodes(layout.pipelineAxis, cluster.devicesPerNode)
            ? cluster.interNode
            : cluster.intraNode;
    // Three digits, as the flags print it, so that they rebuild this cut.
    char text[32];
    std::snprintf(text, sizeof text, "%.3g",
                  cluster.operationsPerByteSent(link, options.precision ==
                                                          Precision::Bf16));
    layout.pipelineLinkBalance = std::strtod(text, nullptr);
  }
}

/// A micro-batch's scratch is taken to be at least this share of 1/m of
/// its one-micro-batch layout's (scratch is close to linear in the batch,
/// with parameter-gradient buffers that do not shrink).
constexpr double kSiblingScratchMargin = 0.85;

} // namespace

std::vector<Candidate> enumerateLayouts(const SearchOptions &options) {
  std::vector<Candidate> result;
  int64_t ranks = options.ranks, batch = options.globalBatch;
  int64_t perNode = options.cluster.devicesPerNode;
  auto add = [&](PlanLayout layout, std::string rejected = "") {
    Candidate candidate;
    candidate.layout = std::move(layout);
    candidate.rejected = std::move(rejected);
    result.push_back(std::move(candidate));
  };
  for (int64_t tp : divisors(ranks)) {
    // Tensor parallel groups talk every layer: they stay inside a node.
    if (!tensorGroupsInsideNodes(tp, ranks, perNode))
      continue;
    for (int64_t pp : divisors(ranks / tp)) {
      int64_t dp = ranks / tp / pp;
      if (batch % dp != 0)
        continue;
      int64_t local = batch / dp;
      PlanLayout layout;
      // Pipeline outermost (its traffic is smallest), tensor innermost.
      if (pp > 1)
        layout.mesh.push_back({"pp", pp});
      if (dp > 1)
        layout.mesh.push_back({"dp", dp});
      if (tp > 1)
        layout.mesh.push_back({"tp", tp});
      if (pp > 1)
        layout.pipelineAxis = "pp";
      // Micro-batch counts: powers of two that divide the rank's batch,
      // and micro-batches of one and of two samples (Megatron-LM's usual
      // sizes: 56 or 144 micro-batches are no power of two). They fill a
      // pipeline; without stages they only trade speed for activation
      // memory, which plain data parallelism explores.
      // With stages: 1F1B (GPipe's bubble, less activation memory), and
      // the interleaved schedule over 2 chunks per stage where the
      // micro-batches come in groups of the stage count.
      std::vector<int64_t> counts;
      for (int64_t m = 1; m <= local; m *= 2)
        counts.push_back(m);
      for (int64_t m : {local / 2, local})
        if (m >= 1 && !llvm::is_contained(counts, m))
          counts.push_back(m);
      llvm::sort(counts);
      int64_t most = options.maxMicrobatches
                         ? options.maxMicrobatches
                         : std::max<int64_t>(16, 8 * pp);
      auto addMicrobatches = [&](PlanLayout layout, bool explore) {
        for (int64_t m : counts) {
          if (m > most)
            break;
          if (local % m != 0)
            continue;
          layout.microbatches = m;
          if (pp > 1) {
            layout.schedule = PipelineSchedule::OneFOneB;
            layout.virtualStages = 1;
          }
          add(layout);
          if (pp > 1 && m % pp == 0) {
            layout.schedule = PipelineSchedule::Interleaved;
            layout.virtualStages = 2;
            add(layout);
          }
          if (!explore)
            break;
        }
      };
      if (tp > 1) {
        layout.strategy = Strategy::Megatron;
        addMicrobatches(layout, pp > 1);
        // ZeRO over the data axis inside Megatron's tensor split
        // (Megatron-LM's distributed optimizer is ZeRO-1).
        if (dp > 1)
          for (Strategy zero :
               {Strategy::MegatronZero1, Strategy::MegatronZero2,
                Strategy::MegatronZero3}) {
            layout.strategy = zero;
            addMicrobatches(layout, pp > 1);
          }
        continue;
      }
      layout.strategy = dp > 1 ? Strategy::DataParallel : Strategy::None;
      addMicrobatches(layout, /*explore=*/true);
      if (dp > 1)
        for (Strategy zero :
             {Strategy::Zero1, Strategy::Zero2, Strategy::Zero3}) {
          layout.strategy = zero;
          addMicrobatches(layout, pp > 1);
        }
    }
  }
  return result;
}

namespace {

/// The layout with one micro-batch (and so one chunk per stage) that a
/// layout of several is compared with.
PlanLayout oneMicrobatch(PlanLayout layout) {
  layout.microbatches = 1;
  layout.virtualStages = 1;
  if (layout.schedule == PipelineSchedule::Interleaved)
    layout.schedule = PipelineSchedule::OneFOneB;
  layout.recompute = "none";
  return layout;
}

/// The share of `layout`'s step its pipeline waits (0 without stages).
double bubbleOf(const PlanLayout &layout) {
  int64_t stages =
      layout.pipelineAxis.empty() ? 1 : layout.axisSize(layout.pipelineAxis);
  return pipelineBubble(stages, layout.microbatches, layout.virtualStages);
}

/// The partitioned modules of the fastest plans found so far (as many as
/// are shown), so that the emitter can check the plans shown without
/// partitioning them again.
class KeptModules {
public:
  explicit KeptModules(int64_t limit) : limit(limit) {}

  void offer(const Candidate &candidate, OwningOpRef<ModuleOp> module) {
    if (!module)
      return;
    Entry entry{candidate.prediction->stepMs,
                candidate.prediction->peakBytesPerRank, candidate.layout.key(),
                std::move(module)};
    auto at = llvm::upper_bound(entries, entry, [](const Entry &a,
                                                   const Entry &b) {
      return std::tie(a.stepMs, a.peak, a.key) <
             std::tie(b.stepMs, b.peak, b.key);
    });
    entries.insert(at, std::move(entry));
    if (static_cast<int64_t>(entries.size()) > limit)
      entries.pop_back();
  }

  OwningOpRef<ModuleOp> take(const std::string &key) {
    for (Entry &entry : entries)
      if (entry.key == key)
        return std::move(entry.module);
    return nullptr;
  }

private:
  struct Entry {
    double stepMs;
    int64_t peak;
    std::string key;
    OwningOpRef<ModuleOp> module;
  };
  std::vector<Entry> entries;
  int64_t limit;
};

/// The distributed training step, or null when it does not build (each
/// layout's evaluation then reports why).
func::FuncOp distributedStep(const StepSource &steps) {
  std::string stepName;
  llvm::Expected<ModuleOp> module = steps(/*distributed=*/true, stepName);
  if (!module) {
    llvm::consumeError(module.takeError());
    return {};
  }
  return module->lookupSymbol<func::FuncOp>(stepName);
}

/// Rejects, without partitioning them, the layouts whose parameters and
/// optimizer state cannot fit however the compiler splits them: each rank
/// holds at least a (pipeline stages x tensor degree x, for what ZeRO
/// splits, data-parallel degree)-th of them (each parameter lives on one
/// stage; Megatron splits over the tensor axis, ZeRO-3 parameters and
/// ZeRO-1 to 3 optimizer state over the data axis, nothing splits more).
/// Not with the user's hints, which may split anything over any axis.
/// Returns the candidate holding the least (null when none or not
/// bounded), and sets `bound` to the bound.
const Candidate *
rejectByHeldBytes(const StepSource &steps, const SearchOptions &options,
                  std::vector<Candidate> &candidates,
                  std::function<double(const PlanLayout &)> &bound) {
  if (options.given || !options.hints.empty())
    return nullptr;
  func::FuncOp step = distributedStep(steps);
  if (!step)
    return nullptr;
  double params = 0, state = 0;
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (step.getArgAttr(i, CleaveDialect::kParamAttrName))
      params += tensorBytes(arg.getType());
    else if (step.getArgAttr(i, CleaveDialect::kStateAttrName))
      state += tensorBytes(arg.getType());
  }
  // In bf16 a parameter is a 2-byte copy and a 4-byte master (predictStep).
  if (options.precision == Precision::Bf16)
    params *= 1.5;
  // By value: the bound outlives this frame (returned in `bound`).
  auto heldBytes = [params, state](const PlanLayout &layout) {
    int64_t dp = layout.axisSize("dp");
    double model = double(layout.ranks()) / dp;
    int stage = zeroStage(layout.strategy);
    return params / (model * (stage == 3 ? dp : 1)) +
           state / (model * (stage >= 1 ? dp : 1));
  };
  // The layout holding the least is partitioned whatever its bound, so
  // that a search where nothing fits still says what the smallest needs.
  const Candidate *least = nullptr;
  for (const Candidate &candidate : candidates)
    if (candidate.rejected.empty() &&
        (!least || heldBytes(candidate.layout) < heldBytes(least->layout)))
      least = &candidate;
  double memory = options.cluster.memoryBytes();
  for (Candidate &candidate : candidates) {
    if (!candidate.rejected.empty() || &candidate == least)
      continue;
    double held = heldBytes(candidate.layout);
    if (held > memory)
      candidate.rejected = llvm::formatv(
          "does not fit: its parameters and optimizer state alone need at "
          "least {0} per rank however they are split, the device has {1} "
          "(not partitioned)",
          formatBytes(static_cast<int64_t>(held)),
          formatBytes(options.cluster.memoryBytes()));
  }
  bound = heldBytes;
  return least;
}

/// Micro-batches change what a training BatchNorm computes (each
/// micro-batch is normalized with its own statistics, as in PyTorch's
/// accumulation loop), so the search does not offer them for such a step:
/// a plan must train the model the user wrote. The user can still ask for
/// micro-batches (cleave plan --microbatches, cleave compile).
void rejectMicrobatchesThatChangeBatchNorm(const StepSource &steps,
                                           const SearchOptions &options,
                                           std::vector<Candidate> &candidates) {
  func::FuncOp step = options.given ? func::FuncOp() : distributedStep(steps);
  if (!step)
    return;
  bool batchNorm = false;
  step.walk([&](BatchNormOp op) { batchNorm |= op.getTraining(); });
  if (!batchNorm)
    return;
  for (Candidate &candidate : candidates)
    if (candidate.rejected.empty() && candidate.layout.microbatches > 1)
      candidate.rejected =
          "micro-batches would change what the model's BatchNorm computes "
          "(statistics per micro-batch, not per batch); not chosen unless "
          "asked for with --microbatches (not partitioned)";
}

/// ZeRO-1 and 2 split the optimizer's state (and the gradients that update
/// it) over the data axis: for an optimizer that keeps none (SGD without
/// momentum) they build the same program as the strategy without them, so
/// the search does not partition them twice.
void rejectZeroWithoutState(const StepSource &steps,
                            const SearchOptions &options,
                            std::vector<Candidate> &candidates) {
  func::FuncOp step = options.given ? func::FuncOp() : distributedStep(steps);
  if (!step)
    return;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, CleaveDialect::kStateAttrName))
      return;
  for (Candidate &candidate : candidates) {
    Strategy strategy = candidate.layout.strategy;
    if (!candidate.rejected.empty() || candidate.layout.intraOp ||
        (zeroStage(strategy) != 1 && zeroStage(strategy) != 2))
      continue;
    Strategy same =
        isMegatron(strategy) ? Strategy::Megatron : Strategy::DataParallel;
    candidate.rejected = llvm::formatv(
        "the same program as --strategy {0}: the optimizer keeps no state "
        "for ZeRO-1 or 2 to split (not partitioned)",
        strategyName(same));
    candidate.sameProgram = true;
  }
}

/// What evaluating a layout gives: the candidate (its layout, prediction,
/// reason), the partitioned module of a plan that fits where asked for,
/// and for a rolled estimate whether its template could be built.
struct Evaluated {
  Candidate candidate;
  OwningOpRef<ModuleOp> module;
  bool built = true;
};

} // namespace

bool fasterPlan(const Candidate &a, const Candidate &b) {
  if (a.prediction.has_value() != b.prediction.has_value())
    return a.prediction.has_value();
  if (a.prediction && b.prediction) {
    if (a.prediction->stepMs != b.prediction->stepMs)
      return a.prediction->stepMs < b.prediction->stepMs;
    if (a.prediction->peakBytesPerRank != b.prediction->peakBytesPerRank)
      return a.prediction->peakBytesPerRank < b.prediction->peakBytesPerRank;
  }
  return a.layout.key() < b.layout.key();
}

unsigned searchThreads(MLIRContext &context, unsigned requested) {
  if (!context.isMultithreadingEnabled())
    return 1;
  return requested ? requested
                   : llvm::hardware_concurrency().compute_thread_count();
}

StepSource oneAtATime(StepSource steps, SearchOptions &options) {
  auto building = std::make_shared<std::mutex>();
  if (options.stepAtBatch)
    options.stepAtBatch = [atBatch = options.stepAtBatch,
                           building](int64_t globalBatch, std::string &name) {
      std::lock_guard<std::mutex> lock(*building);
      return atBatch(globalBatch, name);
    };
  if (options.stepWithLayers)
    options.stepWithLayers = [withLayers = options.stepWithLayers,
                              building](int64_t layers, int64_t globalBatch,
                                        std::string &name) {
      std::lock_guard<std::mutex> lock(*building);
      return withLayers(layers, globalBatch, name);
    };
  return [steps = std::move(steps), building](bool distributed,
                                              std::string &name) {
    std::lock_guard<std::mutex> lock(*building);
    return steps(distributed, name);
  };
}

SearchResult searchLayouts(MLIRContext &context, const StepSource &sharedSteps,
                           const SearchOptions &searchOptions,
                           EvaluationMemo *sharedMemo) {
  auto start = std::chrono::steady_clock::now();
  SearchResult result;
  // The steps (each kind or batch built on first use, by whichever thread
  // asks first) are built one at a time.
  SearchOptions options = searchOptions;
  StepSource steps = oneAtATime(sharedSteps, options);
  // Layouts evaluated ahead of the search on the other threads (the
  // search takes their results in its own order).
  unsigned threads = searchThreads(context, options.threads);
  EvaluationMemo ownMemo;
  EvaluationMemo &memo = sharedMemo ? *sharedMemo : ownMemo;
  std::optional<Speculation<Evaluated>> ahead(std::in_place, threads);
  auto onceAt = [&](const PlanLayout &layout, int64_t globalBatch) {
    std::string key = "once|" + layout.key() + "|" + std::to_string(globalBatch);
    return std::make_pair(key, std::function<Evaluated()>([&, layout,
                                                           globalBatch] {
      Evaluated e;
      e.candidate.layout = layout;
      evaluateOnce(context, steps, options, e.candidate, /*emit=*/false,
                   /*kept=*/nullptr, globalBatch, &memo);
      return e;
    }));
  };
  auto evaluation = [&](const PlanLayout &layout) {
    return std::make_pair(
        "evaluate|" + layout.key(), std::function<Evaluated()>([&, layout] {
          Evaluated e;
          e.candidate.layout = layout;
          evaluate(context, steps, options, e.candidate, &e.module, 0, &memo);
          return e;
        }));
  };
  auto estimate = [&](const PlanLayout &layout) {
    return std::make_pair(
        "estimate|" + layout.key(), std::function<Evaluated()>([&, layout] {
          Evaluated e;
          e.candidate.layout = layout;
          e.built = estimateRolled(context, steps, options, e.candidate, &memo);
          return e;
        }));
  };
  auto prefetch = [&](std::pair<std::string, std::function<Evaluated()>> work,
                      bool urgent = false) {
    ahead->prefetch(work.first, std::move(work.second), urgent);
  };
  auto take = [&](std::pair<std::string, std::function<Evaluated()>> work) {
    return ahead->take(work.first, work.second);
  };
  std::vector<Candidate> candidates;
  if (options.given) {
    Candidate given;
    given.layout = *options.given;
    candidates.push_back(given);
  } else {
    candidates = enumerateLayouts(options);
    addIntraOpLayouts(steps, options, candidates);
    setLinkBalance(options, candidates);
  }
  result.candidates = candidates.size();
  rejectMicrobatchesThatChangeBatchNorm(steps, options, candidates);
  rejectZeroWithoutState(steps, options, candidates);
  std::function<double(const PlanLayout &)> heldBytes;
  const Candidate *least =
      rejectByHeldBytes(steps, options, candidates, heldBytes);
  FamilyMemoryBounds familyBounds(
      options, candidates,
      options.stepAtBatch ? heldBytes
                          : std::function<double(const PlanLayout &)>(),
      least);
  // A lower bound on every layout's step before any is partitioned
  // (planner/StepBound.h): the search goes through the layouts by it
  // and stops where none left can beat the plans found.
  double computeBoundMs =
      options.given ? 0
                    : stepComputeBoundMs(distributedStep(steps),
                                         options.cluster, options.precision);
  // The ops of one micro-batch's step, as unrolling copies them (bounds
  // what trying a layout costs before any is partitioned).
  int64_t stepOps = 0;
  if (func::FuncOp step =
          options.given ? func::FuncOp() : distributedStep(steps))
    step.walk([&](Operation *) { ++stepOps; });
  result.computeBoundMs = computeBoundMs;
  auto analyticBound = [&](const Candidate *c) {
    return computeBoundMs / c->layout.ranks() / (1 - bubbleOf(c->layout));
  };
  // Each layout of one micro-batch by its key: the sibling that bounds
  // the same layout with more micro-batches.
  std::map<std::string, Candidate *> single;
  for (Candidate &candidate : candidates)
    if (candidate.layout.microbatches == 1)
      single[oneMicrobatch(candidate.layout).key()] = &candidate;
  std::vector<double> fitting;
  KeptModules kept(options.keep);
  // (What evaluate and estimateRolled do to a candidate depends on its
  // layout alone: the search's candidates have no prediction, reason or
  // links yet when evaluated.)
  auto evaluateAndKeep = [&](Candidate &candidate) {
    Evaluated e = take(evaluation(candidate.layout));
    // The modes its rolled estimate tried, where evaluating did not.
    std::map<std::string, Candidate::RecomputeTrial> estimated =
        std::move(candidate.trials);
    candidate = std::move(e.candidate);
    for (auto &[mode, trial] : estimated)
      candidate.trials.try_emplace(mode, std::move(trial));
    if (candidate.rejected.empty()) {
      // A prediction from fewer layers may be this much faster than the
      // step it stands for.
      fitting.push_back(candidate.prediction->stepMs *
                        (candidate.prediction->layerTemplateStages
                             ? 1 + kLayerRolledTimeTolerance
                             : 1));
      kept.offer(candidate, std::move(e.module));
    }
  };
  double memory = options.cluster.memoryBytes();
  // A micro-batched layout's rolled estimate decides it without unrolling
  // where it is clear (cannot fit, slower than the plans kept) or where
  // unrolling is too big; otherwise the layout is unrolled.
  auto decideByEstimate = [&](Candidate &candidate) {
    if (!rollable(options, candidate.layout))
      return false;
    Evaluated e = take(estimate(candidate.layout));
    bool interleaved =
        candidate.layout.schedule == PipelineSchedule::Interleaved;
    // What the compiler cannot build for a few micro-batches of this size
    // (a stage cut, a schedule that cannot order the step) it cannot build
    // for more, where unrolling them all would take far longer to find
    // out: the template is this layout with 2 of them; an interleaved
    // layout's is 1F1B over one chunk per stage, so the interleaved
    // schedule is tried with as many micro-batches as stages, its least.
    if (!e.built) {
      const PlanLayout &layout = candidate.layout;
      int64_t tried = interleaved ? layout.axisSize(layout.pipelineAxis) : 2;
      // A search unrolls no more for this than for any layout: trying the
      // interleaved schedule on a deep pipeline of a large model took
      // minutes (the 1T skeleton's pp=768: 61-97 s each).
      int64_t probeOps = stepOps * std::min(tried, layout.microbatches);
      if (interleaved && !options.given && probeOps > options.maxUnrolledOps &&
          llvm::StringRef(e.candidate.rejected)
              .starts_with("the compiler cannot build it")) {
        candidate.rejected =
            e.candidate.rejected +
            llvm::formatv(" (its 1F1B template, one chunk per stage; the "
                          "interleaved schedule itself not tried: {0} "
                          "micro-batches of about {1} ops each are too "
                          "big to unroll, --max-unrolled-ops {2})",
                          std::min(tried, layout.microbatches), stepOps,
                          options.maxUnrolledOps)
                .str();
        return true;
      }
      if (layout.microbatches <= tried)
        return false;
      PlanLayout probe = layout;
      probe.microbatches = tried;
      Candidate fewer =
          interleaved ? take(onceAt(probe, options.globalBatch /
                                               layout.microbatches * tried))
                            .candidate
                      : std::move(e.candidate);
      if (fewer.prediction || !llvm::StringRef(fewer.rejected)
                                   .starts_with("the compiler cannot build it"))
        return false;
      candidate.rejected =
          fewer.rejected + llvm::formatv(" (with {0} micro-batches of the "
                                         "same size; not unrolled)",
                                         tried)
                               .str();
      return true;
    }
    Candidate rolled = std::move(e.candidate);
    const Prediction &p = *rolled.prediction;
    double needed = p.neededBytesPerRank;
    double tolerance =
        interleaved ? kInterleavedTolerance : kRolledMemoryTolerance;
    double timeTolerance =
        interleaved ? kInterleavedTolerance : kRolledTimeTolerance;
    std::sort(fitting.begin(), fitting.end());
    bool tooBig = needed * (1 - tolerance) > memory;
    bool fits = needed * (1 + tolerance) <= memory;
    bool slower = static_cast<int64_t>(fitting.size()) >= options.keep &&
                  p.stepMs * (1 - timeTolerance) >= fitting[options.keep - 1];
    bool affordable = unrolledOps(rolled.layout, p) <= options.maxUnrolledOps;
    if ((options.given || interleaved) && affordable)
      return false;
    if (!tooBig && !(fits && slower) && affordable) {
      // Unrolled from the recomputation the estimate needed.
      candidate.layout.recompute = rolled.layout.recompute;
      candidate.trials = rolled.trials;
      return false;
    }
    if (!tooBig && !fits)
      rolled.rejected = llvm::formatv(
          "may not fit: needs about {0} per rank (estimated from 2 "
          "micro-batches of the same size{3}, within {1}%; too big to "
          "unroll), the device has {2}",
          formatBytes(static_cast<int64_t>(needed)), tolerance * 100,
          formatBytes(static_cast<int64_t>(memory)), fewerLayersNote(p));
    ++result.rolled;
    candidate = std::move(rolled);
    // The estimate may be this much faster than the step it stands for.
    if (candidate.rejected.empty())
      fitting.push_back(candidate.prediction->stepMs * (1 + timeTolerance));
    return true;
  };
  auto singleOf = [&](const Candidate *c) -> Candidate * {
    auto it = single.find(oneMicrobatch(c->layout).key());
    return it == single.end() ? nullptr : it->second;
  };
  // The one-micro-batch layout once predicted.
  auto siblingOf = [&](const Candidate *c) -> const Candidate * {
    const Candidate *s = singleOf(c);
    return s && s->prediction ? s : nullptr;
  };
  // A micro-batch holds at least 1/m of the one-micro-batch layout's
  // scratch (scratch grows with the batch, from what it holds at none):
  // recomputation modes whose share still cannot fit are not tried, and a
  // layout that cannot fit even with full recomputation is rejected.
  auto recomputeFromSibling = [&](Candidate &candidate,
                                  const Candidate &sibling) {
    const PlanLayout &layout = candidate.layout;
    // Per stage, what a mode's trial held: its activations shrink to 1/m,
    // but the stashed part stays for each micro-batch the schedule keeps
    // in flight, and gradient buffers stay.
    auto cannotFit = [&](const char *mode) {
      auto it = sibling.trials.find(mode);
      if (it == sibling.trials.end())
        return false;
      const Candidate::RecomputeTrial &trial = it->second;
      int64_t stages = static_cast<int64_t>(trial.stageMemory.size());
      double most = 0, m = double(layout.microbatches);
      // Kernels' workspace grows with the micro-batch (their im2col and
      // reduction buffers): a micro-batch's is taken as 1/m of the whole
      // batch's, as its activations are.
      double workspace = double(sibling.prediction->workspaceBytes);
      for (int64_t s = 0; s < stages; ++s) {
        const StageMemory &memory = trial.stageMemory[s];
        double stashed = std::min<double>(trial.stashedBytes[s],
                                          memory.activations);
        double inFlight = microbatchesInFlight(
            layout.schedule, stages, s, layout.microbatches,
            layout.virtualStages, /*overlapping=*/false);
        most = std::max(
            most, memory.parameters + memory.optimizerState + memory.gradients +
                      memory.inputs + memory.blasPacking + memory.libraries +
                      kSiblingScratchMargin *
                          ((memory.activations - stashed + workspace) / m +
                           stashed * inFlight / m));
      }
      return most > memory;
    };
    if (candidate.layout.recompute != "none" || !cannotFit("none"))
      return;
    if (cannotFit("full")) {
      candidate.rejected = llvm::formatv(
          "does not fit: even with full recomputation, its one-micro-batch "
          "layout's memory ({0} of scratch) split into {1} micro-batches "
          "(activations 1/{1}, stashed ones per micro-batch in flight) needs "
          "more than the device has, {2} (not partitioned)",
          formatBytes(sibling.trials.at("full").scratchBytes),
          candidate.layout.microbatches,
          formatBytes(static_cast<int64_t>(memory)));
      return;
    }
    candidate.layout.recompute = cannotFit("selective") ? "full" : "selective";
  };
  // A lower bound on `c`'s step: the analytic one, or its one-micro-batch
  // sibling's mean stage compute, with the least recomputation `c` may fit
  // with (more micro-batches may need less than the sibling did: none
  // computes less than selective, selective less than full), stretched by
  // the bubble (pipelineStepMs is at least that for any split of the work
  // between the stages).
  auto lowerBound = [&](const Candidate *c) {
    const Candidate *sibling = siblingOf(c);
    if (!sibling)
      return analyticBound(c);
    Candidate least;
    least.layout = c->layout;
    recomputeFromSibling(least, *sibling);
    double compute = 0;
    for (const char *mode : {"none", "selective", "full"}) {
      auto it = sibling->trials.find(mode);
      if (it != sibling->trials.end())
        compute = it->second.meanStageComputeMs;
      if (least.layout.recompute == mode)
        break;
    }
    return std::max(analyticBound(c), compute / (1 - bubbleOf(c->layout)));
  };
  // What the compiler cannot build in one micro-batch (more stages than
  // layers, a preset that does not match) it cannot build in several.
  auto unbuildableSibling = [&](const Candidate *c) -> const Candidate * {
    const Candidate *s = singleOf(c);
    if (c->rejected.empty() && s && !s->prediction &&
        llvm::StringRef(s->rejected)
            .starts_with("the compiler cannot build it"))
      return s;
    return nullptr;
  };
  // Not partitioned: beaten by the plans found (then by all found later:
  // the plans only get faster), or the sibling's parameters and state
  // alone do not fit.
  auto prunable = [&](const Candidate *c) {
    const Candidate *sibling = siblingOf(c);
    std::sort(fitting.begin(), fitting.end());
    bool beaten = static_cast<int64_t>(fitting.size()) >= options.keep &&
                  lowerBound(c) >= fitting[options.keep - 1];
    bool tooBig = sibling && sibling->prediction->persistentBytes >
                                 options.cluster.memoryBytes();
    return c->rejected.empty() && (beaten || tooBig);
  };
  // The search's order: by the analytic bound (stable: a layout's one
  // micro-batch before its others where they tie), so that it can stop
  // where the plans found are faster than any layout left can be.
  std::vector<Candidate *> order;
  for (Candidate &candidate : candidates)
    order.push_back(&candidate);
  if (!options.given)
    std::stable_sort(order.begin(), order.end(),
                     [&](const Candidate *a, const Candidate *b) {
                       return analyticBound(a) < analyticBound(b);
                     });
  std::set<const Candidate *> reached;
  auto beyondReach = [&](const Candidate *c) {
    std::sort(fitting.begin(), fitting.end());
    return !options.given &&
           static_cast<int64_t>(fitting.size()) >= options.keep &&
           analyticBound(c) >= fitting[options.keep - 1];
  };
  auto boundFamily = [&](const Candidate &c) {
    familyBounds.bound(c, [&](const PlanLayout &layout, int64_t globalBatch)
                              -> std::optional<Prediction> {
      return take(onceAt(layout, globalBatch)).candidate.prediction;
    });
  };
  // The recomputation retries `c` will likely need (evaluate and
  // estimateRolled try full, then selective, where none does not fit),
  // for the other threads to partition while this one tries none: where
  // even full recomputation would need about half the device (its family's
  // least-memory layout, grown to its micro-batch size) or its
  // one-micro-batch sibling needed recomputation.
  auto speculateRetries = [&](const Candidate *c) {
    if (threads < 2 || options.given || c->layout.recompute != "none")
      return;
    const Candidate *sibling =
        c->layout.microbatches > 1 ? siblingOf(c) : nullptr;
    bool pressed = familyBounds.fullRecomputeEstimate(*c) > memory / 2 ||
                   (sibling && sibling->layout.recompute != "none");
    if (!pressed)
      return;
    PlanLayout layout = c->layout;
    int64_t batch = 0;
    if (rollable(options, layout))
      std::tie(layout, batch) = rolledTemplate(options, layout);
    // Needed before the layouts queued ahead: first, full then selective.
    for (const char *mode : {"selective", "full"}) {
      layout.recompute = mode;
      prefetch(onceAt(layout, batch), /*urgent=*/true);
    }
  };
  // Evaluates a layout of one micro-batch (once): as a plan, and as the
  // sibling of its layouts of more.
  auto evaluateSingle = [&](Candidate *c) {
    if (!reached.insert(c).second)
      return;
    boundFamily(*c);
    if (c->rejected.empty())
      speculateRetries(c);
    if (options.given && c->rejected.empty() && decideByEstimate(*c))
      return;
    if (c->rejected.empty())
      evaluateAndKeep(*c);
  };
  // What the loop below evaluates first for `c` when it reaches it, as
  // far as the plans found so far tell.
  auto firstWork = [&](const Candidate *c)
      -> std::optional<std::pair<std::string, std::function<Evaluated()>>> {
    if (reached.count(c) || !c->rejected.empty() || beyondReach(c))
      return std::nullopt;
    if (auto least = familyBounds.pending(*c))
      return onceAt(least->first, least->second);
    if (c->layout.microbatches == 1 || options.given)
      return evaluation(c->layout);
    if (Candidate *s = singleOf(c); s && !reached.count(s) &&
                                    s->rejected.empty())
      return evaluation(s->layout);
    if (unbuildableSibling(c) || prunable(c))
      return std::nullopt;
    Candidate copy;
    copy.layout = c->layout;
    if (const Candidate *sibling = siblingOf(c))
      recomputeFromSibling(copy, *sibling);
    if (!copy.rejected.empty())
      return std::nullopt;
    return rollable(options, copy.layout) ? estimate(copy.layout)
                                          : evaluation(copy.layout);
  };
  // The other threads work on the next layouts meanwhile, two each (one
  // would idle while this thread evaluates what was not queued).
  size_t lookahead = 2 * (threads - 1);
  std::vector<Candidate *> pruned;
  for (size_t i = 0; i < order.size(); ++i) {
    Candidate *candidate = order[i];
    if (reached.count(candidate))
      continue;
    for (size_t j = i + 1, queued = 0; j < order.size() && queued < lookahead;
         ++j)
      if (auto work = firstWork(order[j])) {
        prefetch(std::move(*work));
        ++queued;
      }
    if (candidate->rejected.empty() && beyondReach(candidate)) {
      ++result.pruned;
      pruned.push_back(candidate);
      reached.insert(candidate);
      continue;
    }
    if (candidate->layout.microbatches == 1 || options.given) {
      evaluateSingle(candidate);
      continue;
    }
    reached.insert(candidate);
    boundFamily(*candidate);
    if (Candidate *s = singleOf(candidate))
      evaluateSingle(s);
    const Candidate *sibling = siblingOf(candidate);
    if (const Candidate *unbuildable = unbuildableSibling(candidate)) {
      candidate->rejected = unbuildable->rejected +
                            " (in one micro-batch; not partitioned)";
      continue;
    }
    if (prunable(candidate)) {
      ++result.pruned;
      pruned.push_back(candidate);
      continue;
    }
    if (candidate->rejected.empty() && sibling)
      recomputeFromSibling(*candidate, *sibling);
    if (candidate->rejected.empty())
      speculateRetries(candidate);
    if (candidate->rejected.empty() && !decideByEstimate(*candidate))
      evaluateAndKeep(*candidate);
  }
  // What the workers computed ahead and the search did not need.
  ahead.reset();
  for (Candidate &candidate : candidates) {
    if (llvm::is_contained(pruned, &candidate))
      continue;
    for (auto &[axis, size] : candidate.layout.mesh)
      candidate.interNode[axis] =
          candidate.layout.crossesNodes(axis, options.cluster.devicesPerNode);
    (candidate.rejected.empty() ? result.plans : result.rejected)
        .push_back(std::move(candidate));
  }
  std::stable_sort(result.plans.begin(), result.plans.end(), fasterPlan);
  if (!options.rollLayers)
    finishSearch(context, steps, options, result,
                 [&](const std::string &key) { return kept.take(key); });
  if (!options.writePlans)
    for (const Candidate &plan : result.plans)
      if (OwningOpRef<ModuleOp> module = kept.take(plan.layout.key()))
        result.keptModules[plan.layout.key()] =
            std::make_shared<OwningOpRef<ModuleOp>>(std::move(module));
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

void finishSearch(
    MLIRContext &context, const StepSource &steps, const SearchOptions &options,
    SearchResult &result,
    llvm::function_ref<OwningOpRef<ModuleOp>(const std::string &)> takeKept) {
  auto faster = fasterPlan;
  std::map<std::string, OwningOpRef<ModuleOp>> keptVariants;
  // Gradient buckets: the fastest plan that all-reduces gradients over a
  // data axis (ZeRO-2 and 3 reduce-scatter them) is tried with smaller
  // buckets too, which start sending earlier in the backward pass for a
  // latency each (the last bucket, sent after the last gradient, is what
  // stays exposed); a faster one joins the plans.
  if (options.searchBucketSizes && !options.given) {
    std::vector<PlanLayout> tried;
    for (size_t i = 0; i < result.plans.size() && tried.empty() &&
                       static_cast<int64_t>(i) < options.keep;
         ++i) {
      const Candidate &plan = result.plans[i];
      if (plan.layout.axisSize("dp") > 1 && !plan.prediction->estimated &&
          zeroStage(plan.layout.strategy) < 2)
        tried.push_back(plan.layout);
    }
    for (const PlanLayout &layout : tried)
      for (double bucketMb : {4.0, 1.0}) {
        if (bucketMb >= options.bucketMb)
          continue;
        Candidate variant;
        variant.layout = layout;
        variant.layout.bucketMb = bucketMb;
        ++result.candidates;
        OwningOpRef<ModuleOp> module;
        evaluateOnce(context, steps, options, variant, /*emit=*/false,
                     &module);
        const Candidate *original = nullptr;
        for (const Candidate &plan : result.plans)
          if (plan.layout.key() == layout.key())
            original = &plan;
        if (!variant.rejected.empty() ||
            variant.prediction->stepMs >= original->prediction->stepMs)
          continue;
        variant.interNode = original->interNode;
        keptVariants[variant.layout.key()] = std::move(module);
        result.plans.push_back(std::move(variant));
      }
    std::stable_sort(result.plans.begin(), result.plans.end(), faster);
  }
  // The plans shown must compile: the emitter writes each (the search
  // predicts from the memory plan alone), from the module the search kept
  // or partitioned again; one it cannot write is rejected with its reason.
  std::set<std::string> written;
  for (size_t i = 0, shown = 0; options.writePlans && i < result.plans.size() &&
                                static_cast<int64_t>(shown) < options.keep;) {
    Candidate &plan = result.plans[i];
    if (written.count(plan.layout.key())) {
      ++i, ++shown;
      continue;
    }
    if (plan.prediction->estimated &&
        unrolledOps(plan.layout, *plan.prediction) > options.maxUnrolledOps) {
      // Too big to unroll: shown as estimated, not written.
      ++i, ++shown;
      continue;
    }
    if (plan.prediction->estimated) {
      // An estimate that reached the plans shown (one before it could not
      // be written) is unrolled, and takes its place by its own numbers.
      evaluateOnce(context, steps, options, plan, /*emit=*/true);
      if (plan.rejected.empty()) {
        written.insert(plan.layout.key());
        std::stable_sort(result.plans.begin() + i, result.plans.end(),
                         faster);
        continue;
      }
      result.rejected.push_back(std::move(plan));
      result.plans.erase(result.plans.begin() + i);
      continue;
    }
    OwningOpRef<ModuleOp> module = takeKept(plan.layout.key());
    if (auto it = keptVariants.find(plan.layout.key());
        !module && it != keptVariants.end())
      module = std::move(it->second);
    if (module) {
      std::string stepName;
      bool distributed =
          plan.layout.ranks() > 1 || plan.layout.microbatches > 1;
      if (llvm::Expected<ModuleOp> base = steps(distributed, stepName)) {
        Refusal rejectWith(context, plan);
        // The search partitioned it without verifying (evaluateOnce).
        if (failed(mlir::verify(*module)))
          rejectWith(llvm::make_error<DiagnosedError>());
        else if (llvm::Error error = checkEmits(
                     module->lookupSymbol<func::FuncOp>(stepName),
                     options.target))
          rejectWith(std::move(error));
      } else {
        llvm::consumeError(base.takeError());
      }
    } else {
      evaluateOnce(context, steps, options, plan, /*emit=*/true);
    }
    if (plan.rejected.empty()) {
      ++i, ++shown;
      continue;
    }
    result.rejected.push_back(std::move(plan));
    result.plans.erase(result.plans.begin() + i);
  }
  std::stable_sort(result.rejected.begin(), result.rejected.end(), faster);
  std::stable_partition(result.rejected.begin(), result.rejected.end(),
                        [](const Candidate &c) { return !c.sameProgram; });
}

StepSource trainingSteps(mlir::ModuleOp model,
                         mlir::cleave::TrainingOptions training) {
  struct Built {
    std::map<bool, mlir::OwningOpRef<mlir::ModuleOp>> modules;
    std::string stepName;
  };
  auto built = std::make_shared<Built>();
  return [model, training, built](
             bool distributed,
             std::string &name) mutable -> llvm::Expected<mlir::ModuleOp> {
    auto it = built->modules.find(distributed);
    if (it == built->modules.end()) {
      mlir::OwningOpRef<mlir::ModuleOp> copy = model.clone();
      mlir::cleave::TrainingOptions options = training;
      options.distributed = distributed;
      llvm::Expected<mlir::func::FuncOp> step =
          mlir::cleave::buildTrainingStep(*copy, options);
      if (!step)
        return step.takeError();
      built->stepName = step->getSymName().str();
      it = built->modules.emplace(distributed, std::move(copy)).first;
    }
    name = built->stepName;
    return *it->second;
  };
}

} // namespace cleave::planner
