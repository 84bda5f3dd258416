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

/// The sharding operand `index` must have for `factorAxes` (never partial).
ShardingAttr getRequiredOperandSharding(MLIRContext *context,
                                        const OpShardingRule &rule,
                                        unsigned index,
                                        ArrayRef<AxisList> factorAxes);

/// The axes over which result `index` holds partial sums: those of the
/// split factors it does not have.
AxisList getResultPartialAxes(const OpShardingRule &rule, unsigned index,
                              ArrayRef<AxisList> factorAxes);

/// The rule of `op`, or nullopt when the op has none (it then runs
/// replicated: every operand gathered, every result replicated).
std::optional<OpShardingRule> getShardingRule(Operation *op);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_SHARDINGRULES_H
