//===- StageCut.cpp - where the forward pass is cut into stages -----------===//
//
// See StageCut.h.
//
//===----------------------------------------------------------------------===//

#include "passes/StageCut.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::cleave;

namespace {

double elementsOf(Value value) {
  auto type = dyn_cast<ShapedType>(value.getType());
  return type && type.hasStaticShape()
             ? static_cast<double>(type.getNumElements())
             : 1.0;
}

double bytesOf(Value value) {
  auto type = dyn_cast<ShapedType>(value.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return 0.0;
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  return elementsOf(value) * std::max(1u, bits / 8);
}

/// Multiply-adds of one output element of a convolution: its weight's
/// elements per output channel.
double perOutputElement(Value weight) {
  auto type = cast<ShapedType>(weight.getType());
  return elementsOf(weight) / std::max<int64_t>(type.getDimSize(0), 1);
}

/// Floating-point operations of `op`: 2 M N K for matrix products, one per
/// result element otherwise.
double flopsOf(Operation *op) {
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    auto lhs = matmul.getLhs().getType();
    double k = lhs.getRank() ? lhs.getDimSize(lhs.getRank() - 1) : 1;
    return 2 * elementsOf(matmul.getResult()) * k;
  }
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    auto a = gemm.getA().getType();
    return 2 * elementsOf(gemm.getResult()) *
           a.getDimSize(gemm.getTransA() ? 0 : 1);
  }
  if (auto conv = dyn_cast<ConvOp>(op))
    return 2 * elementsOf(conv.getResult()) *
           perOutputElement(conv.getWeight());
  if (auto grad = dyn_cast<ConvGradInputOp>(op))
    return 2 * elementsOf(grad.getOutputGrad()) *
           perOutputElement(grad.getWeight());
  if (auto grad = dyn_cast<ConvGradWeightOp>(op))
    return 2 * elementsOf(grad.getOutputGrad()) *
           perOutputElement(grad.getWeightGrad());
  double elements = 0;
  for (Value result : op->getResults())
    elements = std::max(elements, elementsOf(result));
  return elements;
}

bool isUpdate(Operation *op) {
  return isa<SgdOp, AdamwOp, MomentumOp, AdamOp, AdagradOp>(op);
}

} // namespace

double mlir::cleave::estimatedWork(Operation *op, double balance) {
  if (isa<ConstantOp, ReshapeOp, AxisIndexOp, AllReduceOp, AllGatherOp,
          ReduceScatterOp, AllToAllOp, BroadcastOp, SendRecvOp>(op) ||
      op->getNumResults() == 0)
    return 0;
  double bytes = 0;
  for (Value operand : op->getOperands())
    if (!isa_and_nonnull<ConstantOp>(operand.getDefiningOp()))
      bytes += bytesOf(operand);
  for (Value result : op->getResults())
    bytes += bytesOf(result);
  return std::max(flopsOf(op), balance * bytes);
}

SmallVector<double> mlir::cleave::unitWork(Block &body,
                                           const ForwardUnits &units,
                                           const StepFacts &facts,
                                           double balance) {
  int64_t last = static_cast<int64_t>(units.ops.size()) - 1;
  // The unit whose chunk runs each op (forward ops, then the others).
  llvm::DenseMap<Operation *, int64_t> unitOf(units.unitOf);
  // A weight's preparation joins its first forward reader.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (!facts.weightOnly.contains(&op))
      continue;
    std::optional<int64_t> first;
    for (Operation *user : op.getUsers())
      if (units.unitOf.count(user))
        first = std::min(first.value_or(last), unitOf.lookup(user));
    if (first)
      unitOf[&op] = *first;
  }
  // Forward values are held up to their last forward reader; parameters
  // live with their first, and tied ones are at hand up to their last.
  auto lastForwardReader = [&](Value value, int64_t from) {
    for (Operation *user : value.getUsers())
      if (units.unitOf.count(user))
        from = std::max(from, unitOf.lookup(user));
    return from;
  };
  llvm::DenseMap<Value, int64_t> home, tiedUpTo;
  for (BlockArgument arg : body.getArguments()) {
    if (!facts.isParamOrState(arg))
      continue;
    std::optional<int64_t> first, lastUse;
    for (Operation *user : arg.getUsers())
      if (units.unitOf.count(user)) {
        int64_t u = unitOf.lookup(user);
        first = std::min(first.value_or(u), u);
        lastUse = std::max(lastUse.value_or(u), u);
      }
    if (first)
      home[arg] = *first;
    if (lastUse && *lastUse != *first)
      tiedUpTo[arg] = *lastUse;
  }
  auto heldUpTo = [&](Value value) -> std::optional<int64_t> {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (auto it = tiedUpTo.find(arg); it != tiedUpTo.end())
        return it->second;
      if (auto it = home.find(arg); it != home.end())
        return it->second;
      return std::nullopt;
    }
    Operation *def = value.getDefiningOp();
    auto it = unitOf.find(def);
    if (it == unitOf.end())
      return std::nullopt;
    return units.unitOf.count(def) ? lastForwardReader(value, it->second)
                                   : it->second;
  };
  SmallVector<double> work(units.ops.size(), 0.0);
  for (Operation &op : body.without_terminator()) {
    if (facts.everywhere(&op))
      continue;
    if (auto it = unitOf.find(&op); it != unitOf.end()) {
      work[it->second] += estimatedWork(&op, balance);
      continue;
    }
    // The rule of cleave-pipeline-stages: with a parameter's home, else in
    // the earliest chunk that holds every operand, else the last.
    std::optional<int64_t> at;
    for (Value operand : op.getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand);
          arg && facts.isParamOrState(arg) &&
          (isUpdate(&op) || !tiedUpTo.count(arg)))
        if (auto it = home.find(arg); it != home.end()) {
          at = it->second;
          break;
        }
    if (!at)
      for (Value operand : op.getOperands())
        if (std::optional<int64_t> held = heldUpTo(operand))
          at = std::min(at.value_or(*held), *held);
    int64_t u = at.value_or(last);
    unitOf[&op] = u;
    for (Value operand : op.getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand);
          arg && facts.isParamOrState(arg))
        home.try_emplace(arg, u);
    work[u] += estimatedWork(&op, balance);
  }
  return work;
}

FailureOr<SmallVector<int64_t>>
mlir::cleave::balancedCut(ArrayRef<double> work, ArrayRef<bool> cutAllowed,
                          int64_t chunks) {
  // Segments: runs of units between allowed cuts, the atoms of the cut.
  SmallVector<int64_t> segmentStart;
  SmallVector<double> prefix = {0.0};
  for (size_t u = 0; u < work.size(); ++u) {
    if (u == 0 || cutAllowed[u]) {
      segmentStart.push_back(u);
      prefix.push_back(prefix.back());
    }
    prefix.back() += work[u];
  }
  int64_t n = segmentStart.size();
  if (n < chunks)
    return failure();
  auto sum = [&](int64_t from, int64_t to) {
    return prefix[to] - prefix[from];
  };
  // The furthest end of a chunk from segment `from` within `bound`.
  auto furthest = [&](int64_t from, double bound) {
    auto it = std::upper_bound(prefix.begin() + from + 1, prefix.end(),
                               prefix[from] + bound);
    return std::max<int64_t>(from + 1, (it - prefix.begin()) - 1);
  };
  auto chunksNeeded = [&](double bound) {
    int64_t count = 0;
    for (int64_t at = 0; at < n; at = furthest(at, bound))
      ++count;
    return count;
  };
  // The least bound on a chunk's work that `chunks` chunks meet: greedy
  // filling decides whether a bound is met exactly, so bisect on it.
  double low = 0, high = prefix[n];
  for (int64_t s = 0; s < n; ++s)
    low = std::max(low, sum(s, s + 1));
  if (chunksNeeded(low) <= chunks)
    high = low;
  for (int i = 0; i < 200 && high - low > 1e-12 * high; ++i) {
    double mid = (low + high) / 2;
    (chunksNeeded(mid) <= chunks ? high : low) = mid;
  }
  double bound = high * (1 + 1e-12);
  // needed[s]: the fewest chunks that cover segments s... within the bound.
  SmallVector<int64_t> needed(n + 1, 0);
  for (int64_t s = n - 1; s >= 0; --s)
    needed[s] = 1 + needed[furthest(s, bound)];
  // Each cut as near to an even share of the rest as the bound allows
  // with the chunks left, so that chunks below the bottleneck are even too.
  SmallVector<int64_t> starts = {0};
  int64_t from = 0;
  for (int64_t left = chunks; left > 1; --left) {
    double target = prefix[from] + sum(from, n) / left;
    int64_t best = -1;
    for (int64_t end = from + 1; end <= n - (left - 1); ++end) {
      if (sum(from, end) > bound)
        break;
      if (needed[end] > left - 1)
        continue;
      // Ties go to the later cut: free ops (a reshape) stay with the op
      // before them, as the cut by multiply-adds kept them.
      if (best < 0 ||
          std::abs(prefix[end] - target) <= std::abs(prefix[best] - target))
        best = end;
    }
    assert(best > from && "the bound admits a cut");
    starts.push_back(segmentStart[best]);
    from = best;
  }
  return starts;
}
