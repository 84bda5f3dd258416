//===- DistributionFlags.h - mesh, hints and strategy flags -----*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_DISTRIBUTIONFLAGS_H
#define CLEAVE_TOOLS_CLEAVE_DISTRIBUTIONFLAGS_H

#include "passes/PipelineSchedule.h"
#include "passes/ShardingHints.h"

#include "llvm/Support/CommandLine.h"

namespace cleave::driver {

namespace cl = llvm::cl;

/// `--strategy auto`: the planner chooses the layout (cleave compile
/// --cluster ... --ranks N). Not a preset of the passes: the driver
/// resolves it into a mesh, a preset, stages and micro-batches first.
inline constexpr auto kAutoStrategy = static_cast<mlir::cleave::Strategy>(-1);

/// How `cleave compile` distributes a model: the mesh and the hints.
struct DistributionFlags {
  explicit DistributionFlags(cl::SubCommand &sub)
      : mesh("mesh",
             cl::desc("Device mesh: named axes mapped row-major onto "
                      "ranks (dp=2,tp=2); the program then runs under "
                      "mpirun -np <product>"),
             cl::value_desc("AXIS=SIZE,..."), cl::sub(sub)),
        shard("shard",
              cl::desc("Sharding hint GLOB=[d0,d1,...][@PRIORITY], each dim "
                       "'_', an axis or {a,b}; repeatable"),
              cl::value_desc("HINT"), cl::sub(sub)),
        shardFile("shard-file", cl::desc("YAML or JSON file of sharding hints"),
                  cl::value_desc("FILE"), cl::sub(sub)),
        strategy("strategy", cl::desc("Distribution preset"),
                 cl::values(
                     clEnumValN(mlir::cleave::Strategy::None, "none",
                                "only the given hints"),
                     clEnumValN(mlir::cleave::Strategy::DataParallel, "dp",
                                "split the batch, replicate parameters"),
                     clEnumValN(mlir::cleave::Strategy::Zero1, "zero1",
                                "dp + optimizer state split over dp"),
                     clEnumValN(mlir::cleave::Strategy::Zero2, "zero2",
                                "zero1 + gradients reduce-scattered"),
                     clEnumValN(mlir::cleave::Strategy::Zero3, "zero3",
                                "zero2 + parameters split, gathered per use"),
                     clEnumValN(mlir::cleave::Strategy::Megatron, "megatron",
                                "transformer MLP/attention layers column- then "
                                "row-parallel over 'tp', batch over 'dp'"),
                     clEnumValN(mlir::cleave::Strategy::MegatronZero1,
                                "megatron+zero1",
                                "megatron + optimizer state split over 'dp' "
                                "(Megatron-LM's distributed optimizer)"),
                     clEnumValN(mlir::cleave::Strategy::MegatronZero2,
                                "megatron+zero2",
                                "megatron+zero1 + gradients reduce-scattered "
                                "over 'dp'"),
                     clEnumValN(mlir::cleave::Strategy::MegatronZero3,
                                "megatron+zero3",
                                "megatron+zero2 + parameters split over 'dp', "
                                "gathered per use"),
                     clEnumValN(kAutoStrategy, "auto",
                                "the planner chooses mesh, preset, stages and "
                                "micro-batches for --cluster and --ranks "
                                "(cleave compile)")),
                 cl::init(mlir::cleave::Strategy::None), cl::sub(sub)),
        printSharding("print-sharding",
                      cl::desc("Print the sharding of every parameter and "
                               "value, and every reshard, then go on"),
                      cl::sub(sub)),
        printComm("print-comm",
                  cl::desc("Print the bytes each rank will send per step, "
                           "by collective kind"),
                  cl::sub(sub)),
        bucketMb("bucket-mb",
                 cl::desc("Largest gradient all-reduce bucket in MiB"),
                 cl::init(25.0), cl::sub(sub)),
        pipeline("pipeline",
                 cl::desc("Mesh axis whose coordinates are pipeline stages: "
                          "the layers are cut into that many stages of "
                          "similar work, one per coordinate"),
                 cl::value_desc("AXIS"), cl::sub(sub)),
        microbatches(
            "microbatches",
            cl::desc("Split each rank's batch into N micro-batches, run one "
                     "after the other and their gradients summed; with "
                     "--pipeline, stages work on different micro-batches at "
                     "once (GPipe)"),
            cl::value_desc("N"), cl::init(1), cl::sub(sub)),
        pipelineSchedule(
            "pipeline-schedule",
            cl::desc("Order of the micro-batches' passes on each pipeline "
                     "stage"),
            cl::values(
                clEnumValN(mlir::cleave::PipelineSchedule::GPipe, "gpipe",
                           "all forward passes, then all backward passes"),
                clEnumValN(mlir::cleave::PipelineSchedule::OneFOneB, "1f1b",
                           "after a warm-up, one forward then one backward "
                           "pass: at most p micro-batches' activations "
                           "alive per stage"),
                clEnumValN(mlir::cleave::PipelineSchedule::Interleaved,
                           "interleaved",
                           "1f1b over --virtual-stages chunks of layers per "
                           "stage: a bubble V times smaller")),
            cl::init(mlir::cleave::PipelineSchedule::GPipe), cl::sub(sub)),
        virtualStages("virtual-stages",
                      cl::desc("With --pipeline-schedule interleaved: chunks "
                               "of layers per stage (chunk c on stage c mod "
                               "p)"),
                      cl::value_desc("V"), cl::init(1), cl::sub(sub)),
        pipelineCuts(
            "pipeline-cuts",
            cl::desc("With --pipeline: cut the layers by hand, before each "
                     "named ONNX node (p x V - 1 names, in program order: "
                     "the node each later stage or chunk starts with) "
                     "instead of by estimated work"),
            cl::value_desc("NODE,..."), cl::CommaSeparated, cl::sub(sub)),
        pipelineLinkBalance(
            "pipeline-link-balance",
            cl::desc("With --pipeline: what the cut by estimated work weighs "
                     "a byte crossing it (forward or as a gradient) as, in "
                     "floating-point operations: a device's FLOP/s over the "
                     "bandwidth of the link between stages (cleave plan "
                     "sets it from the cluster; 0 balances work alone; "
                     "default 50)"),
            cl::value_desc("OPS-PER-BYTE"), cl::sub(sub)),
        recompute("recompute",
                  cl::desc("Activations the backward pass recomputes "
                           "instead of keeping them: none, full (keep each "
                           "layer's input, rerun the layer) or selective "
                           "(keep GEMM products, rerun the cheap ops "
                           "between them)"),
                  cl::value_desc("none|full|selective"), cl::init("none"),
                  cl::sub(sub)) {}

  /// Checks the flags against each other and the program (`inference`;
  /// `planning`: --cluster, --nodes or --ranks given): --strategy auto
  /// chooses the layout flags itself; hints, presets and stages need a mesh.
  llvm::Error validate(bool inference, bool planning) const {
    auto fail = [](const llvm::Twine &message) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
    };
    if (strategy == kAutoStrategy) {
      if (!mesh.empty() || !pipeline.empty() ||
          microbatches.getNumOccurrences() ||
          pipelineSchedule.getNumOccurrences() ||
          virtualStages.getNumOccurrences() ||
          pipelineCuts.getNumOccurrences() ||
          pipelineLinkBalance.getNumOccurrences() ||
          recompute.getNumOccurrences())
        return fail("--strategy auto chooses the mesh, stages, schedule, "
                    "micro-batches and recomputation; drop --mesh, "
                    "--pipeline, --pipeline-schedule, --virtual-stages, "
                    "--pipeline-cuts, --pipeline-link-balance, "
                    "--microbatches and --recompute (or give a preset)");
      if (inference)
        return fail("--strategy auto plans training steps; it does not "
                    "apply with --inference");
      return llvm::Error::success();
    }
    if (planning)
      return fail("--cluster, --nodes, --ranks and --threads apply to "
                  "--strategy auto");
    if (mesh.empty() &&
        (!shard.empty() || !shardFile.empty() ||
         strategy != mlir::cleave::Strategy::None || !pipeline.empty()))
      return fail("sharding hints, --strategy and --pipeline need a device "
                  "mesh; add --mesh (for example --mesh dp=4, or --mesh pp=2 "
                  "--pipeline pp)");
    return llvm::Error::success();
  }

  cl::opt<std::string> mesh;
  cl::list<std::string> shard;
  cl::opt<std::string> shardFile;
  cl::opt<mlir::cleave::Strategy> strategy;
  cl::opt<bool> printSharding, printComm;
  cl::opt<double> bucketMb;
  cl::opt<std::string> pipeline;
  cl::opt<int64_t> microbatches;
  cl::opt<mlir::cleave::PipelineSchedule> pipelineSchedule;
  cl::opt<int64_t> virtualStages;
  cl::list<std::string> pipelineCuts;
  cl::opt<double> pipelineLinkBalance;
  cl::opt<std::string> recompute;
};

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_DISTRIBUTIONFLAGS_H
