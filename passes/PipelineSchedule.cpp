//===- PipelineSchedule.cpp - the order of a pipelined step ---------------===//
//
// Each stage's order of units comes from the schedule's formula; a
// simulated timeline (each unit taking its ops' work, starting when its
// stage is free and the units it reads from are done) gives every unit a
// start time; the block is then sorted topologically, the ready op with
// the earliest time first. Ops of no unit keep their place relative to the
// unit ops around them in the original order (a gradient bucket stays
// where its last gradient is computed, the optimizer at the end, shared
// inputs at the start).
//
//===----------------------------------------------------------------------===//

#include "passes/PipelineSchedule.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <queue>
#include <tuple>

using namespace mlir;
using namespace mlir::cleave;

StringRef mlir::cleave::pipelineScheduleName(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::GPipe:
    return "gpipe";
  case PipelineSchedule::OneFOneB:
    return "1f1b";
  case PipelineSchedule::Interleaved:
    return "interleaved";
  }
  llvm_unreachable("unknown schedule");
}

std::optional<PipelineSchedule>
mlir::cleave::parsePipelineSchedule(StringRef name) {
  for (PipelineSchedule schedule :
       {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
        PipelineSchedule::Interleaved})
    if (name == pipelineScheduleName(schedule))
      return schedule;
  return std::nullopt;
}

namespace {

/// One unit of work: a micro-batch's forward or backward pass through a
/// chunk of layers.
struct UnitKey {
  int64_t chunk;
  int64_t microbatch;
  bool forward;
  bool operator<(const UnitKey &other) const {
    return std::tie(chunk, microbatch, forward) <
           std::tie(other.chunk, other.microbatch, other.forward);
  }
};

/// The units stage `s` runs, in order.
std::vector<UnitKey> stageOrder(const ScheduleShape &shape, int64_t s) {
  int64_t p = shape.stages, v = shape.virtualStages, m = shape.microbatches;
  std::vector<UnitKey> order;
  if (shape.schedule == PipelineSchedule::GPipe) {
    for (bool forward : {true, false})
      for (int64_t mb = 0; mb < m; ++mb)
        order.push_back({s, mb, forward});
    return order;
  }
  // The k-th forward (backward) pass of the stage: micro-batches go through
  // the stage's chunks in groups of p (Megatron's order); with one chunk,
  // simply micro-batch k.
  auto unit = [&](int64_t k, bool forward) {
    int64_t local = (k / p) % v;
    if (!forward)
      local = v - 1 - local;
    int64_t mb = v == 1 ? k : (k / (p * v)) * p + k % p;
    return UnitKey{local * p + s, mb, forward};
  };
  int64_t total = m * v;
  int64_t warmup = shape.schedule == PipelineSchedule::OneFOneB
                       ? p - 1 - s
                       : (p - 1 - s) * 2 + (v - 1) * p;
  warmup = std::min(warmup, total);
  for (int64_t k = 0; k < warmup; ++k)
    order.push_back(unit(k, true));
  for (int64_t k = 0; k < total - warmup; ++k) {
    order.push_back(unit(warmup + k, true));
    order.push_back(unit(k, false));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    order.push_back(unit(k, false));
  return order;
}

/// Ops whose effects are not declared (random draws) keep their order:
/// the emitter numbers their streams in program order. A dropout stamped
/// by cleave-number-dropouts is free to move: its mask is a function of
/// its number, the step and its offset, not of where it runs.
bool hasUndeclaredEffects(Operation *op) {
  if (isa<DropoutOp>(op) && op->hasAttr(CleaveDialect::kDropoutNumberAttrName))
    return false;
  return !isa<MemoryEffectOpInterface>(op) && !isPure(op) &&
         op->getNumRegions() == 0;
}

} // namespace

LogicalResult mlir::cleave::orderForSchedule(
    Block &body, const llvm::DenseMap<Operation *, ScheduledOp> &info,
    const ScheduleShape &shape, Location loc) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;

  // Each op's unit (-1: none); a transfer goes with the value it sends.
  std::map<UnitKey, int64_t> unitIds;
  std::vector<UnitKey> units;
  std::vector<int64_t> unitOf(ops.size(), -1);
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (auto transfer = dyn_cast<SendRecvOp>(op)) {
      if (Operation *def = transfer.getInput().getDefiningOp();
          def && index.count(def))
        unitOf[i] = unitOf[index[def]];
      continue;
    }
    auto it = info.find(op);
    if (it == info.end() || !it->second.chunk || !it->second.microbatch)
      continue;
    UnitKey key{*it->second.chunk, *it->second.microbatch,
                it->second.forward};
    auto [at, added] = unitIds.try_emplace(key, units.size());
    if (added)
      units.push_back(key);
    unitOf[i] = at->second;
  }
  if (units.empty())
    return success();

  // The units each unit reads from, directly or through ops of no unit.
  int64_t numUnits = units.size();
  std::vector<llvm::BitVector> reads(ops.size(), llvm::BitVector(numUnits));
  std::vector<int64_t> work(numUnits, 0);
  for (auto [i, op] : llvm::enumerate(ops)) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || !index.count(def))
        continue;
      int64_t d = index[def];
      if (unitOf[d] >= 0)
        reads[i].set(unitOf[d]);
      else
        reads[i] |= reads[d];
    }
    if (unitOf[i] >= 0) {
      auto it = info.find(op);
      work[unitOf[i]] += it == info.end() ? 1 : std::max<int64_t>(
                                                    it->second.cost, 1);
    }
  }
  std::vector<llvm::BitVector> needs(numUnits, llvm::BitVector(numUnits));
  for (size_t i = 0; i < ops.size(); ++i)
    if (unitOf[i] >= 0)
      needs[unitOf[i]] |= reads[i];
  for (int64_t u = 0; u < numUnits; ++u)
    needs[u].reset(u);

  // The timeline: repeatedly start, among the stages whose next unit has
  // what it needs, the one that can start earliest.
  std::vector<std::vector<int64_t>> sequence(shape.stages);
  llvm::BitVector listed(numUnits);
  for (int64_t s = 0; s < shape.stages; ++s)
    for (const UnitKey &key : stageOrder(shape, s))
      if (auto it = unitIds.find(key); it != unitIds.end()) {
        sequence[s].push_back(it->second);
        listed.set(it->second);
      }
  if (listed.count() != numUnits)
    return emitError(loc) << "internal error: the "
                          << pipelineScheduleName(shape.schedule)
                          << " schedule leaves out units of the step";
  std::vector<double> start(numUnits, 0), finish(numUnits, -1);
  std::vector<size_t> next(shape.stages, 0);
  std::vector<double> freeAt(shape.stages, 0);
  for (int64_t done = 0; done < numUnits; ++done) {
    int64_t best = -1;
    double bestStart = 0;
    for (int64_t s = 0; s < shape.stages; ++s) {
      if (next[s] == sequence[s].size())
        continue;
      int64_t u = sequence[s][next[s]];
      double at = freeAt[s];
      bool ready = true;
      for (int64_t d : needs[u].set_bits()) {
        if (finish[d] < 0) {
          ready = false;
          break;
        }
        at = std::max(at, finish[d]);
      }
      if (ready && (best < 0 || at < bestStart)) {
        best = s;
        bestStart = at;
      }
    }
    if (best < 0) {
      // Name one wait: a stage's next unit and a unit it needs that is
      // queued behind another stage's waiting unit.
      auto describe = [&](int64_t u) {
        return llvm::formatv("the {0} pass of micro-batch {1} (chunk {2})",
                             units[u].forward ? "forward" : "backward",
                             units[u].microbatch, units[u].chunk)
            .str();
      };
      for (int64_t s = 0; s < shape.stages; ++s) {
        if (next[s] == sequence[s].size())
          continue;
        int64_t u = sequence[s][next[s]];
        for (int64_t d : needs[u].set_bits())
          if (finish[d] < 0)
            return emitError(loc)
                   << "the " << pipelineScheduleName(shape.schedule)
                   << " schedule cannot order this step: on stage " << s
                   << ", " << describe(u) << " needs values of "
                   << describe(d)
                   << ", which that schedule runs later; use the gpipe "
                      "schedule";
      }
      return emitError(loc) << "internal error: the "
                            << pipelineScheduleName(shape.schedule)
                            << " schedule's timeline is stuck";
    }
    int64_t u = sequence[best][next[best]++];
    start[u] = bestStart;
    finish[u] = bestStart + work[u];
    freeAt[best] = finish[u];
  }

  // Each op's time: its unit's start. An op of no unit that reads no
  // unit's results (a parameter's or the data's preparation) goes with its
  // earliest user. A computation on units' results (the running sum of
  // the micro-batches' gradients) goes as soon as they are there, so that
  // each micro-batch's part dies with its unit. Anything else (a gradient
  // bucket's all-reduce, the optimizer reading it) keeps the time of the
  // last unit op before it in the original order, unless a user needs it
  // sooner: a collective's wait stays as late as the original order had it.
  std::vector<double> time(ops.size(), 0);
  std::vector<bool> asSoonAsPossible(ops.size(), false);
  double last = 0;
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (unitOf[i] >= 0)
      last = start[unitOf[i]];
    time[i] = last;
    if (unitOf[i] >= 0 || reads[i].none() || !isPure(op) ||
        llvm::any_of(op->getOperands(), [](Value v) {
          Operation *def = v.getDefiningOp();
          return def && isa<MemoryEffectOpInterface>(def) && !isPure(def);
        }))
      continue;
    asSoonAsPossible[i] = true;
    time[i] = 0;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && index.count(def))
        time[i] = std::max(time[i], time[index[def]]);
  }
  for (int64_t i = static_cast<int64_t>(ops.size()) - 1; i >= 0; --i) {
    if (unitOf[i] >= 0 || asSoonAsPossible[i])
      continue;
    std::optional<double> earliestUser;
    for (Operation *user : ops[i]->getUsers())
      if (auto it = index.find(user); it != index.end())
        earliestUser = std::min(earliestUser.value_or(time[it->second]),
                                time[it->second]);
    if (earliestUser && (reads[i].none() || *earliestUser < time[i]))
      time[i] = *earliestUser;
  }

  // Topological order, earliest time first (then original order).
  std::vector<int64_t> pending(ops.size(), 0);
  std::vector<SmallVector<int64_t>> users(ops.size());
  auto addEdge = [&](int64_t from, int64_t to) {
    users[from].push_back(to);
    ++pending[to];
  };
  int64_t previousRandom = -1;
  for (auto [i, op] : llvm::enumerate(ops)) {
    llvm::SmallDenseSet<int64_t, 4> seen;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && index.count(def) && seen.insert(index[def]).second)
        addEdge(index[def], i);
    if (hasUndeclaredEffects(op)) {
      if (previousRandom >= 0 && !seen.count(previousRandom))
        addEdge(previousRandom, i);
      previousRandom = i;
    }
  }
  using Entry = std::pair<double, int64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (size_t i = 0; i < ops.size(); ++i)
    if (pending[i] == 0)
      ready.push({time[i], i});
  Operation *terminator = body.getTerminator();
  while (!ready.empty()) {
    int64_t i = ready.top().second;
    ready.pop();
    ops[i]->moveBefore(terminator);
    for (int64_t user : users[i])
      if (--pending[user] == 0)
        ready.push({time[user], user});
  }
  return success();
}
