//===- IntraOpIlp.h - tensor-parallel shardings from an ILP -----*- C++ -*-===//
//
// Chooses how a training step is split over one tensor-parallel mesh axis
// when no preset recognises the model, as Alpa's intra-operator pass does
// (Zheng et al., OSDI 2022, section 4.2): an integer linear program over
// each op's sharding choices, solved by CBC.
//
// Variables: per op of the step (forward, backward and optimizer) and per
// parameter or state tensor, one 0/1 variable per strategy, exactly one
// chosen. An op's strategies are those of its sharding rule
// (passes/ShardingRules.h) on one axis: keep it whole, or split one of its
// factors that is not the batch's (the batch belongs to the data axis)
// and divides by the axis size. A tensor's strategies: whole, or split
// along one dimension that divides. Optimizer state takes its parameter's
// variables.
//
// Costs (microseconds per step on one rank): an op's roofline time
// (planner/OpCost.h; divided by the axis size when split, by the data
// degree when it touches the batch); with data parallelism, the all-reduce
// of each parameter's gradient block and a training BatchNorm's
// all-gathers of its rows over dp; a partial sum's all-reduce where an
// op splits a factor its result does not have; and, per value and per
// sharding some consumer needs that its producer does not give, one
// reshard (all-gather, then a local slice where the consumer wants another
// dimension split), as the partitioner inserts them (one per value and
// target). The collectives are timed as the cost model times them
// (Cluster::collectiveSeconds on the link the axis crosses: the runtime's
// measured all-reduce and all-gather where the cluster file has them,
// else steps x latency + bytes / (bandwidth x efficiency)). Products of two strategies (a value's producer and a target)
// are linearised with one continuous variable each.
//
// Constraint: the parameters, their gradients and optimizer state each
// rank holds fit the device memory (times the pipeline stages).
//
// The answer is a set of sharding hints (one per parameter and state, the
// split ones and the whole ones), the vocabulary `--shard` speaks: the
// compiler's propagation derives every other value's sharding from them,
// and the planner predicts the layout with its cost model as any other.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_INTRAOPILP_H
#define CLEAVE_PLANNER_INTRAOPILP_H

#include "planner/Cluster.h"

#include "passes/ShardingHints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace cleave::planner {

/// The axis the ILP splits, and what the rest of the layout does to the
/// work one rank sees.
struct IntraOpProblem {
  std::string axis = "tp";
  int64_t axisSize = 2;
  /// The data-parallel degree: ops and values that carry the batch are
  /// this much smaller on each rank.
  int64_t dataDegree = 1;
  /// Pipeline stages: each rank holds about 1/stages of the parameters.
  int64_t stages = 1;
  /// Whether the axis' groups span nodes (the inter-node link), and
  /// whether the data axis' do.
  bool interNode = false, dataInterNode = false;
  /// The cpu runtime reduces small buffers by recursive doubling; NCCL
  /// (cuda) always runs a ring.
  bool ringOnly = true;
};

/// The ILP's answer.
struct IntraOpPlan {
  /// One hint per parameter and state tensor the ILP decided (split or
  /// whole), at priority 0.
  std::vector<mlir::cleave::ShardingHint> hints;
  /// How many parameters and states it decided, and how many of them it
  /// splits over the axis. (The planner drops the whole ones' hints that
  /// propagation does not need.)
  int64_t tensors = 0, splitTensors = 0;
  /// The ILP's estimate of one step on one rank, and its parts; and the
  /// same estimate with everything whole.
  double objectiveMs = 0, computeMs = 0, commMs = 0, wholeMs = 0;
  /// When the ILP keeps everything whole: its best with at least one
  /// parameter split (0: none, or not searched: a program of more than
  /// 10,000 columns).
  double bestSplitMs = 0;
  /// The size of the program and CBC's time (both solves).
  int64_t variables = 0, constraints = 0;
  double seconds = 0;
  /// CBC proved the answer within 1% of the cheapest; else it stopped at
  /// its node limit (IlpProgram::kMaxNodes) `gap` (relative) above its
  /// bound on the cheapest.
  bool optimal = false;
  double gap = 0;
};

/// Builds and solves the ILP for `step` (the training step, not yet
/// partitioned). Fails when no sharding fits memory or CBC finds no
/// solution in time.
llvm::Expected<IntraOpPlan> solveIntraOpIlp(mlir::func::FuncOp step,
                                            const Cluster &cluster,
                                            const IntraOpProblem &problem);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_INTRAOPILP_H
