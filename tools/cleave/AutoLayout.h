//===- AutoLayout.h - `cleave compile --strategy auto` ----------*- C++ -*-===//
//
// Runs the planner on the model being compiled and returns the fastest
// layout the compiler can build on the cluster that fits its memory,
// printing the choice, why, and the faster layouts it had to skip.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_AUTOLAYOUT_H
#define CLEAVE_TOOLS_CLEAVE_AUTOLAYOUT_H

#include "passes/Pipelines.h"
#include "planner/Planner.h"

#include "llvm/Support/CommandLine.h"

namespace cleave::driver {

namespace cl = llvm::cl;

/// The cluster flags of `--strategy auto`.
struct AutoLayoutFlags {
  explicit AutoLayoutFlags(cl::SubCommand &sub)
      : cluster("cluster",
                cl::desc("With --strategy auto: the cluster, a preset "
                         "(dgx-a100-40g, dgx-a100-80g, dgx-h100) or a "
                         "YAML/JSON file"),
                cl::value_desc("PRESET|FILE"), cl::sub(sub)),
        nodes("nodes", cl::desc("With --strategy auto: nodes to plan for"),
              cl::value_desc("N"), cl::init(0), cl::sub(sub)),
        ranks("ranks",
              cl::desc("With --strategy auto: devices in all (instead of "
                       "--nodes)"),
              cl::value_desc("N"), cl::init(0), cl::sub(sub)),
        threads("threads",
                cl::desc("With --strategy auto: threads the planner "
                         "evaluates layouts on (default 0: one per hardware "
                         "thread; the choice is the same for any count)"),
                cl::value_desc("N"), cl::init(0), cl::sub(sub)) {}

  bool given() const {
    return !cluster.empty() || nodes.getNumOccurrences() ||
           ranks.getNumOccurrences() || threads.getNumOccurrences();
  }

  cl::opt<std::string> cluster;
  cl::opt<int64_t> nodes, ranks;
  cl::opt<unsigned> threads;
};

/// Plans the imported `module` (before its training step, which is built
/// with `training`) and returns the chosen layout, or an error saying why
/// there is none. Prints the choice to `os`. The gradient bucket size is
/// searched unless the user gave one (`bucketMbGiven`).
llvm::Expected<planner::PlanLayout>
chooseLayout(mlir::MLIRContext &context, mlir::ModuleOp module,
             const mlir::cleave::TrainingOptions &training,
             const std::vector<mlir::cleave::ShardingHint> &hints,
             const AutoLayoutFlags &flags, mlir::cleave::Target target,
             double bucketMb, bool bucketMbGiven, llvm::raw_ostream &os);

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_AUTOLAYOUT_H
