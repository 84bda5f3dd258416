//===- ShardingRules.h - how an op's dimensions may be split ----*- C++ -*-===//
//
// A sharding rule names the *factors* of an op (the loop dimensions of its
// computation, as in Shardy's OpShardingRule) and maps every dimension of
// every operand and result to one factor, or to none. Propagation gives
// each factor an ordered list of mesh axes; partitioning splits every
// dimension mapped to a factor over the factor's axes. A factor that is
// split but missing from a result makes that result a partial sum over the
// factor's axes, so rules give such factors only where the op sums over
// them (a matmul's contracting dimension, a reduce_sum's reduced one).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_SHARDINGRULES_H
#define CLEAVE_PASSES_SHARDINGRULES_H

#include "dialects/cleave/CleaveAttrs.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::cleave {

struct OpShardingRule {
  /// Sizes of the factors.
  SmallVector<int64_t> factorSizes;
  /// Per operand, per dimension: the factor, or -1 for a dimension that
  /// must be replicated (a softmax axis, a convolution's spatial dims).
  SmallVector<SmallVector<int64_t>> operandFactors;
  /// Per result, per dimension: the factor, or -1.
  SmallVector<SmallVector<int64_t>> resultFactors;

  /// The factor the op computes batch statistics over (training-mode
  /// BatchNorm's batch), or -1. Split over the micro-batch axis, each
  /// micro-batch is a batch of its own, as in PyTorch's accumulation loop;
  /// split over other axes (data parallelism), its statistics are summed
  /// over those axes (Partition, SplitBatchStatistics), so they are those
  /// of the rows every rank runs as one micro-batch. A result without the factor is partial
  /// over the micro-batch axis if `statisticsSums` lists it (a gradient)
  /// and else whole (the running statistics, which
  /// cleave-unroll-microbatches chains through the micro-batches).
  int64_t statisticsFactor = -1;
  SmallVector<unsigned> statisticsSums;

  int64_t addFactor(int64_t size) {
    factorSizes.push_back(size);
    return factorSizes.size() - 1;
  }
};

using AxisList = SmallVector<StringAttr>;

/// The axes of each factor of `rule` as the shardings of the op's results
/// say, and for factors on no result (contracting ones) as the first
/// operand that splits them says.
SmallVector<AxisList> getFactorAxes(const OpShardingRule &rule,
                                    ArrayRef<ShardingAttr> operands,
                                    ArrayRef<ShardingAttr> results);

/// The same with each operand's and result's dimension axes read by
/// `operandAxes(index, dim)` and `resultAxes(index, dim)`, for callers that
/// hold them unattributed (no ShardingAttr built just to be read).
SmallVector<AxisList> getFactorAxes(
    const OpShardingRule &rule,
    function_ref<ArrayRef<StringAttr>(unsigned, int64_t)> operandAxes,
    function_ref<ArrayRef<StringAttr>(unsigned, int64_t)> resultAxes);

/// The dimension axes of operand `index` under `factorAxes` (empty for a
/// dimension on no factor): getRequiredOperandSharding's dims, unbuilt.
ArrayRef<StringAttr> getRequiredOperandDimAxes(const OpShardingRule &rule,
                                               unsigned index, int64_t dim,
                                               ArrayRef<AxisList> factorAxes);

/// The sharding operand `index` must have for `factorAxes` (never partial).
ShardingAttr getRequiredOperandSharding(MLIRContext *context,
                                        const OpShardingRule &rule,
                                        unsigned index,
                                        ArrayRef<AxisList> factorAxes);

/// The axes over which result `index` holds partial sums: those of the
/// split factors it does not have (for the statistics factor, see
/// OpShardingRule::statisticsFactor).
AxisList getResultPartialAxes(const OpShardingRule &rule, unsigned index,
                              ArrayRef<AxisList> factorAxes);

/// The rule of `op`, or nullopt when the op has none (it then runs
/// replicated: every operand gathered, every result replicated).
std::optional<OpShardingRule> getShardingRule(Operation *op);

/// The axes of `rule`'s statistics factor over which the op's statistics
/// are summed across ranks (all but the micro-batch axis); empty when it
/// has none.
AxisList getSplitStatisticsAxes(const OpShardingRule &rule,
                                   ArrayRef<AxisList> factorAxes);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_SHARDINGRULES_H
