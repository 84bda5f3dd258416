//===- SplitBatchStatistics.cpp - BatchNorm over a batch split over ranks -===//
//
// Sums per channel over this rank's rows, all-reduced over the axes that
// split the batch: the statistics of the whole batch for C values sent per
// sum, where gathering the rows would send the activations themselves.
// See SplitBatchStatistics.h.
//
//===----------------------------------------------------------------------===//

#include "passes/SplitBatchStatistics.h"

#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/TensorBuilder.h"

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The dims a channel's statistics sum over: the batch and the spatial ones.
SmallVector<int64_t> reducedDims(Value x) {
  SmallVector<int64_t> dims{0};
  for (int64_t d = 2; d < TensorBuilder::typeOf(x).getRank(); ++d)
    dims.push_back(d);
  return dims;
}

/// Elements per channel in the whole batch: this rank's times the group's.
double countOf(Value x, int64_t group) {
  RankedTensorType type = TensorBuilder::typeOf(x);
  return static_cast<double>(type.getNumElements() / type.getDimSize(1)) *
         static_cast<double>(group);
}

/// The all-reduced sums of `values` over `axes`.
SmallVector<Value> allReduced(TensorBuilder &t, ArrayRef<Value> values,
                              ArrayAttr axes) {
  auto reduce = AllReduceOp::create(t.b, t.loc, values, axes);
  return SmallVector<Value>(reduce->getResults());
}

} // namespace

SplitBatchStatistics::Statistics
SplitBatchStatistics::statisticsOf(Value x, ArrayAttr axes, int64_t group,
                                   Operation *before) {
  auto key = std::make_pair(x, Attribute(axes));
  if (auto it = built.find(key); it != built.end() &&
                                 it->second.mean.getDefiningOp()->isBeforeInBlock(before))
    return it->second;
  OpBuilder b(before);
  TensorBuilder t(b, before->getLoc());
  SmallVector<int64_t> dims = reducedDims(x);
  double count = countOf(x, group);
  // [1, C, 1, ...]: broadcasts against x.
  Value mean = t.mul(allReduced(t, {t.reduceSum(x, dims, true)}, axes)[0],
                     1.0 / count);
  Value centered = t.sub(x, mean);
  Value variance =
      t.mul(allReduced(t, {t.reduceSum(t.mul(centered, centered), dims, true)},
                       axes)[0],
            1.0 / count);
  Statistics statistics{mean, variance};
  built[key] = statistics;
  return statistics;
}

void SplitBatchStatistics::rewrite(Operation *op, ArrayRef<StringAttr> axes) {
  MLIRContext *context = op->getContext();
  ArrayAttr axesAttr = ArrayAttr::get(
      context, SmallVector<Attribute>(axes.begin(), axes.end()));
  int64_t group = mesh.getGroupSize(axes);
  if (auto norm = dyn_cast<BatchNormOp>(op)) {
    Statistics s = statisticsOf(norm.getInput(), axesAttr, group, op);
    OpBuilder b(op);
    TensorBuilder t(b, op->getLoc());
    ArrayRef<int64_t> channels = norm.getScale().getType().getShape();
    norm.getBatchStatisticsMutable().assign(
        {t.reshape(s.mean, channels), t.reshape(s.variance, channels)});
    return;
  }
  // dx = scale * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)),
  // dscale = sum(dy * xhat), dbias = sum(dy): BatchNormGradApply's formula
  // (runtime/NormalizationBodies.h) on the whole batch's sums.
  auto grad = cast<BatchNormGradOp>(op);
  Value dy = grad.getOutputGrad(), x = grad.getInput();
  Statistics s = statisticsOf(x, axesAttr, group, op);
  OpBuilder b(op);
  TensorBuilder t(b, op->getLoc());
  SmallVector<int64_t> dims = reducedDims(x);
  double count = countOf(x, group);
  Value rstd = t.div(t.scalarLike(x, 1.0),
                     t.unary<SqrtOp>(t.add(
                         s.variance, grad.getEpsilon().convertToDouble())));
  // x * rstd - mean * rstd, not (x - mean) * rstd: CSE would otherwise
  // merge x - mean with the forward pass's and keep it alive until here.
  Value xhat = t.sub(t.mul(x, rstd), t.mul(s.mean, rstd));
  SmallVector<Value> sums = allReduced(
      t, {t.reduceSum(dy, dims, true), t.reduceSum(t.mul(dy, xhat), dims, true)},
      axesAttr);
  Value sumDy = sums[0], sumDyXhat = sums[1];
  ArrayRef<int64_t> channels = grad.getScale().getType().getShape();
  SmallVector<int64_t> broadcastShape(TensorBuilder::typeOf(rstd).getShape());
  Value gain = t.mul(t.reshape(grad.getScale(), broadcastShape), rstd);
  Value dx = t.mul(gain, t.sub(t.sub(dy, t.mul(sumDy, 1.0 / count)),
                               t.mul(xhat, t.mul(sumDyXhat, 1.0 / count))));
  grad.getInputGrad().replaceAllUsesWith(dx);
  grad.getScaleGrad().replaceAllUsesWith(t.reshape(sumDyXhat, channels));
  grad.getBiasGrad().replaceAllUsesWith(t.reshape(sumDy, channels));
  grad.erase();
}
