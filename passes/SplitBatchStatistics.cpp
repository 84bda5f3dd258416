//===- SplitBatchStatistics.cpp - BatchNorm over a batch split over ranks -===//
//
// Sums per channel over this rank's rows, all-reduced over the axes that
// split the batch: the statistics of the whole batch for C values sent per
// sum, where gathering the rows would send the activations themselves.
// Each sum is one op, one pass over the rows (CleaveBatchStatisticsOps.td).
// See SplitBatchStatistics.h.
//
//===----------------------------------------------------------------------===//

#include "passes/SplitBatchStatistics.h"

#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/TensorBuilder.h"

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// Elements per channel in the whole batch: this rank's times the group's.
int64_t countOf(Value x, int64_t group) {
  RankedTensorType type = TensorBuilder::typeOf(x);
  return type.getNumElements() / type.getDimSize(1) * group;
}

/// One value per channel of `x`, of its element type.
RankedTensorType channelType(Value x) {
  RankedTensorType type = TensorBuilder::typeOf(x);
  return RankedTensorType::get({type.getDimSize(1)}, type.getElementType());
}

/// The all-reduced sums of `values` over `axes`.
SmallVector<Value> allReduced(OpBuilder &b, Location loc,
                              ArrayRef<Value> values, ArrayAttr axes) {
  auto reduce = AllReduceOp::create(b, loc, values, axes);
  return SmallVector<Value>(reduce->getResults());
}

} // namespace

SplitBatchStatistics::Statistics
SplitBatchStatistics::statisticsOf(Value x, ArrayAttr axes, int64_t group,
                                   Operation *before) {
  auto key = std::make_pair(x, Attribute(axes));
  if (auto it = built.find(key);
      it != built.end() &&
      it->second.mean.getDefiningOp()->isBeforeInBlock(before))
    return it->second;
  OpBuilder b(before);
  Location loc = before->getLoc();
  // Each rank's share of the mean and of the variance (its sum over the
  // whole batch's count), so that the all-reduces give them as they are.
  int64_t count = countOf(x, group);
  Value mean = allReduced(
      b, loc,
      {BatchNormSumOp::create(b, loc, channelType(x), x, count).getResult()},
      axes)[0];
  Value variance = allReduced(b, loc,
                              {BatchNormSquaredDeviationSumOp::create(
                                   b, loc, channelType(x), x, mean, count)
                                   .getResult()},
                              axes)[0];
  Statistics statistics{mean, variance};
  built[key] = statistics;
  return statistics;
}

void SplitBatchStatistics::rewrite(Operation *op, ArrayRef<StringAttr> axes) {
  MLIRContext *context = op->getContext();
  ArrayAttr axesAttr =
      ArrayAttr::get(context, SmallVector<Attribute>(axes.begin(), axes.end()));
  int64_t group = mesh.getGroupSize(axes);
  if (auto norm = dyn_cast<BatchNormOp>(op)) {
    Statistics s = statisticsOf(norm.getInput(), axesAttr, group, op);
    norm.getBatchStatisticsMutable().assign({s.mean, s.variance});
    return;
  }
  // The batch's sum(dy) and sum(dy * (x - mean)), then the gradients from
  // them (the kernel of batch_norm_grad on the whole batch's sums).
  auto grad = cast<BatchNormGradOp>(op);
  Value dy = grad.getOutputGrad(), x = grad.getInput();
  Statistics s = statisticsOf(x, axesAttr, group, op);
  OpBuilder b(op);
  Location loc = op->getLoc();
  RankedTensorType channels = channelType(x);
  auto sums =
      BatchNormGradSumsOp::create(b, loc, channels, channels, dy, x, s.mean);
  SmallVector<Value> whole = allReduced(
      b, loc, {sums.getSumGrad(), sums.getSumGradCentered()}, axesAttr);
  auto fromSums = BatchNormGradFromSumsOp::create(
      b, loc, grad->getResultTypes(), dy, x, grad.getScale(), s.mean,
      s.variance, whole[0], whole[1], grad.getEpsilonAttr(),
      b.getI64IntegerAttr(countOf(x, group)));
  grad->replaceAllUsesWith(fromSums->getResults());
  grad.erase();
}
