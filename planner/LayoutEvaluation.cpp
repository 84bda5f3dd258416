//===- LayoutEvaluation.cpp - partitioning and predicting one layout ------===//

#include "planner/LayoutEvaluation.h"

#include "planner/LayerRolledStep.h"
#include "planner/RolledStep.h"

#include "codegen/MemoryPlan.h"
#include "dialects/cleave/CleaveOps.h"
#include "passes/Pipelines.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/FormatVariadic.h"

#include <tuple>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// "parameters and state P, scratch S" of the stage that needs the most
/// (named when there are stages): the parts of peakBytesPerRank.
std::string peakParts(const Prediction &p) {
  if (p.stageMemory.empty())
    return llvm::formatv("parameters and state {0}, scratch {1}",
                         formatBytes(p.persistentBytes),
                         formatBytes(p.scratchBytes));
  const StageMemory &m = p.stageMemory[p.peakStage];
  return llvm::formatv("{0}parameters and state {1}, scratch {2}",
                       p.stageMemory.size() > 1
                           ? llvm::formatv("stage {0}: ", p.peakStage).str()
                           : std::string(),
                       formatBytes(m.parameters + m.optimizerState),
                       formatBytes(m.gradients + m.activations));
}

/// ", workspaces W, inputs I, BLAS packing B, libraries' own L": what the fit
/// counts beside peakBytesPerRank
/// (the most of any stage, each part left out where it is none).
std::string besidePeakParts(const Prediction &p) {
  std::string parts;
  if (p.workspaceBytes)
    parts += ", workspaces " + formatBytes(p.workspaceBytes);
  if (p.inputBytes)
    parts += ", inputs " + formatBytes(p.inputBytes);
  if (p.blasPackingBytes)
    parts += ", BLAS packing " + formatBytes(p.blasPackingBytes);
  if (p.libraryBytes)
    parts += ", libraries' own " + formatBytes(p.libraryBytes);
  return parts;
}

/// Each rank's pipeline stage: its coordinate along the pipeline axis of
/// the row-major mesh (0 without one).
std::vector<int64_t> stagesOfRanks(const PlanLayout &layout) {
  int64_t stride = 1, stages = 1;
  for (auto it = layout.mesh.rbegin(); it != layout.mesh.rend(); ++it) {
    if (it->first == layout.pipelineAxis) {
      stages = it->second;
      break;
    }
    stride *= it->second;
  }
  std::vector<int64_t> stage(layout.ranks());
  for (int64_t rank = 0; rank < layout.ranks(); ++rank)
    stage[rank] = rank / stride % stages;
  return stage;
}

/// Partitions a copy of the step for `candidate.layout` and predicts it.
/// With `emit`, also has the emitter write the program (checkEmits). The
/// partitioned module of a plan that fits moves to `kept` when given.
/// With `globalBatch`, the step is options.stepAtBatch's at that batch;
/// with `layers`, options.stepWithLayers' (the model cut down to that
/// many of its repeated layers; at the search's batch without one).
void partitionAndPredict(MLIRContext &context, const StepSource &steps,
                         const SearchOptions &options, Candidate &candidate,
                         bool emit, OwningOpRef<ModuleOp> *kept,
                         int64_t globalBatch, int64_t layers = 0) {
  const PlanLayout &layout = candidate.layout;
  Refusal rejectWith(context, candidate);
  std::string stepName;
  bool distributed = layout.ranks() > 1 || layout.microbatches > 1;
  llvm::Expected<ModuleOp> base =
      layers        ? options.stepWithLayers(layers, globalBatch, stepName)
      : globalBatch ? options.stepAtBatch(globalBatch, stepName)
                    : steps(distributed, stepName);
  if (!base)
    return rejectWith(base.takeError());
  OwningOpRef<ModuleOp> module = base->clone();
  auto step = module->lookupSymbol<func::FuncOp>(stepName);
  LayoutOptions lo;
  if (!layout.mesh.empty()) {
    llvm::Expected<MeshAttr> mesh = parseMesh(&context, layout.meshText());
    if (!mesh)
      return rejectWith(mesh.takeError());
    lo.mesh = *mesh;
    (*module)->setAttr(CleaveDialect::kMeshAttrName, lo.mesh);
  }
  lo.hints = options.hints;
  if (layout.intraOp)
    llvm::append_range(lo.hints, layout.intraOp->hints);
  lo.bucketMb = layout.bucketMb > 0 ? layout.bucketMb : options.bucketMb;
  lo.strategy = layout.strategy;
  lo.microbatches = layout.microbatches;
  lo.pipelineAxis = layout.pipelineAxis;
  lo.schedule = layout.schedule;
  lo.virtualStages = layout.virtualStages;
  lo.recompute = layout.recompute;
  lo.pipelineCuts = layout.pipelineCuts;
  lo.pipelineLinkBalance = layout.pipelineLinkBalance;
  lo.pipelineCutMicrobatches = layout.cutMicrobatches;
  // A copy to predict, not to compile: the passes are compile's, verified
  // there.
  lo.verifyEachPass = false;
  if (llvm::Error error = validateLayout(lo, /*inference=*/false))
    return rejectWith(std::move(error));
  if (llvm::Error error = partitionForLayout(*module, step, lo))
    return rejectWith(std::move(error));
  llvm::Expected<Prediction> prediction = predictStep(
      step, options.cluster, layout.microbatches, layout.virtualStages,
      options.target, options.precision, options.nodeTimes);
  if (!prediction)
    return rejectWith(prediction.takeError());
  if (emit) {
    // Partitioned without the verifier between passes (above).
    if (failed(mlir::verify(*module)))
      return rejectWith(llvm::make_error<DiagnosedError>());
    if (llvm::Error error = checkEmits(step, options.target))
      return rejectWith(std::move(error));
  }
  int64_t needed = prediction->neededBytesPerRank;
  // A plan is a program the compiler builds: a layout that fits is
  // verified (its passes ran without the verifier), so that no sharding
  // compile's verifier refuses is ranked (the emit check above runs on the
  // plans shown only).
  if (!emit && needed <= options.cluster.memoryBytes() &&
      failed(mlir::verify(*module)))
    return rejectWith(llvm::make_error<DiagnosedError>());
  candidate.prediction = *prediction;
  if (needed > options.cluster.memoryBytes())
    candidate.rejected = llvm::formatv(
        "does not fit: needs {0} per rank ({1}{2}), the device has {3}",
        formatBytes(needed), peakParts(*prediction),
        besidePeakParts(*prediction),
        formatBytes(options.cluster.memoryBytes()));
  if (kept && candidate.rejected.empty())
    *kept = std::move(module);
}

/// Whether the search's first pass predicts `layout` from fewer layers
/// (a layout of one rank and one micro-batch builds another step).
bool rollsLayers(const SearchOptions &options, const PlanLayout &layout) {
  return options.rollLayers && options.layers && options.stepWithLayers &&
         (layout.ranks() > 1 || layout.microbatches > 1);
}

/// Predicts `candidate.layout` from the same layout on the model cut down
/// to fewer layers (LayerRolledStep.h); the interleaved schedule through
/// its two-micro-batch 1F1B template (RolledStep.h). Where a template
/// cannot be built, the layout is partitioned in full.
void predictFromLayers(MLIRContext &context, const StepSource &steps,
                       const SearchOptions &options, Candidate &candidate,
                       int64_t globalBatch) {
  const PlanLayout &layout = candidate.layout;
  int64_t batch = globalBatch ? globalBatch : options.globalBatch;
  std::optional<Prediction> predicted;
  if (layout.schedule == PipelineSchedule::Interleaved) {
    // (Through its template at another batch, which only a search that
    // binds the batch itself builds.)
    if (!options.stepAtBatch)
      return partitionAndPredict(context, steps, options, candidate,
                                 /*emit=*/false, nullptr, globalBatch);
    Candidate two;
    two.layout = rolledTemplate(options, layout).first;
    predictFromLayers(context, steps, options, two,
                      batch / layout.microbatches * 2);
    if (!two.prediction || !two.prediction->layerTemplateStages)
      return partitionAndPredict(context, steps, options, candidate,
                                 /*emit=*/false, nullptr, globalBatch);
    predicted = rollPrediction(*two.prediction, two.layout.schedule,
                               layout.schedule, layout.microbatches,
                               layout.virtualStages, stagesOfRanks(layout));
  } else {
    std::vector<LayerTemplate> templates = layerTemplates(
        layout, options.layers->startNames, options.layers->count);
    std::vector<Prediction> shallow;
    for (const LayerTemplate &t : templates) {
      Candidate c;
      c.layout = t.layout;
      partitionAndPredict(context, steps, options, c, /*emit=*/false,
                          /*kept=*/nullptr, batch, t.layers);
      if (!c.prediction)
        return partitionAndPredict(context, steps, options, candidate,
                                   /*emit=*/false, nullptr, globalBatch);
      shallow.push_back(std::move(*c.prediction));
    }
    predicted = rollLayers(layout, templates, shallow, options.layers->count);
  }
  const Prediction &p = *predicted;
  int64_t needed = p.neededBytesPerRank;
  if (needed > options.cluster.memoryBytes())
    candidate.rejected = llvm::formatv(
        "does not fit: needs about {0} per rank (estimated from the same "
        "layout{1}: {2}{4}), the device has {3}",
        formatBytes(needed), fewerLayersNote(p), peakParts(p),
        formatBytes(options.cluster.memoryBytes()), besidePeakParts(p));
  candidate.prediction = std::move(predicted);
}

} // namespace

/// partitionAndPredict, through `memo` where given (not with `emit`):
/// its prediction and reason are what any thread found for the layout at
/// that batch. The module is kept only where this call partitioned it.
void evaluateOnce(MLIRContext &context, const StepSource &steps,
                  const SearchOptions &options, Candidate &candidate,
                  bool emit, OwningOpRef<ModuleOp> *kept,
                  int64_t globalBatch, EvaluationMemo *memo) {
  if (!emit && rollsLayers(options, candidate.layout))
    kept = nullptr;
  auto compute = [&](Candidate &fresh, OwningOpRef<ModuleOp> *module) {
    if (!emit && rollsLayers(options, fresh.layout))
      return predictFromLayers(context, steps, options, fresh, globalBatch);
    partitionAndPredict(context, steps, options, fresh, emit, module,
                        globalBatch);
  };
  if (!memo || emit)
    return compute(candidate, kept);
  OwningOpRef<ModuleOp> module;
  bool computed = false;
  Candidate result = memo->get(
      candidate.layout.key() + "|" + std::to_string(globalBatch),
      [&] {
        Candidate fresh;
        fresh.layout = candidate.layout;
        compute(fresh, kept ? &module : nullptr);
        return fresh;
      },
      computed);
  candidate.prediction = std::move(result.prediction);
  candidate.rejected = std::move(result.rejected);
  if (kept && computed)
    *kept = std::move(module);
}

bool doesNotFit(const Candidate &candidate) {
  return llvm::StringRef(candidate.rejected).starts_with("does not fit");
}

namespace {

/// Retries `candidate`, which does not fit, with more recomputation
/// (`attempt(mode)` evaluates it so): full first, as it keeps the least
/// (when it does not fit, neither does selective); then, when full fits
/// and the candidate recomputed nothing, selective, which is faster where
/// it fits. Recomputation costs time, so it is chosen only where memory
/// demands it.
template <typename Attempt>
void recomputeToFit(Candidate &candidate, Attempt attempt) {
  llvm::StringRef mode = candidate.layout.recompute;
  if (mode == "full")
    return;
  bool fromNone = mode == "none";
  Candidate full = attempt("full");
  if (doesNotFit(full) || (!fromNone && !full.rejected.empty() &&
                           !full.prediction)) {
    if (doesNotFit(full))
      candidate = std::move(full);
    return;
  }
  if (fromNone) {
    Candidate selective = attempt("selective");
    if (selective.rejected.empty() || !full.rejected.empty()) {
      if (selective.rejected.empty() || doesNotFit(selective))
        candidate = std::move(selective);
      return;
    }
  }
  if (full.rejected.empty())
    candidate = std::move(full);
}

} // namespace

/// evaluateOnce; a searched layout whose activations do not fit is tried
/// again recomputing them (recomputeToFit), but not where the parameters
/// and state alone do not fit (it shrinks only activations). With
/// `globalBatch`, the step at that batch (evaluateOnce).
void evaluate(MLIRContext &context, const StepSource &steps,
              const SearchOptions &options, Candidate &candidate,
              OwningOpRef<ModuleOp> *kept, int64_t globalBatch,
              EvaluationMemo *memo) {
  std::map<std::string, Candidate::RecomputeTrial> trials;
  auto record = [&](const Candidate &tried) {
    if (!tried.prediction)
      return;
    const Prediction &p = *tried.prediction;
    Candidate::RecomputeTrial &trial = trials[tried.layout.recompute];
    trial.scratchBytes = p.scratchBytes + p.workspaceBytes;
    for (const StageShare &share : p.stageShares)
      trial.meanStageComputeMs += share.computeMs / p.stageShares.size();
    trial.stageMemory = p.stageMemory;
    for (const StageShare &share : p.stageShares)
      trial.stashedBytes.push_back(share.stashedBytes);
    trial.neededBytes = p.neededBytesPerRank;
    trial.stepMs = p.stepMs;
  };
  evaluateOnce(context, steps, options, candidate, /*emit=*/false, kept,
               globalBatch, memo);
  record(candidate);
  if (!options.given && doesNotFit(candidate) &&
      candidate.prediction->persistentBytes <= options.cluster.memoryBytes())
    recomputeToFit(candidate, [&](const char *mode) {
      Candidate retry;
      retry.layout = candidate.layout;
      retry.layout.recompute = mode;
      evaluateOnce(context, steps, options, retry, /*emit=*/false, kept,
                   globalBatch, memo);
      record(retry);
      return retry;
    });
  // A one-micro-batch layout is the sibling of the same layout with more
  // micro-batches, which it bounds with each mode it tried (the search's
  // recomputeFromSibling). One that does not fit even with full
  // recomputation tries selective too, though that cannot fit either, so
  // that those layouts are known to need full recomputation (and its
  // compute) without partitioning them.
  if (!options.given && !globalBatch && candidate.layout.microbatches == 1 &&
      doesNotFit(candidate) && trials.count("full") &&
      !trials.count("selective")) {
    Candidate retry;
    retry.layout = candidate.layout;
    retry.layout.recompute = "selective";
    evaluateOnce(context, steps, options, retry, /*emit=*/false,
                 /*kept=*/nullptr, globalBatch, memo);
    record(retry);
  }
  candidate.trials = std::move(trials);
}


/// Whether `layout` is predicted from its two-micro-batch template first.
bool rollable(const SearchOptions &options, const PlanLayout &layout) {
  return options.stepAtBatch &&
         (layout.microbatches > 2 ||
          (layout.microbatches == 2 &&
           layout.schedule == PipelineSchedule::Interleaved));
}

/// The ops of `layout`'s unrolled step, from its template's prediction.
int64_t unrolledOps(const PlanLayout &layout, const Prediction &two) {
  return two.ops + (layout.microbatches / 2 - 1) * two.microbatchOps;
}

std::pair<PlanLayout, int64_t> rolledTemplate(const SearchOptions &options,
                                              const PlanLayout &layout) {
  PlanLayout two = layout;
  two.microbatches = 2;
  // Cut as the layout's micro-batches are: what runs once per step (the
  // updates, a tied weight's gradient) weighs more among two micro-batches'
  // work and transfers and could move the cut.
  two.cutMicrobatches = layout.microbatches;
  two.virtualStages = 1;
  if (layout.schedule == PipelineSchedule::Interleaved)
    two.schedule = PipelineSchedule::OneFOneB;
  return {two, options.globalBatch / layout.microbatches * 2};
}

/// Predicts a micro-batched `candidate` by rolling out the same layout
/// with two micro-batches of the same size (partitioned at the global
/// batch that gives them that size, 1F1B for the interleaved schedule):
/// candidate.prediction is the estimate, candidate.rejected says when it
/// needs more memory than the device has. A searched layout whose
/// estimate does not fit tries recomputation as evaluate does. Returns
/// false when the template cannot be built, with the template's reason in
/// candidate.rejected.
bool estimateRolled(MLIRContext &context, const StepSource &steps,
                    const SearchOptions &options, Candidate &candidate,
                    EvaluationMemo *memo) {
  const PlanLayout &layout = candidate.layout;
  Candidate two;
  int64_t batch;
  std::tie(two.layout, batch) = rolledTemplate(options, layout);
  evaluate(context, steps, options, two, /*kept=*/nullptr, batch, memo);
  if (!two.prediction) {
    candidate.rejected = two.rejected;
    return false;
  }
  Candidate rolled;
  rolled.layout = layout;
  rolled.layout.recompute = two.layout.recompute;
  rolled.prediction = rollPrediction(
      *two.prediction, two.layout.schedule, layout.schedule,
      layout.microbatches, layout.virtualStages, stagesOfRanks(layout));
  const Prediction &p = *rolled.prediction;
  int64_t needed = p.neededBytesPerRank;
  if (needed > options.cluster.memoryBytes())
    rolled.rejected = llvm::formatv(
        "does not fit: needs about {0} per rank (estimated from {1} "
        "micro-batches of the same size{5}: {2}{3}), the device has {4}",
        formatBytes(needed), 2, peakParts(p), besidePeakParts(p),
        formatBytes(options.cluster.memoryBytes()), fewerLayersNote(p));
  else if (!two.rejected.empty())
    rolled.rejected = two.rejected;
  // What each recomputation mode tried needs (Candidate::trials).
  std::map<std::string, Candidate::RecomputeTrial> trials;
  auto record = [&](const Candidate &tried) {
    if (!tried.prediction)
      return;
    Candidate::RecomputeTrial &trial = trials[tried.layout.recompute];
    trial.neededBytes = tried.prediction->neededBytesPerRank;
    trial.stepMs = tried.prediction->stepMs;
  };
  record(rolled);
  // The template fits its own two micro-batches, the layout may not.
  if (!options.given && doesNotFit(rolled) &&
      p.persistentBytes <= options.cluster.memoryBytes())
    recomputeToFit(rolled, [&](const char *mode) {
      Candidate retry;
      retry.layout = layout;
      retry.layout.recompute = mode;
      if (!estimateRolled(context, steps, options, retry, memo))
        retry.rejected = "the compiler cannot build it";
      record(retry);
      return retry;
    });
  // Modes only the template tried: what two micro-batches need is at
  // most what more need (their step is not the layout's).
  for (const auto &[mode, trial] : two.trials)
    if (!trials.count(mode)) {
      trials[mode].neededBytes = trial.neededBytes;
      trials[mode].stepMs = 0;
    }
  rolled.trials = std::move(trials);
  rolled.interNode = candidate.interNode;
  candidate = std::move(rolled);
  return true;
}


} // namespace cleave::planner
