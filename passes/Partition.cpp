//===- Partition.cpp - the per-rank SPMD program --------------------------===//
//
// Rewrites a program whose values carry shardings into the program one rank
// runs, in place: types become local, and collectives appear where a value
// does not have the sharding its consumer needs. See Passes.td for the
// contract.
//
//===----------------------------------------------------------------------===//

#include "passes/DeadTapCollectives.h"
#include "passes/Passes.h"
#include "passes/ShardingHints.h"
#include "passes/ShardingRules.h"
#include "passes/SplitBatchStatistics.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_PARTITIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// How a local value relates to its global value.
struct Placement {
  /// Per dimension, the axes it is split over.
  SmallVector<AxisList> dims;
  /// Axes over which it holds partial sums.
  AxisList partial;
};

Placement placementOf(ShardingAttr sharding) {
  Placement placement;
  for (int64_t dim = 0; dim < static_cast<int64_t>(sharding.getDims().size());
       ++dim)
    placement.dims.push_back(AxisList(sharding.getDimAxes(dim)));
  placement.partial = AxisList(sharding.getPartialAxes());
  return placement;
}

ArrayAttr axesAttr(MLIRContext *context, ArrayRef<StringAttr> axes) {
  return ArrayAttr::get(context,
                        SmallVector<Attribute>(axes.begin(), axes.end()));
}

/// Makes `op`, a gather from a table (or the scatter-add of its gradient
/// into one) whose gathered dim is split over `axes`, work on this rank's
/// rows [r * rows, (r + 1) * rows), r its index over `axes`: indices are
/// shifted to local rows, those outside look up row 0, and what they
/// produce is zeroed (the gather's result is then this rank's share of a
/// partial sum) or, for the gradient, not added. Negative indices count
/// from the end of the whole table, as ONNX says.
void localizeSplitGather(Operation *op, ArrayRef<StringAttr> axes,
                         MeshAttr mesh) {
  bool forward = isa<GatherOp>(op);
  int64_t axis =
      forward ? cast<GatherOp>(op).getAxis() : cast<GatherGradOp>(op).getAxis();
  auto table = cast<RankedTensorType>(forward ? op->getOperand(0).getType()
                                              : op->getResult(0).getType());
  if (axis < 0)
    axis += table.getRank();
  int64_t rows = table.getDimSize(axis);
  int64_t allRows = rows * mesh.getGroupSize(axes);
  Value indices = op->getOperand(1);
  auto indexType = cast<RankedTensorType>(indices.getType());
  Type index = indexType.getElementType();
  auto boolType = RankedTensorType::get(indexType.getShape(),
                                        IntegerType::get(op->getContext(), 1));

  OpBuilder b(op);
  Location loc = op->getLoc();
  auto scalar = [&](Type element, Attribute value) -> Value {
    auto type = RankedTensorType::get({}, element);
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, value));
  };
  auto integer = [&](int64_t value) {
    return scalar(index, b.getIntegerAttr(index, value));
  };
  Value rank =
      AxisIndexOp::create(b, loc, RankedTensorType::get({}, b.getI64Type()),
                          axesAttr(op->getContext(), axes));
  if (index != b.getI64Type())
    rank = CastOp::create(b, loc, RankedTensorType::get({}, index), rank);
  Value offset = MulOp::create(b, loc, rank.getType(), rank, integer(rows));
  Value negative = LessOp::create(b, loc, boolType, indices, integer(0));
  Value wrapped = WhereOp::create(
      b, loc, indexType, negative,
      AddOp::create(b, loc, indexType, indices, integer(allRows)), indices);
  Value local = SubOp::create(b, loc, indexType, wrapped, offset);
  // Below the block goes above it, so that one compare finds both.
  Value below = LessOp::create(b, loc, boolType, local, integer(0));
  Value moved = WhereOp::create(b, loc, indexType, below, integer(rows), local);
  Value valid = LessOp::create(b, loc, boolType, moved, integer(rows));
  Value safe = WhereOp::create(b, loc, indexType, valid, moved, integer(0));
  op->setOperand(1, safe);

  // `valid` broadcast over the table's other dims.
  SmallVector<int64_t> maskShape(axis, 1);
  llvm::append_range(maskShape, indexType.getShape());
  maskShape.append(table.getRank() - axis - 1, 1);
  Value mask = ReshapeOp::create(
      b, loc, RankedTensorType::get(maskShape, b.getI1Type()), valid);
  Value values = forward ? op->getResult(0) : op->getOperand(0);
  auto valuesType = cast<RankedTensorType>(values.getType());
  Value zero = scalar(valuesType.getElementType(),
                      b.getZeroAttr(valuesType.getElementType()));
  if (!forward) {
    op->setOperand(0, WhereOp::create(b, loc, valuesType, mask, values, zero));
    return;
  }
  b.setInsertionPointAfter(op);
  auto masked = WhereOp::create(b, loc, valuesType, mask, values, zero);
  values.replaceAllUsesExcept(masked, masked);
}

/// Helpers for the per-rank arithmetic built after partitioning.
struct LocalBuilder {
  OpBuilder &b;
  Location loc;

  RankedTensorType type(ArrayRef<int64_t> shape, Type element) {
    return RankedTensorType::get(shape, element);
  }
  Value scalar(Type element, Attribute value) {
    return ConstantOp::create(b, loc,
                              DenseElementsAttr::get(type({}, element), value));
  }
  Value reduce(Value input, bool max, bool keepdims) {
    auto in = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> shape{in.getDimSize(0)};
    if (keepdims)
      shape.push_back(1);
    auto result = type(shape, in.getElementType());
    auto axes = b.getDenseI64ArrayAttr({1});
    if (max)
      return ReduceMaxOp::create(b, loc, result, input, axes,
                                 b.getBoolAttr(keepdims));
    return ReduceSumOp::create(b, loc, result, input, axes,
                               b.getBoolAttr(keepdims));
  }
  /// [N, classes] booleans: whether column c is the label's, for this
  /// rank's block of `classes` classes (labels elsewhere match nothing).
  Value labelColumns(Value labels, int64_t classes, ArrayAttr axes) {
    auto labelType = cast<RankedTensorType>(labels.getType());
    Type index = labelType.getElementType();
    int64_t n = labelType.getDimSize(0);
    Value rank = AxisIndexOp::create(b, loc, type({}, b.getI64Type()), axes);
    if (index != b.getI64Type())
      rank = CastOp::create(b, loc, type({}, index), rank);
    Value offset =
        MulOp::create(b, loc, rank.getType(), rank,
                      scalar(index, b.getIntegerAttr(index, classes)));
    Value local =
        ReshapeOp::create(b, loc, type({n, 1}, index),
                          SubOp::create(b, loc, labelType, labels, offset));
    SmallVector<APInt> iota;
    for (int64_t c = 0; c < classes; ++c)
      iota.push_back(APInt(index.getIntOrFloatBitWidth(), c));
    Value columns = ConstantOp::create(
        b, loc, DenseElementsAttr::get(type({1, classes}, index), iota));
    return EqualOp::create(b, loc, type({n, classes}, b.getI1Type()), columns,
                           local);
  }
  /// `value` with the samples whose label is `ignoreIndex` zeroed
  /// (`value` is [N] or [N, C]).
  Value dropIgnored(Value value, Value labels, IntegerAttr ignoreIndex) {
    if (!ignoreIndex)
      return value;
    auto labelType = cast<RankedTensorType>(labels.getType());
    auto valueType = cast<RankedTensorType>(value.getType());
    int64_t n = labelType.getDimSize(0);
    Value ignored =
        EqualOp::create(b, loc, type({n}, b.getI1Type()), labels,
                        scalar(labelType.getElementType(),
                               b.getIntegerAttr(labelType.getElementType(),
                                                ignoreIndex.getInt())));
    if (valueType.getRank() == 2)
      ignored = ReshapeOp::create(b, loc, type({n, 1}, b.getI1Type()), ignored);
    Type element = valueType.getElementType();
    return WhereOp::create(b, loc, valueType, ignored,
                           scalar(element, b.getZeroAttr(element)), value);
  }
};

/// Softmax cross entropy of [N, C] scores split by class over `axes` (the
/// vocabulary-parallel loss of Megatron): the row maxima are all-gathered
/// (a few numbers per sample) for a common shift, the sums of exponentials
/// and the label's log-probability are all-reduced; log_prob stays this
/// rank's block. The loss is then whole on every rank.
void localizeSplitCrossEntropy(SoftmaxCrossEntropyOp op, ArrayAttr axes,
                               MeshAttr mesh) {
  OpBuilder b(op);
  LocalBuilder l{b, op.getLoc()};
  Location loc = op.getLoc();
  Value scores = op.getScores();
  auto scoresType = cast<RankedTensorType>(scores.getType());
  Type element = scoresType.getElementType();
  int64_t n = scoresType.getDimSize(0), classes = scoresType.getDimSize(1);
  int64_t group =
      mesh.getGroupSize(llvm::to_vector(axes.getAsRange<StringAttr>()));
  Value rowMax = l.reduce(scores, /*max=*/true, /*keepdims=*/true);
  Value allMax =
      AllGatherOp::create(b, loc, l.type({n, group}, element), rowMax, axes, 1);
  Value shift = l.reduce(allMax, /*max=*/true, /*keepdims=*/true);
  Value shifted = SubOp::create(b, loc, scoresType, scores, shift);
  Value sum = l.reduce(ExpOp::create(b, loc, scoresType, shifted),
                       /*max=*/false, /*keepdims=*/true);
  sum = AllReduceOp::create(b, loc, ValueRange{sum}, axes).getResult(0);
  Value logProb = SubOp::create(b, loc, scoresType, shifted,
                                LogOp::create(b, loc, sum.getType(), sum));
  Value mine = WhereOp::create(
      b, loc, scoresType, l.labelColumns(op.getLabels(), classes, axes),
      logProb, l.scalar(element, b.getZeroAttr(element)));
  Value picked = l.reduce(mine, /*max=*/false, /*keepdims=*/false);
  picked = AllReduceOp::create(b, loc, ValueRange{picked}, axes).getResult(0);
  Value perSample =
      l.dropIgnored(NegOp::create(b, loc, picked.getType(), picked),
                    op.getLabels(), op.getIgnoreIndexAttr());
  Value loss = perSample;
  if (op.getReduction() == LossReduction::Sum)
    loss =
        ReduceSumOp::create(b, loc, l.type({}, element), perSample,
                            b.getDenseI64ArrayAttr({0}), b.getBoolAttr(false));
  op.getLoss().replaceAllUsesWith(loss);
  op.getLogProb().replaceAllUsesWith(logProb);
  op.erase();
}

/// The gradient of a class-split softmax cross entropy: (softmax - one-hot
/// of the label) times the loss gradient, all local to this rank's block.
void localizeSplitCrossEntropyGrad(SoftmaxCrossEntropyGradOp op,
                                   ArrayAttr axes) {
  OpBuilder b(op);
  LocalBuilder l{b, op.getLoc()};
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(op.getLogProb().getType());
  Type element = type.getElementType();
  int64_t n = type.getDimSize(0), classes = type.getDimSize(1);
  Value oneHot = WhereOp::create(
      b, loc, type, l.labelColumns(op.getLabels(), classes, axes),
      l.scalar(element, b.getFloatAttr(element, 1.0)),
      l.scalar(element, b.getZeroAttr(element)));
  Value grad = SubOp::create(
      b, loc, type, ExpOp::create(b, loc, type, op.getLogProb()), oneHot);
  Value scale = op.getLossGrad();
  if (op.getReduction() == LossReduction::None)
    scale = ReshapeOp::create(b, loc, l.type({n, 1}, element), scale);
  grad = MulOp::create(b, loc, type, grad, scale);
  grad = l.dropIgnored(grad, op.getLabels(), op.getIgnoreIndexAttr());
  op.getScoresGrad().replaceAllUsesWith(grad);
  op.erase();
}

/// A dropout of a block of its whole input (split along the dims
/// `dimAxes` names axes for) draws the whole tensor's mask at the block's
/// elements: its offset is the flat index of the block's first element
/// (each split dim's block index, over its axes, times the block's extent
/// there and the whole tensor's stride), and a split after dim 0 makes the
/// block's rows strided (row_dim, row_stride).
void localizeSplitDropout(DropoutOp dropout, ArrayRef<AxisList> dimAxes,
                          MeshAttr mesh) {
  MLIRContext *context = dropout.getContext();
  OpBuilder b(dropout);
  Location loc = dropout.getLoc();
  LocalBuilder local{b, loc};
  auto index = b.getI64Type();
  ArrayRef<int64_t> block = dropout.getInput().getType().getShape();
  int64_t rank = static_cast<int64_t>(block.size());
  SmallVector<int64_t> whole(block);
  for (int64_t d = 0; d < rank; ++d)
    whole[d] *= mesh.getGroupSize(dimAxes[d]);
  SmallVector<int64_t> stride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * whole[d + 1];
  Value offset = dropout.getOffset();
  int64_t innermost = -1;
  for (int64_t d = 0; d < rank; ++d) {
    if (dimAxes[d].empty())
      continue;
    innermost = d;
    Value at = AxisIndexOp::create(b, loc, local.type({}, index),
                                   axesAttr(context, dimAxes[d]));
    Value start = MulOp::create(
        b, loc, at.getType(), at,
        local.scalar(index, b.getIntegerAttr(index, block[d] * stride[d])));
    offset =
        offset
            ? AddOp::create(b, loc, start.getType(), start, offset).getResult()
            : start;
  }
  dropout.getOffsetMutable().assign(offset);
  if (innermost > 0) {
    dropout.setRowDim(innermost);
    dropout.setRowStride(stride[innermost - 1]);
  }
}

class Partitioner {
public:
  Partitioner(MeshAttr mesh, bool reduceScatterGradients)
      : mesh(mesh), reduceScatterGradients(reduceScatterGradients) {}

  LogicalResult run(func::FuncOp func);

private:
  /// `value` with the sharding `required`, converted by collectives placed
  /// before `user` (gathers and slices) or right after `value` is computed
  /// (reductions of partial sums, so that they can start early).
  /// With `reuse`, a conversion made for an earlier user is shared;
  /// explicit reshards pass false so each gathers its own short-lived copy
  /// (ZeRO-3 gathers parameters per use).
  Value convert(Value value, ShardingAttr required, Operation *user,
                bool reuse = true);
  RankedTensorType localType(RankedTensorType type,
                             ArrayRef<AxisList> dims) const;

  MeshAttr mesh;
  bool reduceScatterGradients;
  llvm::DenseMap<Value, Placement> placements;
  /// Conversions already made, per value and target sharding.
  llvm::DenseMap<std::pair<Value, Attribute>, Value> converted;
};

RankedTensorType Partitioner::localType(RankedTensorType type,
                                        ArrayRef<AxisList> dims) const {
  SmallVector<int64_t> shape(type.getShape());
  for (auto [dim, axes] : llvm::enumerate(dims))
    shape[dim] /= mesh.getGroupSize(axes);
  return RankedTensorType::get(shape, type.getElementType());
}

Value Partitioner::convert(Value value, ShardingAttr required,
                           Operation *user, bool reuse) {
  auto key = std::make_pair(value, Attribute(required));
  if (auto it = converted.find(key); reuse && it != converted.end())
    return it->second;
  MLIRContext *context = value.getContext();
  Placement current = placements.lookup(value);
  Placement target = placementOf(required);
  Value result = value;
  Location loc = user->getLoc();
  auto type = [&]() { return cast<RankedTensorType>(result.getType()); };
  auto scaledType = [&](int64_t dim, int64_t numerator, int64_t denominator) {
    SmallVector<int64_t> shape(type().getShape());
    shape[dim] = shape[dim] * numerator / denominator;
    return RankedTensorType::get(shape, type().getElementType());
  };

  OpBuilder b(user);
  if (!current.partial.empty()) {
    // Reduce where the partial sums are produced, so the exchange can
    // overlap the work between there and `user`.
    if (Operation *def = value.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(value.getParentBlock());
    // A sum split over what it is summed over is reduce-scattered. With
    // micro-batches, one split over the data axes but not over the
    // micro-batches (ZeRO-2/3's gradients) is reduce-scattered over the
    // data axes, then its blocks are summed over the micro-batches: each
    // micro-batch's gradient is scattered as it is computed and only this
    // rank's block is accumulated (DeepSpeed's ZeRO-2/3 reduce every
    // micro-step too), never a whole gradient.
    int64_t scatterDim = -1;
    AxisList scatterAxes = current.partial, sumAxes;
    AxisList withoutMicroBatches;
    for (StringAttr axis : current.partial)
      if (axis.getValue() != kMicroBatchAxis)
        withoutMicroBatches.push_back(axis);
    for (auto [dim, axes] : llvm::enumerate(target.dims)) {
      if (!reduceScatterGradients)
        break;
      AxisList wanted(current.dims[dim]);
      llvm::append_range(wanted, current.partial);
      AxisList wantedPerMicroBatch(current.dims[dim]);
      llvm::append_range(wantedPerMicroBatch, withoutMicroBatches);
      if (axes == wanted) {
        scatterDim = dim;
      } else if (!withoutMicroBatches.empty() &&
                 withoutMicroBatches.size() < current.partial.size() &&
                 axes == wantedPerMicroBatch) {
        scatterDim = dim;
        scatterAxes = withoutMicroBatches;
        sumAxes = {StringAttr::get(context, kMicroBatchAxis)};
      }
    }
    int64_t group = mesh.getGroupSize(scatterAxes);
    // One all-reduce serves every consumer that wants the whole sum.
    SmallVector<SmallVector<StringAttr>> dims(current.dims.begin(),
                                              current.dims.end());
    auto reducedKey = std::make_pair(
        value, Attribute(ShardingAttr::get(context, dims, {}, {})));
    if (scatterDim < 0 && converted.count(reducedKey)) {
      result = converted[reducedKey];
    } else if (scatterDim >= 0) {
      result = ReduceScatterOp::create(
          b, loc, scaledType(scatterDim, 1, group), result,
          axesAttr(context, scatterAxes), scatterDim);
      if (!sumAxes.empty())
        result = AllReduceOp::create(b, loc, ValueRange{result},
                                     axesAttr(context, sumAxes))
                     .getResult(0);
      current.dims[scatterDim] = target.dims[scatterDim];
    } else {
      result = AllReduceOp::create(b, loc, ValueRange{result},
                                   axesAttr(context, current.partial))
                   .getResult(0);
      converted[reducedKey] = result;
    }
    current.partial.clear();
    b.setInsertionPoint(user);
  }
  // Gather what the target does not split, then slice what it splits more.
  for (auto [dim, have] : llvm::enumerate(current.dims)) {
    const AxisList &want = target.dims[dim];
    if (ArrayRef<StringAttr>(have).take_front(want.size()) ==
            ArrayRef<StringAttr>(want) && have.size() >= want.size()) {
      AxisList extra(have.begin() + want.size(), have.end());
      if (extra.empty())
        continue;
      int64_t group = mesh.getGroupSize(extra);
      result = AllGatherOp::create(b, loc, scaledType(dim, group, 1), result,
                                   axesAttr(context, extra), dim);
      have.resize(want.size());
    } else if (!(ArrayRef<StringAttr>(want).take_front(have.size()) ==
                 ArrayRef<StringAttr>(have))) {
      int64_t group = mesh.getGroupSize(have);
      result = AllGatherOp::create(b, loc, scaledType(dim, group, 1), result,
                                   axesAttr(context, have), dim);
      have.clear();
    }
  }
  for (auto [dim, have] : llvm::enumerate(current.dims)) {
    const AxisList &want = target.dims[dim];
    if (have.size() == want.size())
      continue;
    AxisList extra(want.begin() + have.size(), want.end());
    int64_t group = mesh.getGroupSize(extra);
    result = AllSliceOp::create(b, loc, scaledType(dim, 1, group), result,
                                axesAttr(context, extra), dim);
    have = want;
  }
  placements[result] = target;
  converted[key] = result;
  return result;
}

LogicalResult Partitioner::run(func::FuncOp func) {
  MLIRContext *context = func.getContext();
  Block &body = func.getBody().front();
  // Rules read global shapes, so take them all before types change.
  llvm::DenseMap<Operation *, std::optional<OpShardingRule>> rules;
  rules.reserve(body.getOperations().size());
  for (Operation &op : body)
    rules[&op] = getShardingRule(&op);
  for (BlockArgument arg : body.getArguments()) {
    auto sharding = func.getArgAttrOfType<ShardingAttr>(
        arg.getArgNumber(), CleaveDialect::kShardingAttrName);
    if (!sharding)
      return func.emitError("argument ")
             << arg.getArgNumber()
             << " has no sharding; run cleave-propagate-sharding first";
    if (std::optional<std::string> problem =
            sharding.checkAgainst(mesh, cast<ShapedType>(arg.getType())))
      return func.emitError("argument ")
             << arg.getArgNumber() << " has an invalid sharding: " << *problem;
    Placement placement = placementOf(sharding);
    arg.setType(localType(cast<RankedTensorType>(arg.getType()),
                          placement.dims));
    placements[arg] = placement;
  }
  // Gathers from tables split along the gathered dim, and cross entropies
  // of scores split by class, with the axes.
  SmallVector<std::pair<Operation *, AxisList>> splitGathers, splitLosses,
      splitStatistics;
  // Dropouts of a block, with the axes splitting each dim.
  SmallVector<std::pair<DropoutOp, SmallVector<AxisList>>> splitDropouts;
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto reshard = dyn_cast<ReshardOp>(op)) {
      reshard.replaceAllUsesWith(
          convert(reshard.getInput(), reshard.getSharding(), &op,
                  /*reuse=*/false));
      reshard.erase();
      continue;
    }
    if (isa<func::ReturnOp>(op)) {
      for (unsigned i = 0; i < op.getNumOperands(); ++i) {
        auto sharding = func.getResultAttrOfType<ShardingAttr>(
            i, CleaveDialect::kShardingAttrName);
        if (!sharding)
          return func.emitError("result ")
                 << i << " has no sharding; run cleave-propagate-sharding "
                         "first";
        op.setOperand(i, convert(op.getOperand(i), sharding, &op));
      }
      continue;
    }
    auto shardings =
        op.getAttrOfType<ArrayAttr>(CleaveDialect::kShardingAttrName);
    if (!shardings)
      return op.emitOpError("has no sharding; run cleave-propagate-sharding "
                            "first");
    // (Looked up first: operator[] may insert and move the entries.)
    for (Value operand : op.getOperands())
      (void)placements[operand];
    SmallVector<const Placement *> operandPlacements;
    for (Value operand : op.getOperands())
      operandPlacements.push_back(&placements.find(operand)->second);
    SmallVector<ShardingAttr> resultShardings;
    llvm::append_range(resultShardings, shardings.getAsRange<ShardingAttr>());
    const std::optional<OpShardingRule> &rule = rules[&op];
    SmallVector<AxisList> factorAxes;
    if (rule) {
      AxisList scratch;
      factorAxes = getFactorAxes(
          *rule,
          [&](unsigned index, int64_t dim) -> ArrayRef<StringAttr> {
            return operandPlacements[index]->dims[dim];
          },
          [&](unsigned index, int64_t dim) -> ArrayRef<StringAttr> {
            scratch = resultShardings[index].getDimAxes(dim);
            return scratch;
          });
    }
    for (unsigned i = 0; i < op.getNumOperands(); ++i) {
      // An operand already as required converts to itself: skip building
      // the sharding (most operands of most ops).
      const Placement &have = placements[op.getOperand(i)];
      bool asRequired = have.partial.empty();
      for (int64_t d = 0, e = have.dims.size(); asRequired && d < e; ++d)
        asRequired = ArrayRef<StringAttr>(have.dims[d]) ==
                     (rule ? getRequiredOperandDimAxes(*rule, i, d, factorAxes)
                           : ArrayRef<StringAttr>());
      if (asRequired) {
        // Set all the same: setting an operand moves its use to the front
        // of the value's use list, which later passes walk.
        op.setOperand(i, op.getOperand(i));
        continue;
      }
      ShardingAttr required =
          rule ? getRequiredOperandSharding(context, *rule, i, factorAxes)
               : ShardingAttr::getReplicated(context, have.dims.size());
      op.setOperand(i, convert(op.getOperand(i), required, &op));
    }
    if (rule && isa<GatherOp, GatherGradOp>(op)) {
      int64_t axis = isa<GatherOp>(op) ? cast<GatherOp>(op).getAxis()
                                       : cast<GatherGradOp>(op).getAxis();
      auto table =
          cast<ShapedType>(isa<GatherOp>(op) ? op.getOperand(0).getType()
                                             : op.getResult(0).getType());
      if (axis < 0)
        axis += table.getRank();
      int64_t factor = isa<GatherOp>(op) ? rule->operandFactors[0][axis]
                                         : rule->resultFactors[0][axis];
      if (!factorAxes[factor].empty())
        splitGathers.emplace_back(&op, factorAxes[factor]);
    }
    if (rule) {
      AxisList axes = getSplitStatisticsAxes(*rule, factorAxes);
      if (!axes.empty())
        splitStatistics.emplace_back(&op, axes);
    }
    // A dropout of a block draws that block's part of the whole tensor's
    // mask.
    if (auto dropout = dyn_cast<DropoutOp>(op); rule && dropout) {
      SmallVector<AxisList> dimAxes;
      for (int64_t factor : rule->operandFactors[0])
        dimAxes.push_back(factor >= 0 ? factorAxes[factor] : AxisList());
      if (llvm::any_of(dimAxes, [](const AxisList &a) { return !a.empty(); }))
        splitDropouts.emplace_back(dropout, std::move(dimAxes));
    }
    // The class axes of a class-split loss, which its rewrite reduces.
    AxisList classAxes;
    if (rule && isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>(op) &&
        cast<ShapedType>(
            op.getOperand(isa<SoftmaxCrossEntropyOp>(op) ? 0 : 1).getType())
                .getRank() == 2) {
      int64_t factor =
          rule->operandFactors[isa<SoftmaxCrossEntropyOp>(op) ? 0 : 1][1];
      if (factor >= 0 && !factorAxes[factor].empty()) {
        splitLosses.emplace_back(&op, factorAxes[factor]);
        classAxes = factorAxes[factor];
      }
    }
    for (auto [index, result] : llvm::enumerate(op.getResults())) {
      Placement placement = placementOf(resultShardings[index]);
      if (rule) {
        placement.partial = getResultPartialAxes(*rule, index, factorAxes);
        llvm::erase_if(placement.partial, [&](StringAttr axis) {
          return llvm::is_contained(classAxes, axis);
        });
      }
      result.setType(localType(cast<RankedTensorType>(result.getType()),
                               placement.dims));
      placements[result] = placement;
    }
    op.removeAttr(CleaveDialect::kShardingAttrName);
  }
  // Local shapes are known now; the new ops need no sharding.
  for (auto &[op, axes] : splitGathers)
    localizeSplitGather(op, axes, mesh);
  for (auto &[dropout, dimAxes] : splitDropouts)
    localizeSplitDropout(dropout, dimAxes, mesh);
  SplitBatchStatistics batchStatistics(mesh);
  for (auto &[op, axes] : splitStatistics)
    batchStatistics.rewrite(op, axes);
  for (auto &[op, axes] : splitLosses) {
    if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(op))
      localizeSplitCrossEntropy(loss, axesAttr(context, axes), mesh);
    else
      localizeSplitCrossEntropyGrad(cast<SoftmaxCrossEntropyGradOp>(op),
                                    axesAttr(context, axes));
  }
  func.setType(FunctionType::get(context, body.getArgumentTypes(),
                                 body.getTerminator()->getOperandTypes()));
  return success();
}

/// Merges the single all-reduces of partial sums, in program order, into
/// buckets of at most `bucketBytes` over the same axes. A bucket is issued
/// where its last member was; a member used before that closes the bucket
/// early.
void bucketAllReduces(func::FuncOp func, int64_t bucketBytes) {
  SmallVector<AllReduceOp> bucket;
  int64_t bytes = 0;
  auto flush = [&]() {
    if (bucket.size() > 1) {
      SmallVector<Value> inputs;
      for (AllReduceOp op : bucket)
        inputs.push_back(op.getInputs()[0]);
      OpBuilder b(bucket.back());
      b.setInsertionPointAfter(bucket.back());
      auto merged = AllReduceOp::create(
          b, NameLoc::get(b.getStringAttr("gradient_bucket"),
                          bucket.back().getLoc()),
          inputs, bucket.back().getAxes());
      for (auto [index, op] : llvm::enumerate(bucket)) {
        op.getResult(0).replaceAllUsesWith(merged.getResult(index));
        op.erase();
      }
    }
    bucket.clear();
    bytes = 0;
  };
  auto usedBefore = [&](AllReduceOp member, Operation *position) {
    return llvm::any_of(member->getUsers(), [&](Operation *user) {
      return user->isBeforeInBlock(position);
    });
  };
  for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
    auto allReduce = dyn_cast<AllReduceOp>(op);
    if (!allReduce || allReduce.getInputs().size() != 1)
      continue;
    auto type = cast<RankedTensorType>(allReduce.getInputs()[0].getType());
    int64_t size = type.getNumElements() *
                   ((type.getElementTypeBitWidth() + 7) / 8);
    bool fits = !bucket.empty() &&
                bucket.front().getAxes() == allReduce.getAxes() &&
                cast<ShapedType>(bucket.front().getInputs()[0].getType())
                        .getElementType() == type.getElementType() &&
                bytes + size <= bucketBytes &&
                llvm::none_of(bucket, [&](AllReduceOp member) {
                  return usedBefore(member, allReduce);
                });
    if (!fits)
      flush();
    bucket.push_back(allReduce);
    bytes += size;
  }
  flush();
}

struct PartitionPass
    : mlir::cleave::impl::PartitionPassBase<PartitionPass> {
  using PartitionPassBase::PartitionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshAttr mesh = getModuleMesh(module);
    if (!mesh) {
      module.emitError("partitioning needs a 'cleave.mesh' module attribute");
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>()) {
      Partitioner partitioner(mesh, reduceScatterGradients);
      if (failed(partitioner.run(func)))
        return signalPassFailure();
      keepDeadTapsOutOfCollectives(func);
      bucketAllReduces(func, static_cast<int64_t>(bucketMb * (1 << 20)));
    }
  }
};

} // namespace
