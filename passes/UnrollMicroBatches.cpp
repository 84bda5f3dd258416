//===- UnrollMicroBatches.cpp - micro-batches as a mesh axis --------------===//
//
// The step was partitioned over a virtual mesh axis whose coordinates are
// micro-batches; this pass runs those "ranks" one after the other inside
// each real rank. See Passes.td for the contract.
//
// Ops that depend on the batch are cloned once per micro-batch, reading
// their micro-batch's rows of the inputs; sums over the axis (all_reduce)
// become adds of the clones' values (and an all_reduce over the remaining
// axes, if any); slices over it (all_slice) of a value computed once become
// each micro-batch's rows; everything else runs once. Sums cut the step
// into phases; within a phase every micro-batch's forward ops run,
// micro-batch after micro-batch, then their backward ops: in a program
// split into pipeline stages a stage hands micro-batch m on and starts
// m + 1 while the next stage works on m (GPipe's schedule). A training
// BatchNorm's copies normalize their micro-batch and chain the running
// statistics: micro-batch m + 1 updates what m left, as PyTorch's
// accumulation loop does, and the step returns the last copy's.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionAttributes.h"
#include "passes/Passes.h"
#include "passes/TrainingStep.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_UNROLLMICROBATCHESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// `sharding` without `axis`.
ShardingAttr withoutAxis(ShardingAttr sharding, StringAttr axis) {
  auto drop = [&](ArrayRef<StringAttr> axes) {
    SmallVector<StringAttr> kept;
    for (StringAttr a : axes)
      if (a != axis)
        kept.push_back(a);
    return kept;
  };
  SmallVector<SmallVector<StringAttr>> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(sharding.getDims().size()); ++d)
    dims.push_back(drop(sharding.getDimAxes(d)));
  return ShardingAttr::get(sharding.getContext(), dims,
                           drop(sharding.getReplicatedAxes()),
                           drop(sharding.getPartialAxes()));
}

class Unroller {
public:
  Unroller(func::FuncOp func, StringAttr axis, int64_t count, bool accumulate)
      : func(func), body(func.getBody().front()), axis(axis), count(count),
        accumulate(accumulate), perBatch(count) {}

  LogicalResult run();

private:
  bool sumsOverAxis(Operation *op) const {
    auto allReduce = dyn_cast<AllReduceOp>(op);
    return allReduce && llvm::is_contained(
                            allReduce.getAxes().getAsRange<StringAttr>(), axis);
  }
  /// `axes` without the micro-batch axis: what a collective over them still
  /// spans once micro-batches run inside each rank.
  SmallVector<Attribute> otherAxes(ArrayAttr axes) const {
    SmallVector<Attribute> rest;
    for (Attribute a : axes)
      if (a != axis)
        rest.push_back(a);
    return rest;
  }
  /// Maps `from` to `to` for every micro-batch: a value all of them share.
  void mapShared(Value from, Value to) {
    for (IRMapping &mapping : perBatch)
      mapping.map(from, to);
  }
  LogicalResult splitInputs(OpBuilder &b);
  /// Whether `op` is an all_slice over the micro-batch axis: a value the
  /// micro-batches share (a batch-shaped constant or random tensor) of
  /// which each reads its rows.
  bool slicesOverAxis(Operation *op) const;
  /// Micro-batch `m`'s block of `op`'s input; returns the op defining it.
  Operation *sliceForMicroBatch(OpBuilder &b, AllSliceOp op, int64_t m);
  /// Whether `op` is an axis_index over the micro-batch axis (a split
  /// dropout's offset): each micro-batch has its own.
  bool indexesAxis(Operation *op) const;
  /// Micro-batch `m`'s value of such an axis_index: its index over the
  /// other axes times the micro-batch count, plus m (the axis is
  /// innermost, as for the inputs).
  Operation *indexForMicroBatch(OpBuilder &b, AxisIndexOp op, int64_t m);
  /// Splits each sum over the axis of several values into one sum per
  /// value, so that each can end its own phase (the loss's count, needed
  /// by the backward pass, apart from the loss, which only the step
  /// returns); bundleOf remembers which were one.
  void splitBundledSums();
  /// The sum over micro-batches of `input`'s copies.
  Value sumOverMicroBatches(OpBuilder &b, Value input, Location loc);
  /// Emits `ops`, sums of one bundle ending the same phase: their values
  /// summed over micro-batches, then one all_reduce over the other axes.
  void emitSums(OpBuilder &b, ArrayRef<AllReduceOp> ops);
  /// Moves each sum over the axis and each op a micro-batch runs to the
  /// latest phase its readers allow (see run()).
  void placeLate(ArrayRef<Operation *> original,
                 llvm::DenseMap<Value, int64_t> &phaseOf,
                 llvm::DenseMap<Operation *, int64_t> &opPhase,
                 int64_t &numPhases);
  /// Micro-batch `m`'s copy of `op`, which depends on the batch.
  Operation *cloneForMicroBatch(OpBuilder &b, Operation *op, int64_t m);
  /// The gathers of a whole parameter from its blocks (ZeRO-3 gathers one
  /// per use) whose readers all depend on the batch: each micro-batch
  /// gathers its own copy right before its use, as DeepSpeed's stage 3
  /// does every micro-step, so that no gathered parameter is held across
  /// micro-batches; the gathers' bytes grow with the micro-batch count.
  llvm::DenseSet<Operation *>
  gathersPerMicroBatch(ArrayRef<Operation *> original);

  func::FuncOp func;
  Block &body;
  StringAttr axis;
  int64_t count;
  /// PyTorch's accumulation order (see the pass's `accumulate` option).
  bool accumulate;
  /// Per micro-batch: the clones of the original values.
  SmallVector<IRMapping> perBatch;
  /// Values that differ between micro-batches (in the original step).
  llvm::DenseSet<Value> varies;
  /// Training BatchNorms of a batch split into micro-batches, whose copies
  /// chain the running statistics, with the copy made last.
  llvm::DenseMap<Operation *, Operation *> chained;
  /// For each sum over the axis, the sum of several values it came from.
  llvm::DenseMap<Operation *, int64_t> bundleOf;
};

bool Unroller::slicesOverAxis(Operation *op) const {
  auto slice = dyn_cast<AllSliceOp>(op);
  return slice &&
         llvm::is_contained(slice.getAxes().getAsRange<StringAttr>(), axis);
}

Operation *Unroller::sliceForMicroBatch(OpBuilder &b, AllSliceOp op,
                                        int64_t m) {
  // Block m of this rank's block over the other axes: the micro-batch axis
  // is innermost, as for the inputs.
  Value input = perBatch[m].lookupOrDefault(op.getInput());
  auto type = cast<RankedTensorType>(op.getType());
  int64_t dim = op.getDim();
  SmallVector<Attribute> rest = otherAxes(op.getAxes());
  if (!rest.empty()) {
    SmallVector<int64_t> block(type.getShape());
    block[dim] *= count;
    input = AllSliceOp::create(
        b, op.getLoc(), RankedTensorType::get(block, type.getElementType()),
        input, b.getArrayAttr(rest), op.getDimAttr());
  }
  SmallVector<int64_t> offsets(type.getRank(), 0), strides(type.getRank(), 1);
  offsets[dim] = m * type.getDimSize(dim);
  auto rows = SliceOp::create(b, op.getLoc(), type, input,
                              b.getDenseI64ArrayAttr(offsets),
                              b.getDenseI64ArrayAttr(strides));
  perBatch[m].map(op.getResult(), rows.getResult());
  return rows;
}

bool Unroller::indexesAxis(Operation *op) const {
  auto index = dyn_cast<AxisIndexOp>(op);
  return index &&
         llvm::is_contained(index.getAxes().getAsRange<StringAttr>(), axis);
}

Operation *Unroller::indexForMicroBatch(OpBuilder &b, AxisIndexOp op,
                                        int64_t m) {
  auto type = cast<RankedTensorType>(op.getType());
  auto constant = [&](int64_t value) {
    return ConstantOp::create(
        b, op.getLoc(),
        DenseElementsAttr::get(type, b.getI64IntegerAttr(value).getValue()));
  };
  SmallVector<Attribute> rest = otherAxes(op.getAxes());
  Operation *value = constant(m);
  if (!rest.empty()) {
    Value others =
        AxisIndexOp::create(b, op.getLoc(), type, b.getArrayAttr(rest));
    Value scaled =
        MulOp::create(b, op.getLoc(), type, others, constant(count)->getResult(0));
    value = AddOp::create(b, op.getLoc(), type, scaled, value->getResult(0));
  }
  perBatch[m].map(op.getResult(), value->getResult(0));
  return value;
}

LogicalResult Unroller::splitInputs(OpBuilder &b) {
  FunctionAttributes argAttrs(func, FunctionAttributes::Arguments);
  for (BlockArgument arg : body.getArguments()) {
    auto sharding = dyn_cast_or_null<ShardingAttr>(
        argAttrs.get(arg.getArgNumber(), CleaveDialect::kShardingAttrName));
    if (!sharding)
      continue;
    std::optional<int64_t> dim;
    for (int64_t d = 0; d < static_cast<int64_t>(sharding.getDims().size());
         ++d) {
      SmallVector<StringAttr> axes = sharding.getDimAxes(d);
      if (!llvm::is_contained(axes, axis))
        continue;
      // Micro-batch m is block m of this rank's rows only when the axis is
      // the dimension's innermost.
      if (axes.back() != axis)
        return func.emitError()
               << "micro-batches must split dimension " << d << " of argument #"
               << arg.getArgNumber() << " innermost";
      dim = d;
    }
    argAttrs.set(arg.getArgNumber(), CleaveDialect::kShardingAttrName,
                 withoutAxis(sharding, axis));
    if (!dim)
      continue;
    // The argument becomes this rank's whole batch; each micro-batch reads
    // its rows.
    auto type = cast<RankedTensorType>(arg.getType());
    SmallVector<int64_t> whole(type.getShape());
    whole[*dim] *= count;
    arg.setType(RankedTensorType::get(whole, type.getElementType()));
    SmallVector<int64_t> strides(type.getRank(), 1);
    for (int64_t m = 0; m < count; ++m) {
      SmallVector<int64_t> offsets(type.getRank(), 0);
      offsets[*dim] = m * type.getDimSize(*dim);
      Value rows = SliceOp::create(b, arg.getLoc(), type, arg,
                                   b.getDenseI64ArrayAttr(offsets),
                                   b.getDenseI64ArrayAttr(strides));
      perBatch[m].map(arg, rows);
    }
  }
  return success();
}

/// A micro-batch's copy of a GEMM that adds nothing yet: if the sum is the
/// only reader (see emitSum), it can add the sum so far itself.
GemmOp accumulatingGemm(Value value) {
  auto gemm = value.getDefiningOp<GemmOp>();
  return gemm && !gemm.getC() ? gemm : GemmOp();
}

void Unroller::splitBundledSums() {
  int64_t bundle = 0;
  for (Operation &op : llvm::make_early_inc_range(body)) {
    auto sum = dyn_cast<AllReduceOp>(op);
    if (!sum || !sumsOverAxis(sum))
      continue;
    if (sum.getInputs().size() == 1) {
      bundleOf[sum] = bundle++;
      continue;
    }
    OpBuilder b(sum);
    for (auto [input, result] : llvm::zip(sum.getInputs(), sum.getResults())) {
      auto single = AllReduceOp::create(b, sum.getLoc(), ValueRange{input},
                                        sum.getAxes());
      single->setDiscardableAttrs(sum->getDiscardableAttrDictionary());
      result.replaceAllUsesWith(single.getResult(0));
      bundleOf[single] = bundle;
    }
    ++bundle;
    sum.erase();
  }
}

/// The op defining `a` or `b`, whichever comes later in their block (null
/// when both are block arguments).
static Operation *laterDefinition(Value a, Value b) {
  Operation *first = a.getDefiningOp(), *second = b.getDefiningOp();
  if (!first || !second)
    return first ? first : second;
  return first->isBeforeInBlock(second) ? second : first;
}

Value Unroller::sumOverMicroBatches(OpBuilder &b, Value input, Location loc) {
  SmallVector<Value> parts;
  for (int64_t m = 0; m < count; ++m)
    parts.push_back(perBatch[m].lookupOrDefault(input));
  // (The copies have no readers yet; the original's only reader is this
  // sum, so theirs will be too.)
  if (input.hasOneUse() &&
      llvm::all_of(parts, [](Value v) { return accumulatingGemm(v); })) {
    // Each micro-batch's GEMM adds its product to the previous one's
    // result (beta 1), in its buffer (MemoryPlan): no separate gradient
    // per micro-batch, no adds.
    Value sum = parts.front();
    for (Value part : ArrayRef<Value>(parts).drop_front()) {
      GemmOp gemm = accumulatingGemm(part);
      OpBuilder at(gemm);
      auto accumulated = GemmOp::create(
          at, gemm.getLoc(), gemm.getType(), gemm.getA(), gemm.getB(), sum,
          gemm.getAlphaAttr(), at.getF32FloatAttr(1.0f), gemm.getTransAAttr(),
          gemm.getTransBAttr());
      accumulated->setDiscardableAttrs(gemm->getDiscardableAttrDictionary());
      gemm.getResult().replaceAllUsesWith(accumulated.getResult());
      gemm.erase();
      sum = accumulated;
    }
    return sum;
  }
  // Each micro-batch's part is added to the running sum as soon as it
  // exists, so that one part is alive at a time (an embedding table's
  // gradient per micro-batch, a ZeRO block's), as PyTorch's .grad does;
  // the adds are the same chain, in the same order. With pipeline stages
  // the add is micro-batch m's, so that the schedule runs it in m's pass.
  Value sum = parts.front();
  for (auto [m, part] : llvm::enumerate(ArrayRef<Value>(parts))) {
    if (m == 0)
      continue;
    OpBuilder at = b;
    if (Operation *last = laterDefinition(sum, part))
      at.setInsertionPointAfter(last);
    auto add = AddOp::create(at, loc, input.getType(), sum, part);
    // Numbered as the op whose part it adds (a loss's adds are forward,
    // a gradient's backward: StepPhases).
    if (Operation *def = part.getDefiningOp(); def && !accumulate)
      if (auto copyOf = def->getAttrOfType<DenseI64ArrayAttr>(
              CleaveDialect::kMicroBatchAttrName);
          copyOf && copyOf.size() == 2)
        add->setAttr(CleaveDialect::kMicroBatchAttrName, copyOf);
    sum = add;
  }
  return sum;
}

void Unroller::emitSums(OpBuilder &b, ArrayRef<AllReduceOp> ops) {
  SmallVector<Value> sums, originals;
  for (AllReduceOp op : ops)
    for (auto [input, result] :
         llvm::zip(AllReduceOp(op).getInputs(), AllReduceOp(op).getResults())) {
      sums.push_back(sumOverMicroBatches(b, input, op.getLoc()));
      originals.push_back(result);
    }
  AllReduceOp last = ops.back();
  SmallVector<Attribute> rest = otherAxes(last.getAxes());
  ValueRange results = sums;
  if (!rest.empty())
    results = AllReduceOp::create(b, last.getLoc(), sums, b.getArrayAttr(rest))
                  .getResults();
  for (auto [from, to] : llvm::zip(originals, results))
    mapShared(from, to);
}

Operation *Unroller::cloneForMicroBatch(OpBuilder &b, Operation *op,
                                        int64_t m) {
  if (slicesOverAxis(op))
    return sliceForMicroBatch(b, cast<AllSliceOp>(op), m);
  if (indexesAxis(op))
    return indexForMicroBatch(b, cast<AxisIndexOp>(op), m);
  Operation *clone = b.clone(*op, perBatch[m]);
  if (auto it = chained.find(op); it != chained.end()) {
    // Micro-batch m starts from the running statistics m - 1 left.
    if (auto previous = cast_or_null<BatchNormOp>(it->second)) {
      auto norm = cast<BatchNormOp>(clone);
      norm.getRunningMeanMutable().assign(previous.getNewRunningMean());
      norm.getRunningVarMutable().assign(previous.getNewRunningVar());
    }
    it->second = clone;
  }
  return clone;
}

void Unroller::placeLate(ArrayRef<Operation *> original,
                         llvm::DenseMap<Value, int64_t> &phaseOf,
                         llvm::DenseMap<Operation *, int64_t> &opPhase,
                         int64_t &numPhases) {
  // The phases found so far are the earliest. A micro-batch's forward ops
  // feed its backward pass and the loss's sum; placed early, every
  // micro-batch's forward pass runs before any backward pass (the backward
  // pass waits for the sum of the loss's count), and every micro-batch's
  // activations are alive at once. So, from the end: a sum moves to the
  // phase before its first reader, an op of a micro-batch to its readers'
  // earliest phase (before a sum it feeds), and so does an op the
  // micro-batches share (it runs once, at the start of its phase). A
  // BatchNorm's running statistics are read a phase after it (the chain's
  // end, once every copy ran).
  for (Operation *op : llvm::reverse(original)) {
    // An op nothing reads stays: moved, it would keep its operands alive.
    if (op->use_empty())
      continue;
    bool norm = chained.count(op);
    int64_t latest = numPhases - 1 + (sumsOverAxis(op) ? 1 : 0);
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers()) {
        auto it = opPhase.find(user);
        if (it == opPhase.end())
          continue; // the return
        bool statistic = norm && result != cast<BatchNormOp>(op).getY();
        latest = std::min(latest, it->second -
                                      (sumsOverAxis(user) || statistic ? 1 : 0));
      }
    opPhase[op] = std::max(opPhase[op], latest);
  }
  // The readers of what moved come no earlier than it.
  for (Operation *op : original) {
    int64_t phase = opPhase[op];
    for (Value operand : op->getOperands())
      if (auto it = phaseOf.find(operand); it != phaseOf.end())
        phase = std::max(phase, it->second + (sumsOverAxis(op) ? 1 : 0));
    opPhase[op] = phase;
    bool norm = chained.count(op);
    for (Value result : op->getResults())
      phaseOf[result] = phase;
    if (norm)
      for (Value stat : {cast<BatchNormOp>(op).getNewRunningMean(),
                         cast<BatchNormOp>(op).getNewRunningVar()})
        phaseOf[stat] = phase + 1;
    numPhases = std::max(numPhases, phase + (norm ? 2 : 1));
  }
}

llvm::DenseSet<Operation *>
Unroller::gathersPerMicroBatch(ArrayRef<Operation *> original) {
  // What depends on the batch, as run() will find (a first estimate: only
  // whether every reader of a gather is in it matters).
  llvm::DenseSet<Value> batch(varies.begin(), varies.end());
  for (Operation *op : original)
    if (!sumsOverAxis(op) &&
        (slicesOverAxis(op) || indexesAxis(op) ||
         llvm::any_of(op->getOperands(),
                      [&](Value v) { return batch.contains(v); })))
      batch.insert(op->result_begin(), op->result_end());
  llvm::DenseSet<Operation *> gathers;
  for (Operation *op : original) {
    auto gather = dyn_cast<AllGatherOp>(op);
    auto param = gather ? dyn_cast<BlockArgument>(gather.getInput())
                        : BlockArgument();
    if (!param || !func.getArgAttr(param.getArgNumber(),
                                   CleaveDialect::kParamAttrName))
      continue;
    if (!gather->use_empty() &&
        llvm::all_of(gather->getUsers(), [&](Operation *user) {
          return !sumsOverAxis(user) &&
                 llvm::any_of(user->getResults(), [&](Value v) {
                   return batch.contains(v);
                 });
        }))
      gathers.insert(op);
  }
  return gathers;
}

LogicalResult Unroller::run() {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (accumulate)
    splitBundledSums();
  SmallVector<Operation *> original;
  for (Operation &op : body.without_terminator())
    original.push_back(&op);

  // Phases: a sum over micro-batches ends one; the ops after it (that read
  // it) belong to the next.
  for (BlockArgument arg : body.getArguments())
    if (auto sharding = func.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), CleaveDialect::kShardingAttrName))
      for (int64_t d = 0; d < static_cast<int64_t>(sharding.getDims().size());
           ++d)
        if (llvm::is_contained(sharding.getDimAxes(d), axis))
          varies.insert(arg);
  llvm::DenseSet<Operation *> perMicroBatch = gathersPerMicroBatch(original);
  llvm::DenseMap<Value, int64_t> phaseOf;
  llvm::DenseMap<Operation *, int64_t> opPhase;
  int64_t numPhases = 1;
  for (Operation *op : original) {
    int64_t phase = 0;
    bool dependsOnBatch = perMicroBatch.contains(op);
    for (Value operand : op->getOperands()) {
      phase = std::max(phase, phaseOf.lookup(operand));
      dependsOnBatch |= varies.contains(operand);
    }
    if (sumsOverAxis(op)) {
      ++phase;
      numPhases = std::max(numPhases, phase + 1);
    } else if (auto norm = dyn_cast<BatchNormOp>(op);
               norm && norm.getTraining() && dependsOnBatch) {
      // One value per channel has no variance to normalize by (PyTorch
      // refuses it in training too).
      auto input = norm.getInput().getType();
      if (input.getNumElements() == input.getDimSize(1) &&
          norm.getBatchStatistics().empty())
        return op->emitOpError("normalizes ")
               << input.getDimSize(0)
               << " row per micro-batch, one value per channel, which has "
                  "no batch statistics to train with; use fewer "
                  "micro-batches (at least 2 rows each)";
      // Only the normalized batch differs; the running statistics are the
      // chain's end, read after every copy ran (in the next phase).
      varies.insert(norm.getY());
      chained[op] = nullptr;
      opPhase[op] = phase;
      phaseOf[norm.getY()] = phase;
      for (Value stat : {norm.getNewRunningMean(), norm.getNewRunningVar()})
        phaseOf[stat] = phase + 1;
      numPhases = std::max(numPhases, phase + 2);
      continue;
    } else if (dependsOnBatch || slicesOverAxis(op) || indexesAxis(op)) {
      for (Value result : op->getResults())
        varies.insert(result);
    }
    if (auto slice = dyn_cast<AllSliceOp>(op);
        slice && slicesOverAxis(slice) &&
        slice.getAxes()[slice.getAxes().size() - 1] != axis)
      return op->emitOpError("slices a value over the axes ")
             << slice.getAxes()
             << " with the micro-batch axis not innermost, which "
                "micro-batches cannot cut; run this step as one batch";
    if (auto index = dyn_cast<AxisIndexOp>(op);
        index && indexesAxis(op) &&
        index.getAxes()[index.getAxes().size() - 1] != axis)
      return op->emitOpError("indexes ranks over the axes ")
             << index.getAxes()
             << " with the micro-batch axis not innermost, which "
                "micro-batches cannot cut; run this step as one batch";
    if (isa<AllGatherOp, ReduceScatterOp, AllToAllOp, BroadcastOp>(op)) {
      auto axes = op->getAttrOfType<ArrayAttr>("axes");
      bool overAxis =
          axes && llvm::is_contained(axes.getAsRange<StringAttr>(), axis);
      // A graph output that depends on the batch is gathered whole for the
      // return; name it.
      for (OpOperand &use : op->getUses())
        if (auto output = overAxis && use.getOwner() == ret
                              ? func.getResultAttrOfType<StringAttr>(
                                    use.getOperandNumber(),
                                    CleaveDialect::kOutputAttrName)
                              : StringAttr())
          return func.emitError("output '")
                 << output.getValue()
                 << "' depends on the batch, which micro-batches would cut "
                    "into pieces; run this step as one batch, or export the "
                    "model with the loss as its only output";
      if (overAxis) {
        // Name the op that mixes the batch's rows (the gather is only how
        // partitioning feeds it).
        Operation *reader =
            op->use_empty() ? op : *op->getUsers().begin();
        return op->emitError("'")
               << reader->getName()
               << "' needs data of every micro-batch at once (the whole "
                  "batch), which micro-batches run one after another cannot "
                  "give it; run this step as one batch";
      }
    }
    opPhase[op] = phase;
    for (Value result : op->getResults())
      phaseOf[result] = phase;
  }
  for (Value result : ret.getOperands())
    if (varies.contains(result))
      return func.emitError("a result of the step depends on the batch, "
                            "which micro-batches would cut into pieces: "
                            "micro-batches apply to training steps whose "
                            "only batch-dependent result is the loss");

  if (accumulate)
    placeLate(original, phaseOf, opPhase, numPhases);
  llvm::DenseSet<Operation *> forward = forwardOps(func);

  OpBuilder b(ret);
  if (failed(splitInputs(b)))
    return failure();
  for (int64_t phase = 0; phase < numPhases; ++phase) {
    // What the micro-batches share, then each micro-batch in turn, then the
    // sums that end the phase.
    for (Operation *op : original)
      if (opPhase[op] == phase && !sumsOverAxis(op) &&
          llvm::none_of(op->getResults(),
                        [&](Value v) { return varies.contains(v); })) {
        Operation *clone = b.clone(*op, perBatch[0]);
        for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
          mapShared(from, to);
      }
    // Accumulating: each micro-batch's forward ops, then its others (its
    // backward pass), micro-batch after micro-batch, so that one
    // micro-batch's activations are alive at a time where its backward
    // pass is in the same phase (placeLate). Otherwise every micro-batch's
    // forward ops, then every micro-batch's others.
    for (int64_t outer = 0; outer < (accumulate ? count : 2); ++outer)
      for (int64_t inner = 0; inner < (accumulate ? 2 : count); ++inner)
        for (auto [number, op] : llvm::enumerate(original)) {
          int64_t m = accumulate ? outer : inner;
          bool forwardOps = (accumulate ? inner : outer) == 0;
          if (opPhase[op] == phase && forward.contains(op) == forwardOps &&
              llvm::any_of(op->getResults(),
                           [&](Value v) { return varies.contains(v); }))
            cloneForMicroBatch(b, op, m)
                ->setAttr(
                    CleaveDialect::kMicroBatchAttrName,
                    b.getDenseI64ArrayAttr({m, static_cast<int64_t>(number)}));
        }
    for (auto [op, last] : chained)
      if (opPhase[op] == phase) {
        auto norm = cast<BatchNormOp>(op);
        auto copy = cast<BatchNormOp>(last);
        mapShared(norm.getNewRunningMean(), copy.getNewRunningMean());
        mapShared(norm.getNewRunningVar(), copy.getNewRunningVar());
      }
    // The sums ending this phase, those of one bundle together.
    SmallVector<AllReduceOp> group;
    for (Operation *op : original) {
      if (opPhase[op] != phase + 1 || !sumsOverAxis(op))
        continue;
      // (Without accumulate no sum was split: each is its own bundle.)
      if (!group.empty() && (!accumulate || bundleOf.lookup(group.back()) !=
                                                bundleOf.lookup(op))) {
        emitSums(b, group);
        group.clear();
      }
      group.push_back(cast<AllReduceOp>(op));
    }
    if (!group.empty())
      emitSums(b, group);
  }
  for (OpOperand &operand : ret->getOpOperands())
    operand.set(perBatch[0].lookupOrDefault(operand.get()));
  for (Operation *op : llvm::reverse(original))
    op->erase();

  // Arguments may have grown (whole batches); results keep their types.
  func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                 func.getResultTypes()));
  FunctionAttributes resultAttrs(func, FunctionAttributes::Results);
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto sharding = dyn_cast_or_null<ShardingAttr>(
            resultAttrs.get(i, CleaveDialect::kShardingAttrName)))
      resultAttrs.set(i, CleaveDialect::kShardingAttrName,
                      withoutAxis(sharding, axis));
  return success();
}

struct UnrollMicroBatchesPass
    : public mlir::cleave::impl::UnrollMicroBatchesPassBase<
          UnrollMicroBatchesPass> {
  using UnrollMicroBatchesPassBase::UnrollMicroBatchesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<int64_t> microbatches =
        getModuleMeshAxisSize(module, axis, "micro-batches");
    if (failed(microbatches))
      return signalPassFailure();
    int64_t count = *microbatches;
    MeshAttr mesh = getModuleMesh(module);
    auto axisAttr = StringAttr::get(module.getContext(), axis);
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(Unroller(func, axisAttr, count, accumulate).run()))
        return signalPassFailure();
    // The micro-batches now run inside each rank: the axis leaves the mesh.
    SmallVector<StringAttr> names;
    SmallVector<int64_t> sizes;
    for (auto [name, size] :
         llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))
      if (name != axisAttr) {
        names.push_back(name);
        sizes.push_back(size);
      }
    if (names.empty())
      module->removeAttr(CleaveDialect::kMeshAttrName);
    else
      module->setAttr(CleaveDialect::kMeshAttrName,
                      MeshAttr::get(module.getContext(), names, sizes));
  }
};

} // namespace
