//===- LayoutEvaluation.h - partitioning and predicting one layout -*- C++ -*-===//
//
// What the search does to one layout: partition a copy of the training
// step for it (partitionForLayout) and predict it (predictStep), trying
// more recomputation where it does not fit, or roll a micro-batched
// layout's prediction out of the same layout with two micro-batches
// (RolledStep.h). Each depends on the layout (and batch) alone, so the
// search's threads may run them in any order and share their results
// (EvaluationMemo).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_LAYOUTEVALUATION_H
#define CLEAVE_PLANNER_LAYOUTEVALUATION_H

#include "planner/Planner.h"

#include "passes/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace cleave::planner {

/// Records why the compiler cannot build a candidate: the first error
/// diagnostic while it lives (a layout's diagnostics are its reason, not
/// the user's error), else the error's message. Only its own thread's:
/// other threads evaluate other layouts in the same context.
class Refusal {
public:
  Refusal(mlir::MLIRContext &context, Candidate &candidate)
      : candidate(candidate), thread(std::this_thread::get_id()),
        capture(&context, [this](mlir::Diagnostic &diag) {
          if (std::this_thread::get_id() != thread)
            return mlir::failure();
          if (diag.getSeverity() == mlir::DiagnosticSeverity::Error &&
              reason.empty())
            reason = diag.str();
          return mlir::success();
        }) {}
  void operator()(llvm::Error error) {
    llvm::handleAllErrors(
        std::move(error), [](const mlir::cleave::DiagnosedError &) {},
        [&](const llvm::ErrorInfoBase &info) {
          if (reason.empty())
            reason = info.message();
        });
    candidate.rejected = reason.empty()
                             ? "the compiler cannot build it"
                             : "the compiler cannot build it: " + reason;
  }

private:
  Candidate &candidate;
  std::string reason;
  std::thread::id thread;
  mlir::ScopedDiagnosticHandler capture;
};

/// Layouts partitioned at a batch and predicted, by layout and batch: a
/// layout's two-micro-batch template serves its 1F1B and interleaved
/// layouts and each recomputation retry of either (17% of a 175B search
/// partitioned a template already partitioned), and what another thread
/// evaluated ahead (a recomputation retry the search may need next) is
/// taken, not computed again. A thread asking for what another is
/// computing waits for it (evaluating one layout never asks for another).
class EvaluationMemo {
public:
  /// The prediction and reason for `key`: remembered, awaited from the
  /// thread computing it, or `compute`d here (`computed` then set).
  Candidate get(const std::string &key, llvm::function_ref<Candidate()> compute,
                bool &computed) {
    std::unique_lock<std::mutex> lock(mutex);
    auto it = known.find(key);
    if (it != known.end()) {
      std::shared_future<Candidate> result = it->second;
      lock.unlock();
      computed = false;
      return result.get();
    }
    std::promise<Candidate> promise;
    known.emplace(key, promise.get_future().share());
    lock.unlock();
    Candidate result = compute();
    promise.set_value(result);
    computed = true;
    return result;
  }

private:
  std::mutex mutex;
  std::map<std::string, std::shared_future<Candidate>> known;
};

/// How far rollPrediction's estimate may be from the unrolled step's
/// prediction: an estimate within this of a limit decides nothing.
/// test/planner/rolled-step.test measures it on GPT skeletons (data,
/// tensor and pipeline parallelism, ZeRO, GPipe and 1F1B, 4 to 16
/// micro-batches): step time within 0.8%, memory 11% under to 2.3% over
/// (a 1F1B stage's transient buffers grow once micro-batches overlap; most
/// on the smallest skeleton). The interleaved schedule is estimated from
/// 1F1B's template (its chunks hand over twice as often and split the
/// layers differently): 10% on time, 13% under on memory; it is estimated
/// only when too big to unroll.
inline constexpr double kRolledTimeTolerance = 0.10, kRolledMemoryTolerance = 0.15,
                 kInterleavedTolerance = 0.25;

/// Partitions a copy of the step for `candidate.layout` and predicts it,
/// through `memo` where given (not with `emit`: then the emitter also
/// writes the program, checkEmits). The partitioned module of a plan that
/// fits moves to `kept` when given (where this call partitioned it). With
/// `globalBatch`, the step is options.stepAtBatch's at that batch.
void evaluateOnce(mlir::MLIRContext &context, const StepSource &steps,
                  const SearchOptions &options, Candidate &candidate,
                  bool emit = false,
                  mlir::OwningOpRef<mlir::ModuleOp> *kept = nullptr,
                  int64_t globalBatch = 0, EvaluationMemo *memo = nullptr);

/// Whether `candidate` was rejected for memory.
bool doesNotFit(const Candidate &candidate);

/// evaluateOnce; a searched layout whose activations do not fit is tried
/// again recomputing them, and the modes tried are recorded in
/// candidate.trials (they bound the same layout with more micro-batches).
void evaluate(mlir::MLIRContext &context, const StepSource &steps,
              const SearchOptions &options, Candidate &candidate,
              mlir::OwningOpRef<mlir::ModuleOp> *kept = nullptr,
              int64_t globalBatch = 0, EvaluationMemo *memo = nullptr);

/// Whether `layout` is predicted from its two-micro-batch template first.
bool rollable(const SearchOptions &options, const PlanLayout &layout);

/// The ops of `layout`'s unrolled step, from its template's prediction.
int64_t unrolledOps(const PlanLayout &layout, const Prediction &two);

/// The layout and global batch `layout` is rolled out from: two
/// micro-batches of its size, one chunk per stage (1F1B for the
/// interleaved schedule).
std::pair<PlanLayout, int64_t> rolledTemplate(const SearchOptions &options,
                                              const PlanLayout &layout);

/// Predicts a micro-batched `candidate` by rolling out the same layout
/// with two micro-batches of the same size (1F1B for the interleaved
/// schedule): candidate.prediction is the estimate, candidate.rejected
/// says when it needs more memory than the device has. Returns false when
/// the template cannot be built, with the template's reason in
/// candidate.rejected.
bool estimateRolled(mlir::MLIRContext &context, const StepSource &steps,
                    const SearchOptions &options, Candidate &candidate,
                    EvaluationMemo *memo = nullptr);

/// Whether plan `a` ranks before `b`: predicted first, faster, smaller,
/// then by key.
bool fasterPlan(const Candidate &a, const Candidate &b);

/// The threads a search runs on: `requested`, or all the machine's for 0;
/// one where the context cannot be shared between threads.
unsigned searchThreads(mlir::MLIRContext &context, unsigned requested);

/// `steps` and `options`' other step sources made safe to call from
/// several threads: one builds or looks up a step at a time, whichever
/// source and thread asks (they share one context and their caches).
StepSource oneAtATime(StepSource steps, SearchOptions &options);

/// One search over the layouts (searchPlans' pass: with
/// options.rollLayers, every layout predicted from fewer layers, the plans
/// not finished), its evaluations remembered in `memo` where given (shared
/// by searches of the same options but the given layout).
SearchResult searchLayouts(mlir::MLIRContext &context, const StepSource &steps,
                           const SearchOptions &options,
                           EvaluationMemo *memo = nullptr);

/// What a search does once it has ranked its plans: the fastest plan that
/// all-reduces gradients is tried with smaller buckets, the plans shown
/// are written by the emitter (from the module `takeKept` gives for a
/// layout's key, or partitioned again), and the rejected layouts are
/// ranked.
void finishSearch(
    mlir::MLIRContext &context, const StepSource &steps,
    const SearchOptions &options, SearchResult &result,
    llvm::function_ref<mlir::OwningOpRef<mlir::ModuleOp>(const std::string &)>
        takeKept);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_LAYOUTEVALUATION_H
