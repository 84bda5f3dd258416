//===- ShardingRules.cpp - how each op's dimensions may be split ----------===//

#include "passes/ShardingRules.h"

#include "dialects/cleave/CleaveOps.h"
#include "passes/Pipelines.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cleave;

namespace {

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<ShapedType>(value.getType()).getShape();
}

/// Builds a rule operand by operand and result by result.
class RuleBuilder {
public:
  explicit RuleBuilder(Operation *op) : op(op) {
    rule.operandFactors.resize(op->getNumOperands());
    rule.resultFactors.resize(op->getNumResults());
    for (auto [index, operand] : llvm::enumerate(op->getOperands()))
      rule.operandFactors[index].assign(shapeOf(operand).size(), -1);
    for (auto [index, result] : llvm::enumerate(op->getResults()))
      rule.resultFactors[index].assign(shapeOf(result).size(), -1);
  }

  /// New factors, one per dimension of `value`'s shape, returned in order.
  SmallVector<int64_t> factorsFor(ArrayRef<int64_t> shape) {
    SmallVector<int64_t> factors;
    for (int64_t size : shape)
      factors.push_back(rule.addFactor(size));
    return factors;
  }
  int64_t factor(int64_t size) { return rule.addFactor(size); }

  void operand(unsigned index, int64_t dim, int64_t factor) {
    rule.operandFactors[index][dim] = factor;
  }
  void result(unsigned index, int64_t dim, int64_t factor) {
    rule.resultFactors[index][dim] = factor;
  }
  /// Maps every dimension of operand `value` (any operand equal to it) the
  /// way numpy broadcasting aligns it with `factors` (trailing dims line up;
  /// a size-1 dim against a larger one stays unmapped).
  void alignOperand(unsigned index, ArrayRef<int64_t> factors) {
    ArrayRef<int64_t> shape = shapeOf(op->getOperand(index));
    int64_t offset = static_cast<int64_t>(factors.size()) - shape.size();
    for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
      int64_t f = factors[dim + offset];
      if (shape[dim] == rule.factorSizes[f])
        operand(index, dim, f);
    }
  }
  void alignResult(unsigned index, ArrayRef<int64_t> factors) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(index));
    int64_t offset = static_cast<int64_t>(factors.size()) - shape.size();
    for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim)
      if (shape[dim] == rule.factorSizes[factors[dim + offset]])
        result(index, dim, factors[dim + offset]);
  }

  OpShardingRule take() { return std::move(rule); }

private:
  Operation *op;
  OpShardingRule rule;
};

/// Every operand and result broadcasts to the shape of result 0 (numpy
/// rules; 0-d operands such as a step counter map to nothing).
OpShardingRule elementwiseRule(Operation *op) {
  RuleBuilder builder(op);
  SmallVector<int64_t> factors = builder.factorsFor(shapeOf(op->getResult(0)));
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    builder.alignOperand(i, factors);
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    builder.alignResult(i, factors);
  return builder.take();
}

/// Operand/result pairs of equal shape share every dimension except those
/// in `replicatedDims` (a softmax axis, a concat axis).
OpShardingRule sameShapeRule(Operation *op, ArrayRef<int64_t> replicatedDims) {
  RuleBuilder builder(op);
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  SmallVector<int64_t> factors = builder.factorsFor(shape);
  auto mapAll = [&](ArrayRef<int64_t> valueShape, auto map) {
    if (valueShape.size() != shape.size())
      return;
    for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim)
      if (!llvm::is_contained(replicatedDims, dim) &&
          valueShape[dim] == shape[dim])
        map(dim, factors[dim]);
  };
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    mapAll(shapeOf(op->getOperand(i)),
           [&](int64_t dim, int64_t f) { builder.operand(i, dim, f); });
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    mapAll(shapeOf(op->getResult(i)),
           [&](int64_t dim, int64_t f) { builder.result(i, dim, f); });
  return builder.take();
}

OpShardingRule gemmRule(GemmOp op) {
  RuleBuilder builder(op);
  ArrayRef<int64_t> result = op.getResult().getType().getShape();
  int64_t m = builder.factor(result[0]), n = builder.factor(result[1]);
  int64_t k = builder.factor(op.getA().getType().getDimSize(
      op.getTransA() ? 0 : 1));
  builder.operand(0, op.getTransA() ? 1 : 0, m);
  builder.operand(0, op.getTransA() ? 0 : 1, k);
  builder.operand(1, op.getTransB() ? 1 : 0, k);
  builder.operand(1, op.getTransB() ? 0 : 1, n);
  if (op.getC())
    builder.alignOperand(2, {m, n});
  builder.result(0, 0, m);
  builder.result(0, 1, n);
  return builder.take();
}

OpShardingRule matmulRule(MatmulOp op) {
  RuleBuilder builder(op);
  ArrayRef<int64_t> lhs = op.getLhs().getType().getShape(),
                    rhs = op.getRhs().getType().getShape(),
                    result = op.getResult().getType().getShape();
  bool lhsVector = lhs.size() == 1, rhsVector = rhs.size() == 1;
  int64_t k = builder.factor(rhsVector ? rhs[0] : rhs[rhs.size() - 2]);
  int64_t batchRank = static_cast<int64_t>(result.size()) - (lhsVector ? 0 : 1) -
                      (rhsVector ? 0 : 1);
  SmallVector<int64_t> batch =
      builder.factorsFor(result.take_front(batchRank));
  for (auto [dim, f] : llvm::enumerate(batch))
    builder.result(0, dim, f);
  auto alignBatch = [&](unsigned index, ArrayRef<int64_t> shape) {
    int64_t rank = static_cast<int64_t>(shape.size()) - 2;
    for (int64_t dim = 0; dim < rank; ++dim) {
      int64_t f = batch[dim + batchRank - rank];
      if (shape[dim] == result[dim + batchRank - rank])
        builder.operand(index, dim, f);
    }
  };
  if (lhsVector) {
    builder.operand(0, 0, k);
  } else {
    int64_t m = builder.factor(lhs[lhs.size() - 2]);
    builder.operand(0, lhs.size() - 2, m);
    builder.operand(0, lhs.size() - 1, k);
    builder.result(0, batchRank, m);
    alignBatch(0, lhs);
  }
  if (rhsVector) {
    builder.operand(1, 0, k);
  } else {
    int64_t n = builder.factor(rhs.back());
    builder.operand(1, rhs.size() - 2, k);
    builder.operand(1, rhs.size() - 1, n);
    builder.result(0, result.size() - 1, n);
    alignBatch(1, rhs);
  }
  return builder.take();
}

/// Reduced dims become factors missing from the result (partial sums) when
/// `sumLike`; otherwise they must be replicated.
OpShardingRule reduceRule(Operation *op, ArrayRef<int64_t> axes, bool keepdims,
                          bool sumLike) {
  RuleBuilder builder(op);
  ArrayRef<int64_t> input = shapeOf(op->getOperand(0));
  int64_t resultDim = 0;
  for (int64_t dim = 0; dim < static_cast<int64_t>(input.size()); ++dim) {
    bool reduced = llvm::is_contained(axes, dim);
    if (!reduced || sumLike) {
      int64_t f = builder.factor(input[dim]);
      builder.operand(0, dim, f);
      if (!reduced)
        builder.result(0, resultDim, f);
    }
    if (!reduced || keepdims)
      ++resultDim;
  }
  return builder.take();
}

OpShardingRule transposeRule(TransposeOp op) {
  RuleBuilder builder(op);
  SmallVector<int64_t> factors =
      builder.factorsFor(op.getInput().getType().getShape());
  for (auto [dim, from] : llvm::enumerate(op.getPermutation())) {
    builder.operand(0, from, factors[from]);
    builder.result(0, dim, factors[from]);
  }
  return builder.take();
}

/// Splits both shapes into groups of dims with equal products; in each
/// group the two major-most dims share a factor of the size of the smaller
/// one, provided it is the input's or the output's whole group, or divides
/// the other (so that a block split of it is a block split of the other
/// side).
OpShardingRule reshapeRule(ReshapeOp op) {
  RuleBuilder builder(op);
  ArrayRef<int64_t> in = op.getInput().getType().getShape(),
                    out = op.getResult().getType().getShape();
  size_t i = 0, o = 0;
  while (i < in.size() && o < out.size()) {
    if (in[i] == 1) {
      ++i;
      continue;
    }
    if (out[o] == 1) {
      ++o;
      continue;
    }
    size_t groupIn = i, groupOut = o;
    int64_t productIn = in[i++], productOut = out[o++];
    while (productIn != productOut) {
      if (productIn < productOut && i < in.size())
        productIn *= in[i++];
      else if (productOut < productIn && o < out.size())
        productOut *= out[o++];
      else
        return builder.take();
    }
    // Or the smaller major dim divides the larger: it is then its major
    // factor ([B, H * d] as [B * H, d]: attention's heads).
    bool inSingle = i - groupIn == 1, outSingle = o - groupOut == 1;
    int64_t larger = std::max(in[groupIn], out[groupOut]),
            smaller = std::min(in[groupIn], out[groupOut]);
    if (inSingle || outSingle || larger % smaller == 0) {
      int64_t f = builder.factor(std::min(in[groupIn], out[groupOut]));
      builder.operand(0, groupIn, f);
      builder.result(0, groupOut, f);
    }
  }
  return builder.take();
}

/// Gather: data dims other than `axis` pass through, the indices' dims
/// become the result's middle dims. The gathered dim is a factor of the data
/// only: split (a vocabulary-parallel embedding), every rank looks up the
/// rows it holds and zeros the others, and the result is a partial sum
/// (the partitioner builds that lookup, see Partition.cpp).
OpShardingRule gatherRule(GatherOp op) {
  RuleBuilder builder(op);
  ArrayRef<int64_t> data = op.getData().getType().getShape(),
                    indices = op.getIndices().getType().getShape();
  int64_t axis = op.getAxis() < 0 ? op.getAxis() + data.size() : op.getAxis();
  int64_t resultDim = 0;
  for (int64_t dim = 0; dim < static_cast<int64_t>(data.size()); ++dim) {
    if (dim == axis) {
      builder.operand(0, dim, builder.factor(data[dim]));
      for (auto [indexDim, size] : llvm::enumerate(indices)) {
        int64_t f = builder.factor(size);
        builder.operand(1, indexDim, f);
        builder.result(0, resultDim++, f);
      }
      continue;
    }
    int64_t f = builder.factor(data[dim]);
    builder.operand(0, dim, f);
    builder.result(0, resultDim++, f);
  }
  return builder.take();
}

/// The scatter-add of a gather's gradient: the index dims are summed over.
/// The scattered dim is a factor of the result only: split, every rank adds
/// the rows it holds.
OpShardingRule gatherGradRule(GatherGradOp op) {
  RuleBuilder builder(op);
  ArrayRef<int64_t> data = op.getDataGrad().getType().getShape(),
                    indices = op.getIndices().getType().getShape();
  int64_t axis = op.getAxis() < 0 ? op.getAxis() + data.size() : op.getAxis();
  int64_t gradDim = 0;
  for (int64_t dim = 0; dim < static_cast<int64_t>(data.size()); ++dim) {
    if (dim == axis) {
      builder.result(0, dim, builder.factor(data[dim]));
      for (auto [indexDim, size] : llvm::enumerate(indices)) {
        int64_t f = builder.factor(size);
        builder.operand(1, indexDim, f);
        builder.operand(0, gradDim++, f);
      }
      continue;
    }
    int64_t f = builder.factor(data[dim]);
    builder.operand(0, gradDim++, f);
    builder.result(0, dim, f);
  }
  return builder.take();
}

/// Convolutions and their gradients: batch N, output channels O, input
/// channels C (shared only without groups); spatial dims replicated.
/// `operands`/`results` say which of (input-like [N,C,...], weight-like
/// [O,C,...], output-like [N,O,...], bias [O]) each position is.
enum class ConvRole { Input, Weight, Output, Bias, None };
OpShardingRule convRule(Operation *op, ArrayRef<ConvRole> operands,
                        ArrayRef<ConvRole> results, int64_t group) {
  RuleBuilder builder(op);
  auto firstOf = [&](ConvRole role, int64_t dim) -> int64_t {
    for (auto [index, r] : llvm::enumerate(operands))
      if (r == role)
        return shapeOf(op->getOperand(index))[dim];
    for (auto [index, r] : llvm::enumerate(results))
      if (r == role)
        return shapeOf(op->getResult(index))[dim];
    return -1;
  };
  int64_t n = builder.factor(std::max(firstOf(ConvRole::Input, 0),
                                      firstOf(ConvRole::Output, 0)));
  // With groups, a block of output channels reads another block of input
  // channels than the same block of a local convolution would: channels
  // stay whole.
  int64_t o = group == 1 ? builder.factor(std::max(
                               firstOf(ConvRole::Weight, 0),
                               firstOf(ConvRole::Output, 1)))
                         : -1;
  int64_t c = group == 1 ? builder.factor(std::max(
                               firstOf(ConvRole::Input, 1),
                               firstOf(ConvRole::Weight, 1)))
                         : -1;
  auto map = [&](ConvRole role, auto set) {
    switch (role) {
    case ConvRole::Input:
      set(0, n), set(1, c);
      break;
    case ConvRole::Weight:
      set(0, o), set(1, c);
      break;
    case ConvRole::Output:
      set(0, n), set(1, o);
      break;
    case ConvRole::Bias:
      set(0, o);
      break;
    case ConvRole::None:
      break;
    }
  };
  for (auto [index, role] : llvm::enumerate(operands))
    map(role, [&, i = index](int64_t dim, int64_t f) {
      if (f >= 0)
        builder.operand(i, dim, f);
    });
  for (auto [index, role] : llvm::enumerate(results))
    map(role, [&, i = index](int64_t dim, int64_t f) {
      if (f >= 0)
        builder.result(i, dim, f);
    });
  return builder.take();
}

/// Losses over [N, C, d1...] scores with [N, d1...] labels: N and d1...
/// are split freely where the loss is per-sample or summed; a mean needs
/// the global count, so it keeps them replicated (the decompose-means pass
/// turns means into sums before this matters).
OpShardingRule lossRule(Operation *op, LossReduction reduction,
                        ArrayRef<int64_t> scoresShape,
                        bool splitClasses = false) {
  RuleBuilder builder(op);
  if (reduction == LossReduction::Mean)
    return builder.take();
  SmallVector<int64_t> sample; // factors of N, d1, ...
  for (auto [dim, size] : llvm::enumerate(scoresShape))
    if (dim != 1)
      sample.push_back(builder.factor(size));
  auto mapScoresLike = [&](ArrayRef<int64_t> shape, auto set) {
    if (shape != scoresShape)
      return;
    for (int64_t dim = 0, s = 0; dim < static_cast<int64_t>(shape.size());
         ++dim)
      if (dim != 1)
        set(dim, sample[s++]);
  };
  SmallVector<int64_t> sampleShape(scoresShape);
  sampleShape.erase(sampleShape.begin() + 1);
  auto mapSampleLike = [&](ArrayRef<int64_t> shape, auto set) {
    // A class-weight vector [C] may have the sample rank; compare sizes.
    if (shape != ArrayRef<int64_t>(sampleShape))
      return;
    for (auto [dim, f] : llvm::enumerate(sample))
      set(dim, f);
  };
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    auto set = [&](int64_t dim, int64_t f) { builder.operand(i, dim, f); };
    mapScoresLike(shapeOf(op->getOperand(i)), set);
    mapSampleLike(shapeOf(op->getOperand(i)), set);
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    auto set = [&](int64_t dim, int64_t f) { builder.result(i, dim, f); };
    mapScoresLike(shapeOf(op->getResult(i)), set);
    mapSampleLike(shapeOf(op->getResult(i)), set);
  }
  if (splitClasses) {
    // Vocabulary-parallel cross entropy: the partitioner computes the
    // softmax's normalizer and the label's score with collectives
    // (Partition.cpp), so scores, log-probabilities and their gradients
    // may be split by class.
    int64_t classes = builder.factor(scoresShape[1]);
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (shapeOf(op->getOperand(i)) == scoresShape)
        builder.operand(i, 1, classes);
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (shapeOf(op->getResult(i)) == scoresShape)
        builder.result(i, 1, classes);
  }
  return builder.take();
}

/// Whether the partitioner can split a softmax cross entropy by class:
/// [N, C] scores, no class weights, a sum or no reduction (a mean was
/// decomposed into a sum before, where it matters).
template <typename OpTy> bool canSplitClasses(OpTy op, ShapedType scores) {
  return scores.getRank() == 2 && !op.getWeights() &&
         op.getReduction() != LossReduction::Mean;
}

/// LayerNorm and its gradient: dims before `axis` pass through (mean and
/// inv_std_dev keep them, with 1s after); normalized dims are replicated.
/// Results without the leading dims (scale and bias gradients) sum over
/// them.
OpShardingRule layerNormRule(Operation *op, ArrayRef<int64_t> inputShape,
                             int64_t axis) {
  RuleBuilder builder(op);
  SmallVector<int64_t> leading = builder.factorsFor(inputShape.take_front(axis));
  auto map = [&](ArrayRef<int64_t> shape, auto set) {
    if (shape.size() != inputShape.size())
      return;
    for (auto [dim, f] : llvm::enumerate(leading))
      if (shape[dim] == inputShape[dim])
        set(dim, f);
  };
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    map(shapeOf(op->getOperand(i)),
        [&](int64_t dim, int64_t f) { builder.operand(i, dim, f); });
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    map(shapeOf(op->getResult(i)),
        [&](int64_t dim, int64_t f) { builder.result(i, dim, f); });
  return builder.take();
}

/// Slices split freely on dimensions they take whole.
SmallVector<int64_t> partlyTakenDims(ShapedType larger, ShapedType smaller) {
  SmallVector<int64_t> dims;
  for (int64_t dim = 0; dim < larger.getRank(); ++dim)
    if (larger.getDimSize(dim) != smaller.getDimSize(dim))
      dims.push_back(dim);
  return dims;
}

} // namespace

std::optional<OpShardingRule> mlir::cleave::getShardingRule(Operation *op) {
  if (op->hasTrait<cleave::OpTrait::Broadcasting>() ||
      op->hasTrait<mlir::OpTrait::Elementwise>() ||
      isa<BroadcastToOp, SgdOp, AdamwOp>(op))
    return elementwiseRule(op);
  return llvm::TypeSwitch<Operation *, std::optional<OpShardingRule>>(op)
      .Case([](GemmOp op) { return gemmRule(op); })
      .Case([](MatmulOp op) { return matmulRule(op); })
      .Case([](ReduceSumOp op) {
        return reduceRule(op, op.getAxes(), op.getKeepdims(), true);
      })
      .Case<ReduceMeanOp, ReduceMaxOp>([](auto op) {
        return reduceRule(op, op.getAxes(), op.getKeepdims(), false);
      })
      .Case([](TransposeOp op) { return transposeRule(op); })
      .Case([](ReshapeOp op) { return reshapeRule(op); })
      .Case<SoftmaxOp, LogSoftmaxOp, SoftmaxGradOp>([](auto op) {
        int64_t rank =
            cast<ShapedType>(op->getResult(0).getType()).getRank();
        int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
        return sameShapeRule(op, {axis});
      })
      .Case<ConcatOp, SplitOp>([](auto op) {
        int64_t rank = cast<ShapedType>(op->getResult(0).getType()).getRank();
        int64_t axis = op.getAxis() < 0 ? op.getAxis() + rank : op.getAxis();
        return sameShapeRule(op, {axis});
      })
      .Case([](SliceOp op) {
        return sameShapeRule(
            op, partlyTakenDims(op.getInput().getType(), op.getType()));
      })
      .Case([](SliceGradOp op) {
        return sameShapeRule(op, partlyTakenDims(op.getType(),
                                                 op.getOutputGrad().getType()));
      })
      .Case([](DropoutOp op) -> std::optional<OpShardingRule> {
        // Masks are drawn per global element index: a block draws its part
        // at its offset and, when split after dim 0, with strided rows
        // (the partitioner sets both). An op already given a place in a
        // whole tensor stays whole.
        if (op.getTraining() && op.getRatio().convertToFloat() != 0.0f &&
            (op.getOffset() || op.getRowDim()))
          return std::nullopt;
        return elementwiseRule(op);
      })
      .Case([](GatherOp op) { return gatherRule(op); })
      .Case([](GatherGradOp op) { return gatherGradRule(op); })
      .Case([](LayerNormOp op) {
        int64_t rank = op.getInput().getType().getRank();
        return layerNormRule(op, op.getInput().getType().getShape(),
                             op.getAxis() < 0 ? op.getAxis() + rank
                                              : op.getAxis());
      })
      .Case([](LayerNormGradOp op) {
        int64_t rank = op.getInput().getType().getRank();
        return layerNormRule(op, op.getInput().getType().getShape(),
                             op.getAxis() < 0 ? op.getAxis() + rank
                                              : op.getAxis());
      })
      .Case([](SoftmaxCrossEntropyOp op) {
        return lossRule(op, op.getReduction(),
                        op.getScores().getType().getShape(),
                        canSplitClasses(op, op.getScores().getType()));
      })
      .Case([](NllLossOp op) {
        return lossRule(op, op.getReduction(),
                        op.getInput().getType().getShape());
      })
      .Case([](SoftmaxCrossEntropyGradOp op) {
        return lossRule(op, op.getReduction(),
                        op.getLogProb().getType().getShape(),
                        canSplitClasses(op, op.getLogProb().getType()));
      })
      .Case([](NllLossGradOp op) {
        return lossRule(op, op.getReduction(),
                        op.getInputGrad().getType().getShape());
      })
      .Case([](ConvOp op) {
        SmallVector<ConvRole> operands = {ConvRole::Input, ConvRole::Weight};
        if (op.getBias())
          operands.push_back(ConvRole::Bias);
        return convRule(op, operands, {ConvRole::Output}, op.getGroup());
      })
      .Case([](ConvGradInputOp op) {
        return convRule(op, {ConvRole::Output, ConvRole::Weight},
                        {ConvRole::Input}, op.getGroup());
      })
      .Case([](ConvGradWeightOp op) {
        return convRule(op, {ConvRole::Output, ConvRole::Input},
                        {ConvRole::Weight}, op.getGroup());
      })
      .Case<MaxPoolOp, AvgPoolOp, MaxPoolGradOp, AvgPoolGradOp>([](auto op) {
        // [N, C, spatial...] everywhere; windows need whole spatial dims.
        SmallVector<int64_t> spatial;
        for (int64_t dim = 2;
             dim < cast<ShapedType>(op->getResult(0).getType()).getRank(); ++dim)
          spatial.push_back(dim);
        return sameShapeRule(op, spatial);
      })
      .Case([](BatchNormOp op) -> std::optional<OpShardingRule> {
        // Training statistics are means over N and the spatial dims: N is
        // the statistics factor (see OpShardingRule); inference normalizes
        // per element, so N splits freely.
        RuleBuilder builder(op);
        ArrayRef<int64_t> shape = op.getInput().getType().getShape();
        int64_t c = builder.factor(shape[1]);
        int64_t n = builder.factor(shape[0]);
        builder.operand(0, 0, n);
        builder.result(0, 0, n);
        builder.operand(0, 1, c);
        builder.result(0, 1, c);
        for (unsigned i = 1; i < op->getNumOperands(); ++i)
          builder.operand(i, 0, c);
        for (unsigned i = 1; i < op->getNumResults(); ++i)
          builder.result(i, 0, c);
        OpShardingRule rule = builder.take();
        if (op.getTraining())
          rule.statisticsFactor = n;
        return rule;
      })
      .Case([](BatchNormGradOp op) {
        // The gradient recomputes the batch statistics from the input:
        // the same statistics factor; its scale and bias gradients sum
        // over the batch.
        RuleBuilder builder(op);
        int64_t c = builder.factor(op.getInput().getType().getDimSize(1));
        int64_t n = builder.factor(op.getInput().getType().getDimSize(0));
        builder.operand(0, 0, n);
        builder.operand(1, 0, n);
        builder.result(0, 0, n);
        builder.operand(0, 1, c);
        builder.operand(1, 1, c);
        builder.operand(2, 0, c);
        builder.result(0, 1, c);
        builder.result(1, 0, c);
        builder.result(2, 0, c);
        OpShardingRule rule = builder.take();
        rule.statisticsFactor = n;
        rule.statisticsSums = {1, 2};
        return rule;
      })
      .Default([](Operation *) { return std::nullopt; });
}

SmallVector<AxisList> mlir::cleave::getFactorAxes(
    const OpShardingRule &rule, ArrayRef<ShardingAttr> operands,
    ArrayRef<ShardingAttr> results) {
  // Each answer is copied before the next is asked for: one scratch list.
  AxisList scratch;
  auto view = [&scratch](ArrayRef<ShardingAttr> shardings) {
    return [&scratch, shardings](unsigned index,
                                 int64_t dim) -> ArrayRef<StringAttr> {
      scratch = shardings[index].getDimAxes(dim);
      return scratch;
    };
  };
  return getFactorAxes(rule, view(operands), view(results));
}

SmallVector<AxisList> mlir::cleave::getFactorAxes(
    const OpShardingRule &rule,
    function_ref<ArrayRef<StringAttr>(unsigned, int64_t)> operandAxes,
    function_ref<ArrayRef<StringAttr>(unsigned, int64_t)> resultAxes) {
  SmallVector<AxisList> axes(rule.factorSizes.size());
  SmallVector<bool> onResult(rule.factorSizes.size(), false);
  for (auto [index, factors] : llvm::enumerate(rule.resultFactors))
    for (auto [dim, f] : llvm::enumerate(factors))
      if (f >= 0) {
        onResult[f] = true;
        if (axes[f].empty())
          axes[f] = AxisList(resultAxes(index, dim));
      }
  for (auto [index, factors] : llvm::enumerate(rule.operandFactors))
    for (auto [dim, f] : llvm::enumerate(factors))
      if (f >= 0 && !onResult[f] && axes[f].empty())
        axes[f] = AxisList(operandAxes(index, dim));
  // An axis splits at most one factor: later claims lose (the operand is
  // then resharded).
  // Contracting factors claim first: a value split along a dimension the
  // op sums over makes a partial result (reduced later, possibly by a
  // reduce_scatter) rather than a gathered operand.
  // The statistics factor claims before all: a micro-batch must stay one
  // (an axis it lost would gather micro-batches), and its other axes only
  // need its statistics summed across ranks.
  llvm::SmallDenseSet<StringAttr> claimed;
  if (rule.statisticsFactor >= 0) {
    AxisList &list = axes[rule.statisticsFactor];
    claimed.insert(list.begin(), list.end());
  }
  for (bool results : {false, true})
    for (auto [f, list] : llvm::enumerate(axes)) {
      if (onResult[f] != results ||
          static_cast<int64_t>(f) == rule.statisticsFactor)
        continue;
      if (llvm::any_of(list, [&](StringAttr a) { return claimed.count(a); }))
        list.clear();
      claimed.insert(list.begin(), list.end());
    }
  return axes;
}

ShardingAttr mlir::cleave::getRequiredOperandSharding(
    MLIRContext *context, const OpShardingRule &rule, unsigned index,
    ArrayRef<AxisList> factorAxes) {
  SmallVector<SmallVector<StringAttr>> dims;
  for (int64_t f : rule.operandFactors[index])
    dims.push_back(f >= 0 ? SmallVector<StringAttr>(factorAxes[f])
                          : SmallVector<StringAttr>());
  return ShardingAttr::get(context, dims, {}, {});
}

ArrayRef<StringAttr>
mlir::cleave::getRequiredOperandDimAxes(const OpShardingRule &rule,
                                        unsigned index, int64_t dim,
                                        ArrayRef<AxisList> factorAxes) {
  int64_t f = rule.operandFactors[index][dim];
  return f >= 0 ? ArrayRef<StringAttr>(factorAxes[f]) : ArrayRef<StringAttr>();
}

AxisList mlir::cleave::getResultPartialAxes(const OpShardingRule &rule,
                                            unsigned index,
                                            ArrayRef<AxisList> factorAxes) {
  AxisList partial;
  for (auto [f, axes] : llvm::enumerate(factorAxes)) {
    if (axes.empty() || llvm::is_contained(rule.resultFactors[index],
                                           static_cast<int64_t>(f)))
      continue;
    if (static_cast<int64_t>(f) == rule.statisticsFactor) {
      // Sums over the other axes are all-reduced by the op's own rewrite
      // (SplitBatchStatistics); micro-batches sum gradients.
      if (llvm::is_contained(rule.statisticsSums, index))
        for (StringAttr axis : axes)
          if (axis.getValue() == kMicroBatchAxis)
            partial.push_back(axis);
      continue;
    }
    llvm::append_range(partial, axes);
  }
  return partial;
}

AxisList mlir::cleave::getSplitStatisticsAxes(
    const OpShardingRule &rule, ArrayRef<AxisList> factorAxes) {
  AxisList split;
  if (rule.statisticsFactor >= 0)
    for (StringAttr axis : factorAxes[rule.statisticsFactor])
      if (axis.getValue() != kMicroBatchAxis)
        split.push_back(axis);
  return split;
}
