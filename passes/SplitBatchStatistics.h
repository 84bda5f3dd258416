//===- SplitBatchStatistics.h - BatchNorm over a batch split over ranks -*- C++ -*-===//
//
// Part of cleave-partition. A training-mode BatchNorm (or its gradient)
// whose batch is split over mesh axes normalizes with the statistics of
// the whole batch, as on one rank. Each rank sums its own rows per channel
// and the sums are all-reduced (C values per sum): the rows themselves
// never leave their rank, and each rank normalizes only its rows.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_SPLITBATCHSTATISTICS_H
#define CLEAVE_PASSES_SPLITBATCHSTATISTICS_H

#include "dialects/cleave/CleaveAttrs.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::cleave {

class SplitBatchStatistics {
public:
  explicit SplitBatchStatistics(MeshAttr mesh) : mesh(mesh) {}

  /// Rewrites `op`, a partitioned training-mode BatchNormOp or a
  /// BatchNormGradOp on this rank's block of a batch split over `axes`
  /// (the micro-batch axis excluded: a micro-batch is its own batch):
  ///  - the forward op gets the batch's mean and biased variance as its
  ///    batch_statistics (two all-reduced sums, batch_norm_sum of x, then
  ///    batch_norm_squared_deviation_sum around the mean: the two passes
  ///    the kernel makes on one rank);
  ///  - the gradient becomes batch_norm_grad_from_sums on the all-reduced
  ///    batch_norm_grad_sums (sum(dy), sum(dy * (x - mean))), reusing the
  ///    forward's statistics of the same input where there is one.
  void rewrite(Operation *op, ArrayRef<StringAttr> axes);

private:
  struct Statistics {
    Value mean, variance;
  };
  /// The mean and biased variance per channel of `x`'s whole batch over
  /// `axes`, built before `before` (or the ones built for it already).
  Statistics statisticsOf(Value x, ArrayAttr axes, int64_t group,
                          Operation *before);

  MeshAttr mesh;
  llvm::DenseMap<std::pair<Value, Attribute>, Statistics> built;
};

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_SPLITBATCHSTATISTICS_H
