//===- StageCut.cpp - where the forward pass is cut into stages -----------===//
//
// See StageCut.h.
//
//===----------------------------------------------------------------------===//

#include "passes/StageCut.h"
#include "passes/PullTowardUsers.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::cleave;

namespace {

double elementsOf(Value value) {
  auto type = dyn_cast<ShapedType>(value.getType());
  return type && type.hasStaticShape()
             ? static_cast<double>(type.getNumElements())
             : 1.0;
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

/// What an op's work and results weigh in the cut: `laterCopies` for a
/// micro-batch copy after the first, 1 for the first (which starts the
/// gradient sums the later ones add to) and for an op of the whole step.
double weightOf(Operation *op, double laterCopies) {
  auto copyOf =
      op->getAttrOfType<DenseI64ArrayAttr>(CleaveDialect::kMicroBatchAttrName);
  return copyOf && copyOf[0] > 0 ? laterCopies : 1.0;
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

llvm::DenseMap<Operation *, int64_t>
mlir::cleave::predictedUnits(Block &body, const ForwardUnits &units,
                             const StepFacts &facts) {
  int64_t last = static_cast<int64_t>(units.ops.size()) - 1;
  // The unit whose chunk runs each op (forward ops, then the others).
  llvm::DenseMap<Operation *, int64_t> unitOf(units.unitOf);
  // A weight's preparation and an op of the data alone join their first
  // forward reader.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (!facts.joinsReader.contains(&op))
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
  // Memoized: a value read by every micro-batch's copy (a shared mask)
  // would otherwise be scanned once per reader, quadratic in the copies.
  llvm::DenseMap<Value, int64_t> lastReaderOf;
  auto lastForwardReader = [&](Value value, int64_t from) {
    auto [it, inserted] = lastReaderOf.try_emplace(value, from);
    if (inserted)
      for (Operation *user : value.getUsers())
        if (units.unitOf.count(user))
          it->second = std::max(it->second, unitOf.lookup(user));
    return it->second;
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
  for (Operation &op : body.without_terminator()) {
    if (facts.everywhere(&op) || unitOf.count(&op))
      continue;
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
  }
  auto at = [&](Operation *op) -> std::optional<int64_t> {
    auto it = unitOf.find(op);
    return it == unitOf.end() ? std::nullopt : std::optional(it->second);
  };
  auto producedAt = [&](Value value) -> std::optional<int64_t> {
    Operation *def = value.getDefiningOp();
    return def ? at(def) : std::nullopt;
  };
  auto move = [&](Operation *op, int64_t u) { unitOf[op] = u; };
  pullTowardUsers(
      body, {at, producedAt, move},
      [&](Operation *op) { return units.unitOf.count(op) != 0; },
      facts.isParamOrState);
  return unitOf;
}

SmallVector<double>
mlir::cleave::unitWork(Block &body,
                       const llvm::DenseMap<Operation *, int64_t> &placed,
                       int64_t numUnits, double balance, double laterCopies) {
  SmallVector<double> work(numUnits, 0.0);
  for (Operation &op : body.without_terminator())
    if (auto it = placed.find(&op); it != placed.end())
      work[it->second] +=
          weightOf(&op, laterCopies) * estimatedWork(&op, balance);
  return work;
}

SmallVector<double>
mlir::cleave::cutBytes(Block &body,
                       const llvm::DenseMap<Operation *, int64_t> &placed,
                       int64_t numUnits, double laterCopies) {
  // change[u]: bytes that start (+) or stop (-) crossing at cut u.
  SmallVector<double> change(numUnits + 1, 0.0);
  for (Operation &op : body.without_terminator()) {
    auto it = placed.find(&op);
    if (it == placed.end())
      continue;
    for (Value result : op.getResults()) {
      int64_t first = it->second, last = it->second;
      for (Operation *user : result.getUsers())
        if (auto at = placed.find(user); at != placed.end()) {
          first = std::min(first, at->second);
          last = std::max(last, at->second);
        }
      if (first == last)
        continue;
      // A sum over the micro-batches (a weight's gradient) goes on once.
      bool perStep = llvm::none_of(result.getUsers(), [](Operation *user) {
        return user->hasAttr(CleaveDialect::kMicroBatchAttrName);
      });
      double bytes =
          (perStep ? 1.0 : weightOf(&op, laterCopies)) * bytesOf(result);
      change[first + 1] += bytes;
      change[last + 1] -= bytes;
    }
  }
  SmallVector<double> crossing(numUnits + 1, 0.0);
  for (int64_t u = 1; u < numUnits; ++u)
    crossing[u] = crossing[u - 1] + change[u];
  return crossing;
}

FailureOr<SmallVector<int64_t>>
mlir::cleave::balancedCut(const CutCosts &costs, ArrayRef<bool> cutAllowed,
                          int64_t chunks) {
  // Segments: runs of units between allowed cuts, the atoms of the cut;
  // position i is the start of segment i (n: the end).
  SmallVector<int64_t> segmentStart;
  SmallVector<double> prefix = {0.0}, crossing;
  for (size_t u = 0; u < costs.work.size(); ++u) {
    if (u == 0 || cutAllowed[u]) {
      segmentStart.push_back(u);
      prefix.push_back(prefix.back());
      crossing.push_back(u == 0 ? 0.0 : costs.crossing[u]);
    }
    prefix.back() += costs.work[u];
  }
  int64_t n = segmentStart.size();
  crossing.push_back(0.0);
  if (n < chunks)
    return failure();
  auto workOf = [&](int64_t from, int64_t to) {
    return prefix[to] - prefix[from];
  };
  auto cost = [&](int64_t from, int64_t to) {
    return workOf(from, to) +
           costs.linkBalance * (crossing[from] + crossing[to]);
  };
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // A split to start from: each cut at the first segment boundary past an
  // even share of the work. Its most expensive chunk bounds the optimum,
  // and so where each chunk can end: chunk c (from 0) ends at j only if
  // the work up to j fits in c + 1 chunks of that cost and the rest in the
  // others (a chunk costs at least its work). The searches below keep to
  // these bands.
  double upper = 0;
  for (int64_t c = 1, start = 0; c <= chunks; ++c) {
    int64_t end = n;
    if (c < chunks) {
      double share = prefix[n] * double(c) / double(chunks);
      end = std::lower_bound(prefix.begin() + start + 1, prefix.end(), share) -
            prefix.begin();
      end = std::clamp<int64_t>(end, start + 1, n - (chunks - c));
    }
    upper = std::max(upper, cost(start, end));
    start = end;
  }
  upper *= 1 + 1e-9;
  SmallVector<int64_t> lowEnd(chunks), highEnd(chunks);
  for (int64_t c = 0; c < chunks; ++c) {
    double before = double(c + 1) * upper,
           after = double(chunks - 1 - c) * upper;
    lowEnd[c] = std::max<int64_t>(
        c == chunks - 1 ? n : c + 1,
        std::lower_bound(prefix.begin(), prefix.end(), prefix[n] - after) -
            prefix.begin());
    highEnd[c] = std::min<int64_t>(
        n - (chunks - 1 - c),
        (std::upper_bound(prefix.begin(), prefix.end(), before) -
         prefix.begin()) -
            1);
  }
  // worst[c][j]: the least cost of the most expensive of c + 1 chunks
  // over segments 0..j. A chunk costs at least its work, so the search for
  // its start stops once the work alone reaches the best found.
  SmallVector<SmallVector<double>> worst(chunks,
                                         SmallVector<double>(n + 1, kNone));
  for (int64_t j = lowEnd[0]; j <= highEnd[0]; ++j)
    worst[0][j] = cost(0, j);
  for (int64_t c = 1; c < chunks; ++c)
    for (int64_t j = lowEnd[c]; j <= highEnd[c]; ++j)
      for (int64_t i = std::min(j - 1, highEnd[c - 1]); i >= lowEnd[c - 1];
           --i) {
        if (workOf(i, j) >= worst[c][j])
          break;
        worst[c][j] =
            std::min(worst[c][j], std::max(worst[c - 1][i], cost(i, j)));
      }
  double bound = worst[chunks - 1][n] * (1 + 1e-9);
  // Among the splits within the bound, the least sum of squared costs
  // (squares[c][j]; from[c][j]: where that chunk c starts). Ties go to
  // the later cut: free ops (a reshape) stay with the op before them.
  SmallVector<SmallVector<double>> squares(chunks,
                                           SmallVector<double>(n + 1, kNone));
  SmallVector<SmallVector<int64_t>> from(chunks,
                                         SmallVector<int64_t>(n + 1, 0));
  for (int64_t j = lowEnd[0]; j <= highEnd[0]; ++j)
    if (double first = cost(0, j); first <= bound)
      squares[0][j] = first * first;
  for (int64_t c = 1; c < chunks; ++c)
    for (int64_t j = lowEnd[c]; j <= highEnd[c]; ++j)
      for (int64_t i = std::min(j - 1, highEnd[c - 1]);
           i >= lowEnd[c - 1] && workOf(i, j) <= bound; --i) {
        double chunk = cost(i, j);
        if (chunk > bound || squares[c - 1][i] == kNone)
          continue;
        if (double sum = squares[c - 1][i] + chunk * chunk;
            sum < squares[c][j]) {
          squares[c][j] = sum;
          from[c][j] = i;
        }
      }
  assert(squares[chunks - 1][n] != kNone && "the bound admits a split");
  SmallVector<int64_t> starts(chunks, 0);
  for (int64_t c = chunks - 1, j = n; c > 0; --c) {
    j = from[c][j];
    starts[c] = segmentStart[j];
  }
  return starts;
}
