//===- DecomposeMeans.cpp - means as sums over counts ---------------------===//
//
// A mean over a split batch is not the mean of the ranks' means when they
// count different numbers of samples; a sum divided by a summed count is.
// See Passes.td for the contract.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"

#include <numeric>

namespace mlir::cleave {
#define GEN_PASS_DEF_DECOMPOSEMEANSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

Value scalarConstant(OpBuilder &b, Location loc, FloatType element,
                     double value) {
  auto type = RankedTensorType::get({}, element);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
}

/// The number of labels that count: all of them without an ignore_index,
/// otherwise those that differ from it (a sum, so it can be partial).
Value countLabels(OpBuilder &b, Location loc, Value labels,
                  std::optional<int64_t> ignoreIndex, FloatType element) {
  auto labelType = cast<RankedTensorType>(labels.getType());
  if (!ignoreIndex)
    return scalarConstant(b, loc, element, labelType.getNumElements());
  auto ignored = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          RankedTensorType::get({}, labelType.getElementType()),
          b.getIntegerAttr(labelType.getElementType(), *ignoreIndex)));
  auto maskType = RankedTensorType::get(labelType.getShape(), b.getI1Type());
  Value isIgnored = EqualOp::create(b, loc, maskType, labels, ignored);
  auto countType = RankedTensorType::get(labelType.getShape(), element);
  Value counts = WhereOp::create(b, loc, countType, isIgnored,
                                 scalarConstant(b, loc, element, 0.0),
                                 scalarConstant(b, loc, element, 1.0));
  SmallVector<int64_t> axes(labelType.getRank());
  std::iota(axes.begin(), axes.end(), 0);
  return ReduceSumOp::create(b, loc, RankedTensorType::get({}, element),
                             counts, b.getDenseI64ArrayAttr(axes),
                             b.getBoolAttr(false));
}

struct DecomposeMeansPass
    : mlir::cleave::impl::DecomposeMeansPassBase<DecomposeMeansPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<SoftmaxCrossEntropyOp, NllLossOp, ReduceMeanOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto sce = dyn_cast<SoftmaxCrossEntropyOp>(op))
        rewriteLoss(sce, sce.getLabels(), sce.getWeights(), sce.getLoss());
      else if (auto nll = dyn_cast<NllLossOp>(op))
        rewriteLoss(nll, nll.getTarget(), nll.getWeight(), nll.getLoss());
      else
        rewriteReduceMean(cast<ReduceMeanOp>(op));
    }
  }

  /// Class weights make the count a weighted sum; those losses keep their
  /// mean (and their batch replicated).
  template <typename LossOp>
  void rewriteLoss(LossOp op, Value labels, Value weights, Value loss) {
    if (op.getReduction() != LossReduction::Mean || weights)
      return;
    OpBuilder b(op);
    b.setInsertionPointAfter(op);
    op.setReduction(LossReduction::Sum);
    auto element = cast<FloatType>(
        cast<ShapedType>(loss.getType()).getElementType());
    Value count =
        countLabels(b, op.getLoc(), labels, op.getIgnoreIndex(), element);
    auto mean = DivOp::create(b, op.getLoc(), loss.getType(), loss, count);
    loss.replaceAllUsesExcept(mean, mean);
  }

  /// Integer means round, so they stay means (and unsplit).
  void rewriteReduceMean(ReduceMeanOp op) {
    auto inputType = op.getInput().getType();
    auto element = dyn_cast<FloatType>(inputType.getElementType());
    if (!element)
      return;
    int64_t count = 1;
    for (int64_t axis : op.getAxes())
      count *= inputType.getDimSize(axis);
    OpBuilder b(op);
    auto sum = ReduceSumOp::create(b, op.getLoc(), op.getType(), op.getInput(),
                                   op.getAxesAttr(), op.getKeepdimsAttr());
    auto mean = MulOp::create(b, op.getLoc(), op.getType(), sum,
                              scalarConstant(b, op.getLoc(), element,
                                             1.0 / count));
    op.replaceAllUsesWith(mean.getResult());
    op.erase();
  }
};

} // namespace
