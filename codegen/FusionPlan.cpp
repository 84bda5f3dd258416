//===- FusionPlan.cpp - ops the emitter runs together ---------------------===//

#include "codegen/FusionPlan.h"
#include "codegen/StepPhases.h"
#include "dialects/cleave/RuntimeShape.h"

namespace mlir::cleave {

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

bool isF32(Value value) { return tensorType(value).getElementType().isF32(); }

/// A one-element float32 tensor: a scale or a fill.
bool isF32Scalar(Value value) {
  return isF32(value) && tensorType(value).getNumElements() == 1;
}

/// The softmax fusions of `block` (SoftmaxFusion), as planFusion's first
/// step. `mayJoin(op, at)` says whether `op` may run at `at` (same stage,
/// no other micro-batch's op between them).
void planSoftmaxFusions(Block &block, FusionPlan &fusion,
                        llvm::function_ref<bool(Operation *, Operation *)>
                            mayJoin) {
  // An op of the pattern: in the block, float32, of the scores' shape.
  auto fits = [&](Operation *op, ArrayRef<int64_t> shape, Operation *at) {
    return op && op->getBlock() == &block && op->getNumResults() == 1 &&
           isF32(op->getResult(0)) &&
           tensorType(op->getResult(0)).getShape() == shape &&
           !fusion.softmaxAt.count(op) && !fusion.fusedAway.contains(op) &&
           mayJoin(op, at);
  };
  // x * s, s * x or x / s with s a scalar: the scaled value, or null.
  auto scaled = [&](Operation *op, SoftmaxFusion &f) -> Value {
    ArrayRef<int64_t> shape = tensorType(op->getResult(0)).getShape();
    auto isScores = [&](Value v) { return tensorType(v).getShape() == shape; };
    if (auto mul = dyn_cast<MulOp>(op)) {
      for (auto [x, s] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())})
        if (isScores(x) && isF32Scalar(s)) {
          f.scale = s;
          return x;
        }
    } else if (auto div = dyn_cast<DivOp>(op)) {
      if (isScores(div.getLhs()) && isF32Scalar(div.getRhs())) {
        f.scale = div.getRhs();
        f.divide = true;
        return div.getLhs();
      }
    }
    return {};
  };
  // where(c, x, fill) or where(c, fill, x): x, or null.
  auto masked = [&](Operation *op, SoftmaxFusion &f) -> Value {
    auto where = dyn_cast<WhereOp>(op);
    if (!where)
      return {};
    ArrayRef<int64_t> shape = tensorType(where.getResult()).getShape();
    for (auto [x, fill, keep] :
         {std::tuple(where.getOnTrue(), where.getOnFalse(), true),
          std::tuple(where.getOnFalse(), where.getOnTrue(), false)})
      if (tensorType(x).getShape() == shape && isF32Scalar(fill)) {
        f.condition = where.getCondition();
        f.fill = fill;
        f.keepWhen = keep;
        return x;
      }
    return {};
  };
  for (Operation &op : block.without_terminator()) {
    if (!isa<SoftmaxOp, LogSoftmaxOp, SoftmaxGradOp>(op) ||
        !isF32(op.getResult(0)))
      continue;
    ArrayRef<int64_t> shape = tensorType(op.getResult(0)).getShape();
    SoftmaxFusion f;
    f.softmax = &op;
    SmallVector<Operation *> group;
    Operation *at = &op;
    if (isa<SoftmaxGradOp>(op)) {
      // Backward: the where, then the scale, each the one reader of the
      // value before; the kernel runs at the last.
      group.push_back(&op);
      auto next = [&](Value v) -> Operation * {
        if (!v.hasOneUse())
          return nullptr;
        Operation *user = *v.user_begin();
        return fits(user, shape, &op) ? user : nullptr;
      };
      Value v = op.getResult(0);
      if (Operation *user = next(v); user && masked(user, f) == v) {
        group.push_back(user);
        v = user->getResult(0);
      } else {
        f.condition = f.fill = {};
      }
      if (Operation *user = next(v); user && scaled(user, f) == v)
        group.push_back(user);
      else
        f.scale = {}, f.divide = false;
      if (group.size() < 2)
        continue;
      at = group.back();
    } else {
      // Forward: the softmax's input through a mask (a where or an added
      // mask), then through a scale, each with the one use.
      Value v = op.getOperand(0);
      auto producer = [&](Value v) -> Operation * {
        Operation *def = v.getDefiningOp();
        return v.hasOneUse() && fits(def, shape, &op) ? def : nullptr;
      };
      if (Operation *def = producer(v)) {
        if (Value x = masked(def, f)) {
          group.push_back(def);
          v = x;
        } else if (auto add = dyn_cast<AddOp>(def)) {
          // The scores are the operand of the full shape that a scale
          // computes, else the first of the full shape; the other is the
          // mask.
          Value lhs = add.getLhs(), rhs = add.getRhs();
          auto isScaled = [&](Value x) {
            SoftmaxFusion probe;
            Operation *d = producer(x);
            return d && scaled(d, probe);
          };
          bool lhsFull = tensorType(lhs).getShape() == shape,
               rhsFull = tensorType(rhs).getShape() == shape;
          if (rhsFull && (!lhsFull || (isScaled(rhs) && !isScaled(lhs))))
            std::swap(lhs, rhs);
          if (tensorType(lhs).getShape() == shape && isF32(rhs)) {
            f.mask = rhs;
            group.push_back(def);
            v = lhs;
          }
        }
      }
      if (Operation *def = producer(v)) {
        SoftmaxFusion probe = f;
        if (Value x = scaled(def, probe)) {
          f = probe;
          group.push_back(def);
          v = x;
        }
      }
      if (group.empty())
        continue;
      f.input = v;
      group.push_back(&op);
    }
    llvm::sort(group, [](Operation *x, Operation *y) {
      return x->isBeforeInBlock(y);
    });
    f.ops = group;
    for (Operation *member : group) {
      fusion.executedAt[member] = at;
      if (member != at)
        fusion.fusedAway.insert(member);
    }
    fusion.softmaxAt[at] = f;
  }
}

} // namespace

Operation *firstUser(Operation *op) {
  Operation *first = nullptr;
  for (Operation *user : op->getUsers())
    if (!first || user->isBeforeInBlock(first))
      first = user;
  return first;
}

FusionPlan planFusion(func::FuncOp func,
                      llvm::function_ref<bool(Operation *)> isElementwise) {
  // No other broadcasting than of single elements: the loop indexes every
  // operand by the result's index.
  auto isFusible = [&](Operation *op) {
    if (op->getNumResults() != 1 || !isElementwise(op))
      return false;
    ArrayRef<int64_t> shape = tensorType(op->getResult(0)).getShape();
    return llvm::all_of(op->getOperands(), [&](Value v) {
      return tensorType(v).getShape() == shape ||
             tensorType(v).getNumElements() == 1;
    });
  };
  FusionPlan fusion;
  Block &block = func.getBody().front();
  // A loop runs where its last op (the group's tail) stands. With
  // micro-batches, ops with another micro-batch's ops between them stay
  // apart: a sum of gradients is added as each micro-batch's part arrives
  // (its operands are not kept alive to the last micro-batch), and each
  // micro-batch's part of the step is its own code (EmitParts.cpp).
  bool microbatched = false;
  for (Operation &op : block)
    microbatched |= StepPhases::microbatchOf(&op) >= 0;
  auto otherMicrobatchBetween = [&](Operation *producer, Operation *tail,
                                    int64_t microbatch) {
    for (Operation *op = producer->getNextNode(); op && op != tail;
         op = op->getNextNode())
      if (int64_t m = StepPhases::microbatchOf(op); m >= 0 && m != microbatch)
        return true;
    return false;
  };
  // Attention's softmaxes first: their scale and mask ops join no loop.
  planSoftmaxFusions(block, fusion, [&](Operation *op, Operation *at) {
    if (op->getAttr(CleaveDialect::kStageAttrName) !=
        at->getAttr(CleaveDialect::kStageAttrName))
      return false;
    if (!microbatched)
      return true;
    int64_t m = std::max(StepPhases::microbatchOf(op),
                         StepPhases::microbatchOf(at));
    Operation *first = op->isBeforeInBlock(at) ? op : at;
    Operation *last = first == op ? at : op;
    return !otherMicrobatchBetween(first, last, m);
  });
  // Tails from the last op up, each taking in the fusible producers of its
  // operands whose one use is in the group, and theirs in turn: a tree of
  // ops (a chain is one) of the tail's shape. An op read twice (GELU's
  // input, say) stays a buffer the loop reads.
  llvm::DenseSet<Operation *> grouped;
  for (auto &[at, softmax] : fusion.softmaxAt) {
    grouped.insert(at);
    grouped.insert(softmax.softmax);
  }
  for (Operation *op : fusion.fusedAway)
    grouped.insert(op);
  for (Operation &tail : llvm::reverse(block.without_terminator())) {
    if (grouped.contains(&tail) || !isFusible(&tail))
      continue;
    ArrayRef<int64_t> shape = tensorType(tail.getResult(0)).getShape();
    int64_t microbatch = StepPhases::microbatchOf(&tail);
    SmallVector<Operation *> group{&tail};
    SmallVector<Operation *> worklist{&tail};
    while (!worklist.empty()) {
      Operation *member = worklist.pop_back_val();
      for (Value operand : member->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (!producer || producer->getBlock() != &block ||
            !operand.hasOneUse() || grouped.contains(producer) ||
            !isFusible(producer) ||
            tensorType(operand).getShape() != shape ||
            tensorType(operand).getNumElements() == 1)
          continue;
        if (microbatched) {
          int64_t m =
              std::max(microbatch, StepPhases::microbatchOf(producer));
          if (otherMicrobatchBetween(producer, &tail, m))
            continue;
          microbatch = m;
        }
        group.push_back(producer);
        worklist.push_back(producer);
      }
    }
    if (group.size() < 2)
      continue;
    // In block order, so that each op's fused operands come before it.
    llvm::sort(group, [](Operation *x, Operation *y) {
      return x->isBeforeInBlock(y);
    });
    for (Operation *op : group) {
      grouped.insert(op);
      if (op != &tail)
        fusion.fusedAway.insert(op);
    }
    fusion.groups[&tail] = std::move(group);
  }
  for (auto &[tail, chain] : fusion.groups)
    for (Operation *op : chain)
      fusion.executedAt[op] = tail;
  // All-reduces run asynchronously up to the first use of a result.
  func.walk([&](AllReduceOp op) {
    if (Operation *finish = firstUser(op))
      fusion.executedAt[op] = finish;
  });
  return fusion;
}

namespace {

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Strides of transpose(x, perm) read from x's buffer.
SmallVector<int64_t> transposedReadStrides(TransposeOp transpose) {
  SmallVector<int64_t> in =
      rowMajorStrides(transpose.getInput().getType().getShape());
  SmallVector<int64_t> view;
  for (int64_t from : transpose.getPermutation())
    view.push_back(in[from]);
  return view;
}

/// Strides at which transpose(y, perm)'s buffer holds y's elements.
SmallVector<int64_t> transposedWriteStrides(TransposeOp transpose) {
  SmallVector<int64_t> out =
      rowMajorStrides(transpose.getResult().getType().getShape());
  SmallVector<int64_t> view(out.size());
  for (auto [i, from] : llvm::enumerate(transpose.getPermutation()))
    view[from] = out[i];
  return view;
}

/// BLAS reads and writes a matrix one of whose dims is contiguous.
bool hasUnitMatrixStride(ArrayRef<int64_t> strides) {
  return strides.back() == 1 || strides[strides.size() - 2] == 1;
}

/// A matmul of equal batch dims on both operands and the result, float32.
bool isPlainBatchedMatmul(MatmulOp matmul) {
  ArrayRef<int64_t> a = matmul.getLhs().getType().getShape(),
                    b = matmul.getRhs().getType().getShape(),
                    c = matmul.getType().getShape();
  return a.size() >= 3 && a.size() == b.size() && a.size() == c.size() &&
         a.drop_back(2) == c.drop_back(2) && b.drop_back(2) == c.drop_back(2) &&
         matmul.getType().getElementType().isF32();
}

Attribute stageOf(Operation *op) {
  return op->getAttr(CleaveDialect::kStageAttrName);
}

} // namespace

bool runsStrided(MatmulOp matmul, const FusionPlan &fusion) {
  Operation *at = fusion.executedAt.lookup(matmul);
  if (at && isa<TransposeOp>(at) && fusion.matmulAt.lookup(at) == matmul)
    return true;
  return llvm::any_of(matmul->getOperands(), [&](Value operand) {
    Operation *def = operand.getDefiningOp();
    return def && isa<TransposeOp>(def) && fusion.fusedAway.contains(def);
  });
}

void planStridedMatmuls(func::FuncOp func, FusionPlan &fusion) {
  Block &block = func.getBody().front();
  // Operand transposes each matmul could read through strides.
  auto readable = [&](MatmulOp matmul, Value operand) -> TransposeOp {
    auto transpose = operand.getDefiningOp<TransposeOp>();
    if (!transpose || transpose->getBlock() != &block ||
        stageOf(transpose) != stageOf(matmul) ||
        fusion.fusedAway.contains(transpose) ||
        fusion.groups.count(transpose))
      return {};
    // An activation another op computes (not a parameter an update writes
    // in place, or a view of one, nor a collective's result that is
    // awaited at its reader).
    Value storage = transpose.getInput();
    while (auto view = storage.getDefiningOp<ReshapeOp>())
      storage = view.getInput();
    Operation *def = storage.getDefiningOp();
    if (!def || def->getNumRegions() ||
        isa<ConstantOp, AllReduceOp, AllGatherOp, ReduceScatterOp, AllSliceOp,
            SendRecvOp>(def))
      return {};
    return hasUnitMatrixStride(transposedReadStrides(transpose))
               ? transpose
               : TransposeOp();
  };
  llvm::DenseMap<Operation *, unsigned> readers;
  llvm::DenseSet<Operation *> matmuls;
  for (auto matmul : block.getOps<MatmulOp>()) {
    if (!isPlainBatchedMatmul(matmul) || fusion.fusedAway.contains(matmul))
      continue;
    matmuls.insert(matmul);
    for (Value operand : matmul->getOperands())
      if (TransposeOp transpose = readable(matmul, operand))
        ++readers[transpose];
  }
  // A transpose goes when every use is such a matmul operand.
  for (auto [transpose, count] : readers) {
    auto uses = transpose->getResult(0).getUses();
    if (static_cast<unsigned>(std::distance(uses.begin(), uses.end())) ==
        count)
      fusion.fusedAway.insert(transpose);
  }
  for (Operation *op : matmuls) {
    auto matmul = cast<MatmulOp>(op);
    Operation *at = matmul;
    Value result = matmul.getResult();
    if (result.hasOneUse())
      if (auto transpose = dyn_cast<TransposeOp>(*result.user_begin());
          transpose && transpose->getBlock() == &block &&
          stageOf(transpose) == stageOf(matmul) &&
          !fusion.fusedAway.contains(transpose) &&
          !fusion.groups.count(transpose) &&
          hasUnitMatrixStride(transposedWriteStrides(transpose))) {
        fusion.fusedAway.insert(matmul);
        fusion.executedAt[matmul] = transpose;
        fusion.matmulAt[transpose] = matmul;
        at = transpose;
      }
    for (Value operand : matmul->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && isa<TransposeOp>(def) && fusion.fusedAway.contains(def)) {
        // Read where the last of its matmuls runs.
        Operation *&last = fusion.executedAt[def];
        if (!last || last->isBeforeInBlock(at))
          last = at;
      }
  }
}

std::pair<Value, SmallVector<int64_t>>
stridedMatmulView(Operation *op, int index, const FusionPlan &fusion) {
  auto matmul = cast<MatmulOp>(op);
  if (index < 0) {
    for (auto [transpose, product] : fusion.matmulAt)
      if (product == op) {
        auto t = cast<TransposeOp>(transpose);
        return {t.getResult(), transposedWriteStrides(t)};
      }
    Value result = matmul.getResult();
    return {result, rowMajorStrides(matmul.getType().getShape())};
  }
  Value operand = matmul->getOperand(index);
  if (auto transpose = operand.getDefiningOp<TransposeOp>();
      transpose && fusion.fusedAway.contains(transpose))
    return {transpose.getInput(), transposedReadStrides(transpose)};
  return {operand, rowMajorStrides(
                       cast<RankedTensorType>(operand.getType()).getShape())};
}

namespace {

/// Whether the runtime crops kernel taps of convolution pass `pass` (a
/// ConvOp or ConvGradInputOp) that read only padding (rt::cropDeadTaps).
bool cropsDeadTaps(Operation *pass) {
  if (auto forward = dyn_cast<ConvOp>(pass))
    return deadTapCrop(forward, forward.getInput(), forward.getWeight(),
                       forward.getResult())
        .has_value();
  auto grad = cast<ConvGradInputOp>(pass);
  return deadTapCrop(grad, grad.getInputGrad(), grad.getWeight(),
                     grad.getOutputGrad())
      .has_value();
}

/// Whether `user` reads `w` as the weight of a convolution or of its input
/// gradient, and as nothing else.
bool readsAsConvolutionWeight(Operation *user, Value w) {
  if (auto forward = dyn_cast<ConvOp>(user))
    return forward.getWeight() == w && forward.getInput() != w &&
           forward.getBias() != w;
  if (auto grad = dyn_cast<ConvGradInputOp>(user))
    return grad.getWeight() == w && grad.getOutputGrad() != w;
  return false;
}

/// Whether `slice` puts a float32 gradient of a 2-d convolution kernel's
/// run of taps into the whole kernel (the rows and columns of taps cut
/// alone, every output and input channel kept): what sgdLiveTaps adds.
bool slicesKernelTaps(SliceGradOp slice) {
  auto whole = cast<RankedTensorType>(slice.getType());
  auto taps = cast<RankedTensorType>(slice.getOutputGrad().getType());
  ArrayRef<int64_t> offsets = slice.getOffsets();
  return whole.getRank() == 4 && whole.getElementType().isF32() &&
         whole.hasStaticShape() && taps.hasStaticShape() &&
         llvm::all_of(slice.getStrides(), [](int64_t s) { return s == 1; }) &&
         offsets[0] == 0 && offsets[1] == 0 &&
         taps.getDimSize(0) == whole.getDimSize(0) &&
         taps.getDimSize(1) == whole.getDimSize(1);
}

/// BackwardFusion::refreshedWeights: step arguments that two or more
/// convolution passes on `stage`, some of which crop dead taps, read as
/// their weight before any other op of the stage reads them (an optimizer
/// update, which may write them in place, comes last), and that no
/// convolution reads through another value of their buffer (an updated
/// weight).
template <typename RunsAt>
void planRefreshedWeights(Block &block, const MemoryPlan &plan, int64_t stage,
                          RunsAt runsAt, BackwardFusion &backward) {
  // Buffers some convolution reads through a value other than their own.
  llvm::DenseSet<Value> readThroughOther;
  for (Operation &op : block.without_terminator()) {
    Value weight;
    if (auto forward = dyn_cast<ConvOp>(op))
      weight = forward.getWeight();
    else if (auto grad = dyn_cast<ConvGradInputOp>(op))
      weight = grad.getWeight();
    if (weight && plan.root(weight) != weight)
      readThroughOther.insert(plan.root(weight));
  }
  for (BlockArgument w : block.getArguments()) {
    if (backward.croppedWeights.contains(w) || readThroughOther.contains(w))
      continue;
    SmallVector<Operation *> passes, others;
    for (Operation *user : w.getUsers()) {
      if (!runsOnStage(user, stage))
        continue;
      (readsAsConvolutionWeight(user, w) ? passes : others).push_back(user);
    }
    if (passes.size() < 2 || !llvm::any_of(passes, cropsDeadTaps))
      continue;
    bool othersLast = llvm::all_of(others, [&](Operation *other) {
      return llvm::all_of(passes, [&](Operation *pass) {
        return runsAt(pass)->isBeforeInBlock(runsAt(other));
      });
    });
    if (othersLast)
      backward.refreshedWeights.insert(w);
  }
}

} // namespace

BackwardFusion planBackwardFusion(Block &block, const MemoryPlan &plan,
                                  const FusionPlan &fusion, int64_t stage) {
  BackwardFusion backward;
  // Where each op runs: a fused op in its group's loop, an all-reduce up to
  // its first reader, a gradient GEMM at its update.
  auto runsAt = [&](Operation *op) {
    if (Operation *at = fusion.executedAt.lookup(op))
      return at;
    if (Operation *at = plan.gemmInUpdate.lookup(op))
      return at;
    return op;
  };
  for (auto [updateGemmOp, sgdOp] : plan.gemmInUpdate) {
    auto update = cast<GemmOp>(updateGemmOp);
    auto sgd = cast<SgdOp>(sgdOp);
    Value w = sgd.getParam();
    // The update's gradient dw = dy^T x, unscaled.
    if (!update.getTransA() || update.getTransB() ||
        !update.getAlpha().isExactlyValue(1.0))
      continue;
    Value dy = update.getA();
    for (Operation *user : dy.getUsers()) {
      auto dx = dyn_cast<GemmOp>(user);
      // dx in a buffer of its own (not itself a parameter's update).
      if (!dx || dx == update || dx.getB() != w || dx.getTransA() ||
          dx.getTransB() || dx.getC() || !dx.getAlpha().isExactlyValue(1.0) ||
          !runsOnStage(dx, stage) || dx->getBlock() != sgd->getBlock() ||
          !dx->isBeforeInBlock(sgd) ||
          backward.updateWithInputGradient.count(dx) ||
          backward.fusedUpdates.contains(sgd) ||
          plan.root(dx.getResult()) != dx.getResult())
        continue;
      // The update's x must be complete by then (it runs early), in a
      // buffer.
      Operation *xDef = update.getB().getDefiningOp();
      if (xDef && (xDef->getBlock() != dx->getBlock() ||
                   !runsAt(xDef)->isBeforeInBlock(dx) ||
                   fusion.fusedAway.contains(xDef)))
        continue;
      // Nothing that runs from the input gradient to the update may read w
      // (or a view of it), which is updated early.
      bool readsW = false;
      for (Operation &op : block.without_terminator()) {
        Operation *at = runsAt(&op);
        if (&op == dx.getOperation() || &op == sgd.getOperation() ||
            !runsOnStage(&op, stage) || !dx->isBeforeInBlock(at) ||
            !at->isBeforeInBlock(sgd))
          continue;
        for (Value operand : op.getOperands())
          readsW |= plan.root(operand) == plan.root(w);
      }
      if (!readsW) {
        backward.updateWithInputGradient[dx] = sgd;
        backward.fusedUpdates.insert(sgd);
      }
    }
  }
  // A plain SGD step (no momentum, no weight decay) on a gradient that one
  // convolution weight gradient computes for it alone: the update runs in
  // that op, early, so nothing run between the two may read the weight
  // (the conv's input gradient reads it), and the weight it updates (a
  // step argument, or a slice of one that a partitioned program takes
  // for the update alone) and a scheduled learning rate must be known by
  // then.
  for (Operation &op : block.without_terminator()) {
    auto sgd = dyn_cast<SgdOp>(op);
    if (!sgd || sgd.getMomentumBuffer() || !sgd.getWeightDecay().isZero() ||
        !runsOnStage(sgd, stage) || backward.fusedUpdates.contains(sgd))
      continue;
    auto conv = sgd.getGrad().getDefiningOp<ConvGradWeightOp>();
    if (!conv || !sgd.getGrad().hasOneUse() || conv->getBlock() != &block ||
        !runsOnStage(conv, stage) || !conv->isBeforeInBlock(sgd) ||
        conv.getType() != sgd.getParam().getType() ||
        !conv.getType().getElementType().isF32())
      continue;
    auto knownBefore = [&](Value value) {
      Operation *def = value.getDefiningOp();
      return !def ||
             (def->getBlock() == &block && runsAt(def)->isBeforeInBlock(conv));
    };
    if (!knownBefore(sgd.getParam()) ||
        (sgd.getLrFactor() && !knownBefore(sgd.getLrFactor())))
      continue;
    Value w = plan.root(sgd.getParam());
    bool readsW = false;
    for (Operation &other : block.without_terminator()) {
      Operation *at = runsAt(&other);
      if (&other == sgd.getOperation() || !runsOnStage(&other, stage) ||
          !conv->isBeforeInBlock(at) || !at->isBeforeInBlock(sgd))
        continue;
      for (Value operand : other.getOperands())
        readsW |= plan.root(operand) == w;
    }
    if (!readsW)
      backward.convWithUpdate[conv] = sgd;
  }
  SmallVector<SgdOp> convolutionUpdates;
  for (auto &entry : backward.convWithUpdate)
    convolutionUpdates.push_back(entry.second);
  // (A live-tap update with momentum or decay writes every tap: the weight
  // may still get a copy for the step, planRefreshedWeights.)
  for (auto &entry : fusion.liveTapUpdates)
    if (runsOnStage(entry.second, stage) &&
        changesLiveTapsAlone(cast<SgdOp>(entry.second)))
      convolutionUpdates.push_back(cast<SgdOp>(entry.second));
  for (SgdOp sgd : convolutionUpdates) {
    auto w = dyn_cast<BlockArgument>(sgd.getParam());
    if (!w)
      continue;
    bool onlyConvolutions = llvm::all_of(w.getUsers(), [&](Operation *user) {
      return readsAsConvolutionWeight(user, w) || user == sgd.getOperation();
    });
    // Without a pass reading it, a copy would only be written.
    if (onlyConvolutions && !w.hasOneUse())
      backward.croppedWeights.insert(w);
  }
  planRefreshedWeights(block, plan, stage, runsAt, backward);
  return backward;
}

bool changesLiveTapsAlone(SgdOp sgd) {
  return !sgd.getMomentumBuffer() && sgd.getWeightDecay().isZero();
}

void planLiveTapUpdates(func::FuncOp func, FusionPlan &fusion) {
  // An SGD step on a slice_grad that puts the live taps' gradient back
  // into the whole kernel (zero at the dead taps) reads that gradient
  // where it stands: a plain step changes the live taps alone, one with
  // momentum or weight decay steps the dead taps with a zero gradient.
  Block &block = func.getBody().front();
  for (Operation &op : block.without_terminator()) {
    auto sgd = dyn_cast<SgdOp>(op);
    if (!sgd)
      continue;
    auto slice = sgd.getGrad().getDefiningOp<SliceGradOp>();
    if (!slice || !sgd.getGrad().hasOneUse() || slice->getBlock() != &block ||
        !slicesKernelTaps(slice) ||
        slice.getType() != sgd.getParam().getType() ||
        fusion.fusedAway.contains(slice) || fusion.executedAt.count(slice))
      continue;
    fusion.liveTapUpdates[slice] = sgd;
    fusion.fusedAway.insert(slice);
    fusion.executedAt[slice] = sgd;
  }
}

void planUncopiedSends(func::FuncOp func, FusionPlan &fusion) {
  Block &block = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(ops))
    position[op] = i;
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto send = dyn_cast<SendRecvOp>(op);
    if (!send)
      continue;
    int64_t stage = send.getSourceAttr().getInt();
    // The earliest op of the sending stage before which a collective
    // started after the send is waited for.
    Operation *done = block.getTerminator();
    auto consider = [&](Operation *wait) {
      if (wait && runsOnStage(wait, stage) &&
          position.lookup(wait) < position.lookup(done))
        done = wait;
    };
    for (Operation *later : ArrayRef(ops).drop_front(i + 1)) {
      if (position.lookup(later) >= position.lookup(done))
        break;
      if (auto receive = dyn_cast<SendRecvOp>(later)) {
        if (receive.getDestAttr().getInt() == stage)
          consider(firstUser(receive));
      } else if (isa<AllReduceOp>(later) && runsOnStage(later, stage)) {
        consider(firstUser(later));
      } else if (isa<AllGatherOp, ReduceScatterOp>(later) &&
                 runsOnStage(later, stage)) {
        consider(later);
      }
    }
    fusion.executedAt[send] = done;
  }
}

} // namespace mlir::cleave
