//===- MemoryPlan.cpp - static scratch memory for a training step ---------===//

#include "codegen/MemoryPlan.h"
#include "codegen/FusionPlan.h"

#include "dialects/cleave/CleaveOps.h"
#include "runtime/cuda/KernelScratch.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <optional>
#include <queue>
#include <tuple>

namespace mlir::cleave {

int64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  Type element = tensor.getElementType();
  int64_t width = element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8;
  return tensor.getNumElements() * width;
}

/// Whether `op` slices whole leading rows out of a step input (read only:
/// no parameter or state), contiguous in it: the input and the offset.
static std::optional<std::pair<Value, int64_t>> inputRows(func::FuncOp func,
                                                           Operation &op) {
  auto slice = dyn_cast<SliceOp>(op);
  auto input = slice ? dyn_cast<BlockArgument>(slice.getInput()) : nullptr;
  if (!input ||
      func.getArgAttr(input.getArgNumber(), CleaveDialect::kParamAttrName) ||
      func.getArgAttr(input.getArgNumber(), CleaveDialect::kStateAttrName))
    return std::nullopt;
  ArrayRef<int64_t> in = cast<RankedTensorType>(input.getType()).getShape();
  ArrayRef<int64_t> out =
      cast<RankedTensorType>(slice.getResult().getType()).getShape();
  ArrayRef<int64_t> offsets = slice.getOffsets();
  if (in.empty() || in.size() != out.size() || offsets.size() != in.size() ||
      llvm::any_of(slice.getStrides(), [](int64_t s) { return s != 1; }) ||
      in.drop_front() != out.drop_front() ||
      llvm::any_of(offsets.drop_front(), [](int64_t o) { return o != 0; }))
    return std::nullopt;
  int64_t rowElements = 1;
  for (int64_t d : in.drop_front())
    rowElements *= d;
  return std::make_pair(Value(input), offsets[0] * rowElements);
}

namespace {

/// planMemory's work: what does not depend on the stage (op positions,
/// the storage every stage's plan shares, the ops each stage runs) is
/// found once, so that planning every stage of a pipelined step walks each
/// stage's ops rather than the whole step per stage.
class MemoryPlanner {
public:
  MemoryPlanner(func::FuncOp func, const FusionPlan &fusion,
                int64_t numStages);
  /// The plan of `stage`'s ops (-1: all). With `stageOnly`, its storage
  /// entries are those of the stage's own values (the arena is the same):
  /// planning every stage of a deep pipeline then costs each stage's ops,
  /// not the whole step per stage.
  MemoryPlan plan(int64_t stage, bool stageOnly = false) const;

private:
  func::FuncOp func;
  const llvm::DenseMap<Operation *, Operation *> &executedAt;
  /// Ops whose results are never stored (FusionPlan::fusedAway).
  const llvm::DenseSet<Operation *> &fusedAway;
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t end = 0;
  /// Reshapes, optimizer updates and rows of inputs (planMemory's first
  /// sharing rules, which hold on every stage) and the buffers the
  /// updates write in place.
  MemoryPlan shared;
  llvm::DenseSet<Value> updatedInPlace;
  /// The ops the later rules look at, in block order.
  SmallVector<Operation *> sgds, gemms, allReduces, relus, updates;
  /// Per stage (index 0 holding every op when `numStages` is 0: no
  /// stages), the ops that run on it, in block order.
  std::vector<SmallVector<Operation *>> stageOps;
};

MemoryPlanner::MemoryPlanner(func::FuncOp func, const FusionPlan &fusion,
                             int64_t numStages)
    : func(func), executedAt(fusion.executedAt), fusedAway(fusion.fusedAway) {
  Block &body = func.getBody().front();
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;
  end = index;

  // Storage sharing: reshapes view their input, slices of an input's
  // leading rows view those rows; optimizer updates write into the
  // parameter and state buffers they read.
  for (Operation &op : body) {
    if (auto rows = inputRows(func, op))
      shared.rowsOfInput[op.getResult(0)] = *rows;
    else if (auto reshape = dyn_cast<ReshapeOp>(op))
      shared.storageOf[reshape.getResult()] = reshape.getInput();
    else if (auto sgd = dyn_cast<SgdOp>(op)) {
      shared.storageOf[sgd.getUpdated()[0]] = sgd.getParam();
      if (sgd.getMomentumBuffer())
        shared.storageOf[sgd.getUpdated()[1]] = sgd.getMomentumBuffer();
    } else if (auto adamw = dyn_cast<AdamwOp>(op)) {
      shared.storageOf[adamw.getNewParam()] = adamw.getParam();
      shared.storageOf[adamw.getNewExpAvg()] = adamw.getExpAvg();
      shared.storageOf[adamw.getNewExpAvgSq()] = adamw.getExpAvgSq();
    }
  }
  // Buffers the optimizer updates write in place.
  for (Operation &op : body)
    if (isa<SgdOp, AdamwOp>(op))
      for (Value result : op.getResults())
        updatedInPlace.insert(shared.root(result));

  for (Operation &op : body) {
    if (isa<SgdOp>(op))
      sgds.push_back(&op);
    else if (isa<GemmOp>(op))
      gemms.push_back(&op);
    else if (isa<AllReduceOp>(op))
      allReduces.push_back(&op);
    else if (isa<ReluOp>(op))
      relus.push_back(&op);
    if (isa<SgdOp, AdamwOp, MomentumOp, AdamOp, AdagradOp>(op))
      updates.push_back(&op);
  }
  // The ops of each stage: runsOnStage's answer, found once per op (with
  // no stages, index 0 holds every op).
  stageOps.resize(std::max<int64_t>(numStages, 1));
  for (Operation &op : body) {
    if (numStages <= 0) {
      stageOps[0].push_back(&op);
      continue;
    }
    if (auto transfer = dyn_cast<SendRecvOp>(op)) {
      int64_t from = transfer.getSourceAttr().getInt(),
              to = transfer.getDestAttr().getInt();
      for (int64_t s = 0; s < numStages; ++s)
        if (s == from || s == to)
          stageOps[s].push_back(&op);
      continue;
    }
    auto attr = op.getAttrOfType<IntegerAttr>(CleaveDialect::kStageAttrName);
    if (attr && attr.getInt() >= 0 && attr.getInt() < numStages) {
      stageOps[attr.getInt()].push_back(&op);
      continue;
    }
    if (attr)
      continue;
    for (SmallVector<Operation *> &onStage : stageOps)
      onStage.push_back(&op);
  }
}

MemoryPlan MemoryPlanner::plan(int64_t stage, bool stageOnly) const {
  ArrayRef<Operation *> ops = stageOps[stage < 0 ? 0 : stage];
  MemoryPlan plan;
  if (!stageOnly) {
    plan = shared;
  } else {
    for (Operation *op : ops)
      for (Value result : op->getResults()) {
        if (Value storage = shared.storageOf.lookup(result))
          plan.storageOf[result] = storage;
        if (auto rows = shared.rowsOfInput.find(result);
            rows != shared.rowsOfInput.end())
          plan.rowsOfInput.insert(*rows);
      }
  }
  // The ops of a kind the rules below look at: the step's, or the stage's.
  auto ofKind = [&](ArrayRef<Operation *> all, auto isKind) {
    if (!stageOnly)
      return SmallVector<Operation *>(all);
    SmallVector<Operation *> kind;
    for (Operation *op : ops)
      if (isKind(op))
        kind.push_back(op);
    return kind;
  };
  // A send_recv reads its input on the sending stage and defines its result
  // on the receiving one.
  auto reads = [&](Operation &op) {
    auto transfer = dyn_cast<SendRecvOp>(op);
    return transfer ? stage < 0 || transfer.getSourceAttr().getInt() == stage
                    : runsOnStage(&op, stage);
  };

  // A plain SGD step (no momentum, no weight decay, a constant learning
  // rate) on a gradient that one GEMM computes for it alone: the GEMM adds
  // its scaled product to the parameter itself, where the update is. Not
  // when the GEMM reads a buffer that an update writes (a parameter fed
  // straight into a layer): run at the update, it could read the new value.
  for (Operation *op :
       ofKind(sgds, [](Operation *op) { return isa<SgdOp>(op); })) {
    auto sgd = cast<SgdOp>(op);
    if (sgd.getMomentumBuffer() || sgd.getLrFactor() ||
        !sgd.getWeightDecay().isZero() || !runsOnStage(sgd, stage))
      continue;
    auto gemm = sgd.getGrad().getDefiningOp<GemmOp>();
    if (gemm && !gemm.getC() && sgd.getGrad().hasOneUse() &&
        gemm.getType() == sgd.getParam().getType() &&
        !updatedInPlace.contains(plan.root(gemm.getA())) &&
        !updatedInPlace.contains(plan.root(gemm.getB()))) {
      plan.gemmInUpdate[gemm] = sgd;
      plan.storageOf[gemm.getResult()] = sgd.getParam();
    }
  }
  // A GEMM that adds a whole matrix read by nothing else (a gradient
  // accumulated over micro-batches) adds into that matrix's buffer, also
  // when that is a GEMM's of the same kind (every micro-batch's GEMM adds
  // to the one buffer).
  auto readOnceInScratch = [&](Value value) {
    for (; value; value = plan.storageOf.lookup(value))
      if (!value.hasOneUse() || !value.getDefiningOp() ||
          isa<ConstantOp>(value.getDefiningOp()))
        return false;
    return true;
  };
  for (Operation *op :
       ofKind(gemms, [](Operation *op) { return isa<GemmOp>(op); })) {
    auto gemm = cast<GemmOp>(op);
    if (Value c = gemm.getC();
        c && c.getType() == gemm.getType() && readOnceInScratch(c))
      plan.storageOf[gemm.getResult()] = c;
  }
  // A sum over ranks of a value nothing else reads (a gradient, typically)
  // is taken in that value's buffer: no copy, no second buffer. Also when
  // that buffer is a chain's whose every value only the next reads (a
  // gradient accumulated over micro-batches by GEMMs).
  for (Operation *op : ofKind(
           allReduces, [](Operation *op) { return isa<AllReduceOp>(op); })) {
    auto allReduce = cast<AllReduceOp>(op);
    for (auto [in, out] :
         llvm::zip(allReduce.getInputs(), allReduce.getResults()))
      if (readOnceInScratch(in))
        plan.storageOf[out] = in;
  }
  // A ReLU of a value nothing else reads (a layer's pre-activation, as the
  // ReLU's gradient reads the output) runs in place, which also lets the
  // cuda target fold it into the GEMM that computes that value. Not when
  // that value is computed inside a later op's fused loop: it has no buffer.
  auto executesLater = [&](Operation *op) {
    Operation *at = executedAt.lookup(op);
    return at && at != op;
  };
  for (Operation *op :
       ofKind(relus, [](Operation *op) { return isa<ReluOp>(op); })) {
    auto relu = cast<ReluOp>(op);
    if (Value in = relu.getInput();
        in.hasOneUse() && plan.root(in) == in && in.getDefiningOp() &&
        !isa<ConstantOp>(in.getDefiningOp()) &&
        !executesLater(in.getDefiningOp()))
      plan.storageOf[relu.getResult()] = in;
  }

  // Live range of every arena buffer: from its definition to the last read
  // of any value stored in it (returned values live to the end).
  llvm::DenseMap<Value, std::pair<int64_t, int64_t>> range;
  SmallVector<Value> roots;
  for (Operation *op : ops) {
    if (isa<ConstantOp>(op) || fusedAway.contains(op))
      continue;
    for (Value result : op->getResults()) {
      if (!isHeldOnStage(result, stage))
        continue;
      Value root = plan.root(result);
      if (!root.getDefiningOp() || isa<ConstantOp>(root.getDefiningOp()) ||
          plan.rowsOfInput.count(root))
        continue;
      if (!range.count(root)) {
        range[root] = {position.lookup(root.getDefiningOp()),
                       position.lookup(root.getDefiningOp())};
        roots.push_back(root);
      }
    }
  }
  for (Operation *op : ops) {
    if (!reads(*op))
      continue;
    for (Value operand : op->getOperands()) {
      Value root = plan.root(operand);
      auto it = range.find(root);
      if (it == range.end())
        continue;
      Operation *at = executedAt.lookup(op);
      if (!at)
        at = plan.gemmInUpdate.lookup(op);
      int64_t use =
          isa<func::ReturnOp>(op) ? end : position.lookup(at ? at : op);
      it->second.second = std::max(it->second.second, use);
    }
  }

  // Buffers holding parameter gradients: what the optimizer updates read,
  // and the buffers a reduce-scatter or all-reduce summed them from.
  llvm::DenseSet<Value> gradients;
  auto addGradient = [&](Value grad) {
    // A slice_grad an update reads through holds nothing: its operand is
    // the gradient (FusionPlan::liveTapUpdates).
    if (auto slice = grad.getDefiningOp<SliceGradOp>();
        slice && fusedAway.contains(slice))
      grad = slice.getOutputGrad();
    gradients.insert(plan.root(grad));
    if (Operation *def = grad.getDefiningOp();
        def && isa<AllReduceOp, ReduceScatterOp>(def))
      for (Value input : def->getOperands())
        gradients.insert(plan.root(input));
  };
  for (Operation *op : ofKind(updates, [](Operation *op) {
         return isa<SgdOp, AdamwOp, MomentumOp, AdamOp, AdagradOp>(op);
       })) {
    if (auto sgd = dyn_cast<SgdOp>(op))
      addGradient(sgd.getGrad());
    else if (auto adamw = dyn_cast<AdamwOp>(op))
      addGradient(adamw.getGrad());
    else if (auto momentum = dyn_cast<MomentumOp>(op))
      llvm::for_each(momentum.getGrads(), addGradient);
    else if (auto adam = dyn_cast<AdamOp>(op))
      llvm::for_each(adam.getGrads(), addGradient);
    else if (auto adagrad = dyn_cast<AdagradOp>(op))
      llvm::for_each(adagrad.getGrads(), addGradient);
  }
  int64_t gradientsLive = 0;
  // First fit, in definition order, among the buffers still live. The free
  // space below the high-water mark is a list of gaps (offset -> size,
  // merged with their neighbours); buffers expire through a heap ordered by
  // their last use. Both stay small in practice, so a 20,000-op step plans
  // in milliseconds (a scan of every live buffer per op was quadratic).
  std::map<int64_t, int64_t> gaps;
  int64_t top = 0;
  // last, offset, size, whether a gradient
  using Expiry = std::tuple<int64_t, int64_t, int64_t, bool>;
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>> live;
  auto release = [&](int64_t offset, int64_t size) {
    auto next = gaps.lower_bound(offset);
    if (next != gaps.end() && offset + size == next->first) {
      size += next->second;
      next = gaps.erase(next);
    }
    if (next != gaps.begin()) {
      auto previous = std::prev(next);
      if (previous->first + previous->second == offset) {
        offset = previous->first;
        size += previous->second;
        gaps.erase(previous);
      }
    }
    if (offset + size == top)
      top = offset;
    else
      gaps[offset] = size;
  };
  for (Value root : roots) {
    auto [def, last] = range[root];
    while (!live.empty() && std::get<0>(live.top()) < def) {
      auto [expired, offset, size, gradient] = live.top();
      live.pop();
      release(offset, size);
      if (gradient)
        gradientsLive -= size;
    }
    int64_t size = (tensorBytes(root.getType()) + 63) / 64 * 64;
    int64_t offset = top;
    for (auto it = gaps.begin(); it != gaps.end(); ++it)
      if (it->second >= size) {
        offset = it->first;
        if (it->second > size)
          gaps[offset + size] = it->second - size;
        gaps.erase(it);
        break;
      }
    if (offset == top)
      top += size;
    bool gradient = gradients.contains(root);
    if (gradient)
      gradientsLive += size;
    live.emplace(last, offset, size, gradient);
    plan.arenaOffset[root] = offset;
    if (offset + size > plan.arenaBytes) {
      plan.arenaBytes = offset + size;
      plan.gradientBytesAtPeak = gradientsLive;
    }
  }
  return plan;
}


} // namespace

MemoryPlan planMemory(func::FuncOp func, const FusionPlan &fusion,
                      int64_t stage) {
  return MemoryPlanner(func, fusion, stage < 0 ? 0 : stage + 1).plan(stage);
}

std::vector<MemoryPlan> planMemoryOfStages(func::FuncOp func,
                                           const FusionPlan &fusion,
                                           int64_t numStages) {
  MemoryPlanner planner(func, fusion, numStages > 1 ? numStages : 0);
  std::vector<MemoryPlan> plans;
  plans.reserve(std::max<int64_t>(numStages, 1));
  for (int64_t s = 0; s < std::max<int64_t>(numStages, 1); ++s)
    plans.push_back(planner.plan(numStages > 1 ? s : -1, numStages > 1));
  return plans;
}

int64_t kernelScratchBytes(func::FuncOp func) {
  namespace scratch = ::cleave::rt::cuda::scratch;
  auto elements = [](Value v) {
    return cast<ShapedType>(v.getType()).getNumElements();
  };
  // The im2col matrix of one (sample, group): [C_in / groups * kernel,
  // output positions].
  auto convolution = [](Value weight, Value output) {
    auto w = cast<ShapedType>(weight.getType());
    auto y = cast<ShapedType>(output.getType());
    int64_t bytes = 4 * w.getDimSize(1);
    for (int64_t d = 2; d < w.getRank(); ++d)
      bytes *= w.getDimSize(d) * y.getDimSize(d);
    return scratch::convolution(bytes);
  };
  auto reduction = [&](Value input, Value result) {
    int64_t out = elements(result);
    return scratch::reduction(out, out ? elements(input) / out : 0);
  };
  int64_t bound = 0;
  func.walk([&](Operation *op) {
    int64_t bytes =
        llvm::TypeSwitch<Operation *, int64_t>(op)
            .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto reduce) {
              return reduction(reduce.getInput(), reduce.getResult());
            })
            .Case([](BatchNormOp norm) {
              return scratch::batchNorm(
                  norm.getScale().getType().getDimSize(0));
            })
            .Case([](BatchNormGradOp grad) {
              return scratch::batchNormGrad(
                  grad.getScale().getType().getDimSize(0));
            })
            .Case([](BatchNormGradFromSumsOp grad) {
              return scratch::batchNormGrad(
                  grad.getScale().getType().getDimSize(0));
            })
            // The per-channel sums write their results directly.
            .Case<BatchNormSumOp, BatchNormSquaredDeviationSumOp,
                  BatchNormGradSumsOp>([](Operation *) { return int64_t(0); })
            .Case<SoftmaxCrossEntropyGradOp, NllLossGradOp>(
                [](Operation *) { return scratch::kLossScaleBytes; })
            .Case([](GemmOp) { return scratch::kGemmEpilogueBytes; })
            .Case([&](ConvOp conv) {
              return convolution(conv.getWeight(), conv.getResult());
            })
            .Case([&](ConvGradInputOp grad) {
              return convolution(grad.getWeight(), grad.getOutputGrad());
            })
            .Case([&](ConvGradWeightOp grad) {
              return convolution(grad.getWeightGrad(), grad.getOutputGrad());
            })
            .Case([](AllGatherOp gather) {
              return scratch::aligned(tensorBytes(gather.getType()));
            })
            .Case([](ReduceScatterOp scatter) {
              return scratch::aligned(
                  tensorBytes(scatter.getInput().getType()));
            })
            .Default([](Operation *) { return int64_t(0); });
    bound = std::max(bound, bytes);
  });
  return bound;
}

} // namespace mlir::cleave
