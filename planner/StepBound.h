//===- StepBound.h - a lower bound on any layout's step ---------*- C++ -*-===//
//
// Before partitioning anything, the search knows a lower bound on the step
// of every layout: its ranks share at least the unpartitioned step's
// matrix products (partitioning splits or replicates them, it never
// removes work, and recomputation only adds), no op runs faster than its
// precision's peak at the cost model's compute efficiency, and a pipeline
// of p stages with m micro-batches through V chunks each takes at least
// (mV + p - 1) / (mV) of its stages' mean work (pipelineStepMs). So
//
//   step >= flops / (ranks x rate) / (1 - bubble)
//
// with the bubble of pipelineBubble. The search goes through the layouts
// by this bound and stops where the plans it has found are faster: the
// deep pipelines of a large cluster are never partitioned, not even their
// family's memory bound (Alpa prunes its stage search the same way).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_STEPBOUND_H
#define CLEAVE_PLANNER_STEPBOUND_H

#include "planner/Cluster.h"
#include "planner/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace cleave::planner {

/// The milliseconds one device would compute `step`'s (unpartitioned)
/// matrix products for, at the least the cost model gives them: their
/// flops at the precision's peak times the cluster's compute efficiency.
/// 0 without a step.
double stepComputeBoundMs(mlir::func::FuncOp step, const Cluster &cluster,
                          Precision precision);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_STEPBOUND_H
