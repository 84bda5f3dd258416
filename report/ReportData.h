//===- ReportData.h - what `cleave report` reads ----------------*- C++ -*-===//
//
// The three inputs of a report, read into plain structs with messages that
// name the file and the field: the plans of `cleave plan --json`, a
// training run's log (`./train --log`, JSON lines) and its timeline
// (`./train --trace`, Chrome trace-event JSON). A log or trace names the
// program that wrote it (model, mesh); chooseRunPlan finds the plan it
// ran, or says that it is from another program.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_REPORT_REPORTDATA_H
#define CLEAVE_REPORT_REPORTDATA_H

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cleave::report {

/// Bytes per rank by kind.
struct MemoryParts {
  int64_t parameters = 0, gradients = 0, optimizerState = 0, activations = 0,
          workspace = 0;
  int64_t total() const {
    return parameters + gradients + optimizerState + activations + workspace;
  }
};

struct MeshAxis {
  std::string name;
  int64_t size = 1;
  /// What the axis does ("data parallel, ZeRO-2") and its link.
  std::string role, link;
};

/// A span of a stage's timeline (predicted or measured).
struct Slice {
  int64_t stage = 0, microbatch = -1;
  /// "forward", "backward", "forward+backward", "update", "other", or a
  /// collective's name.
  std::string kind;
  double startMs = 0, endMs = 0;
};

struct CollectiveRow {
  int64_t stage = 0;
  std::string kind, axes;
  int64_t count = 0, bytes = 0;
  double ms = 0;
};

struct HeldTensor {
  std::string name, role, sharding;
  int64_t stage = -1, bytes = 0;
  std::vector<int64_t> shape;
};

/// One plan (or rejected layout) of the plan file.
struct Plan {
  /// Place among the plans, 1 = best; 0: rejected.
  int64_t place = 0;
  std::string meshFlag, strategy, pipelineAxis, reason;
  std::vector<MeshAxis> mesh;
  int64_t microbatches = 1;
  std::vector<std::string> flags;
  bool predicted = false;
  double stepMs = 0, computeMs = 0, commMs = 0, bubbleMs = 0;
  int64_t peakBytes = 0, commBytes = 0;
  /// Per stage (one entry without stages); empty when the file has no
  /// details for this plan.
  std::vector<MemoryParts> memoryByStage;
  std::vector<Slice> schedule;
  std::vector<CollectiveRow> collectives;
  std::vector<HeldTensor> tensors;

  int64_t ranks() const;
  int64_t stages() const;
  /// The pipeline stage of `rank` (ranks are mesh coordinates row-major).
  int64_t stageOfRank(int64_t rank) const;
  /// The coordinates of `rank` along the mesh axes.
  std::vector<int64_t> coordsOfRank(int64_t rank) const;
  bool hasDetails() const { return !memoryByStage.empty(); }
};

struct PlanFile {
  std::string path, model, cluster, target;
  int64_t devices = 0, deviceMemoryBytes = 0, globalBatch = 0;
  std::vector<Plan> plans, rejected;
};

/// Which program wrote a log or trace.
struct RunIdentity {
  std::string model, mesh;
  int64_t ranks = 1;
};

/// A rank's memory as the program measured it.
struct MeasuredMemory {
  int64_t parameters = 0, optimizerState = 0, scratch = 0;
};

struct RunLog {
  std::string path;
  /// (step, loss); a NaN loss for `null` (a non-finite loss).
  std::vector<std::pair<int64_t, double>> losses;
  std::optional<RunIdentity> run;
  /// One entry per rank when the log has them.
  std::vector<MeasuredMemory> memory;
};

struct TraceEvent {
  int64_t rank = 0, tid = 0;
  /// The ONNX node, the phase ("forward", ..., "collective", "step") and
  /// the op's kind ("gemm", "all_gather", ...).
  std::string name, category, op;
  double startUs = 0, durationUs = 0;
  int64_t stage = -1, microbatch = -1, bytes = -1, peer = -1, step = -1;
};

struct Trace {
  std::string path;
  std::optional<RunIdentity> run;
  std::vector<TraceEvent> events;
};

/// Parses `cleave plan --json`'s output; `path` names it in messages.
llvm::Expected<PlanFile> parsePlanFile(const llvm::json::Value &root,
                                       llvm::StringRef path);
llvm::Expected<PlanFile> readPlanFile(llvm::StringRef path);
llvm::Expected<RunLog> readRunLog(llvm::StringRef path);
llvm::Expected<Trace> readTrace(llvm::StringRef path);

/// The plan a run with `run` (from `what`, "the log 'x'") executed: the
/// plan with its mesh whose predicted parameters and state per rank equal
/// `memory`'s where given, else the best with its mesh. Fails, saying so,
/// when the run's model or mesh is none of the plan file's.
llvm::Expected<const Plan *>
chooseRunPlan(const PlanFile &plans, const RunIdentity &run,
              const std::vector<MeasuredMemory> &memory, llvm::StringRef what);

} // namespace cleave::report

#endif // CLEAVE_REPORT_REPORTDATA_H
