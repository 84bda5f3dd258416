//===- PipelineStages.cpp - the step split into pipeline stages -----------===//
//
// Assigns every op of the per-rank training step to a pipeline stage and
// inserts cleave.send_recv where a value crosses stages. See Passes.td for
// the contract.
//
// Forward ops (those the loss depends on) are cut into contiguous stages
// balanced by estimated work, their backward and update ops included
// (StageCut.h; a unary elementwise op that alone reads its operand stays
// with it). A parameter lives in the stage of its
// forward uses, and every op that reads or updates it (its gradient's last
// steps, the optimizer) runs there too. Any other backward op runs in the
// earliest stage among those that still hold what it reads: a forward value is
// held up to the last stage whose forward ops read it, a backward value where
// it is computed. Gradients so flow from the last stage back to the first, as
// the activations flowed forward; a backward op whose results one other
// stage reads moves there (with the producers only it reads) when that
// sends no more bytes, so weight gradients do not cross. Ops that read only
// constants, data inputs and the step counter run on every stage that reads
// them (a copy each). The micro-batch copies of an op
// (cleave-unroll-microbatches) share a stage.
//
// The cut is into chunks: one per stage, or V per stage for the
// interleaved schedule (chunk c on stage c mod p); everything above is
// about chunks, and only attributes and transfers name stages. A parameter
// read forward by several chunks (tied weights) lives in the first and
// only its update is pinned there. For a schedule other than GPipe the
// block is then reordered (PipelineSchedule.h).
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionAttributes.h"
#include "passes/Passes.h"
#include "passes/PipelineSchedule.h"
#include "passes/PullTowardUsers.h"
#include "passes/StageCut.h"
#include "passes/TrainingStep.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace mlir::cleave {
#define GEN_PASS_DEF_PIPELINESTAGESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The ONNX node an op comes from, quoted, or its op name.
std::string nodeNameOf(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return ("'" + name.getName().getValue() + "'").str();
  return op->getName().getStringRef().str();
}

int64_t numElements(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

/// Rough work of an op for the simulated timeline that merges the stages'
/// orders: multiply-adds of the contractions, one unit per result element
/// otherwise.
int64_t costOf(Operation *op) {
  int64_t elements = 1;
  for (Value result : op->getResults())
    elements += numElements(result);
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    ArrayRef<int64_t> a = gemm.getA().getType().getShape();
    return 2 * elements * a[gemm.getTransA() ? 0 : 1];
  }
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return 2 * elements * matmul.getLhs().getType().getShape().back();
  if (auto conv = dyn_cast<ConvOp>(op)) {
    auto weight = conv.getWeight().getType();
    return 2 * elements * (weight.getNumElements() / weight.getDimSize(0));
  }
  return elements;
}

/// Cuts the step into chunks of layers (one per stage, or V per stage for
/// the interleaved schedule: chunk c runs on stage c mod p) and orders it
/// for the schedule. "Stage" below means chunk, except where ranks are
/// written (attributes, transfers).
class StageAssigner {
public:
  StageAssigner(func::FuncOp func, StringAttr axis, int64_t numRanks,
                const ScheduleShape &schedule, ArrayRef<std::string> cuts,
                double machineBalance, double linkBalance,
                int64_t cutMicrobatches, bool report)
      : func(func), body(func.getBody().front()), axis(axis),
        numStages(numRanks * schedule.virtualStages), numRanks(numRanks),
        schedule(schedule), explicitCuts(cuts), machineBalance(machineBalance),
        linkBalance(linkBalance), cutMicrobatches(cutMicrobatches),
        report(report) {}

  LogicalResult run();

private:
  bool isParamOrState(BlockArgument arg) {
    return func.getArgAttr(arg.getArgNumber(), CleaveDialect::kParamAttrName) ||
           func.getArgAttr(arg.getArgNumber(), CleaveDialect::kStateAttrName);
  }
  StringRef argName(BlockArgument arg) {
    for (StringRef kind :
         {CleaveDialect::kParamAttrName, CleaveDialect::kStateAttrName,
          CleaveDialect::kInputAttrName})
      if (auto name =
              func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kind))
        return name.getValue();
    return "step";
  }
  /// Ops computed from constants, data inputs and the step counter only:
  /// every stage computes them itself.
  void findEverywhereOps();
  /// Splits an all-reduce that sums values of the data alone (a loss's
  /// sample count) together with computed ones (the loss) in two, so that
  /// a schedule that starts backward passes before the last forward pass
  /// has the count without waiting for the loss.
  void separateDataReductions();
  /// Cuts the forward ops into chunks (by estimated work, or at the
  /// explicit cuts) and assigns them.
  LogicalResult assignForward();
  /// For a unary elementwise op of its operand's type that alone reads the
  /// operand in the forward pass (a layer's ReLU), the forward op computing
  /// the operand: the two stay in one chunk. Null otherwise.
  Operation *operandItFollows(Operation *op) const;
  LogicalResult emptyChunkError(int64_t chunk);
  /// Chunk starts from the `cuts` option (ONNX node names); a cut is
  /// refused before a unit without `cutAllowed`.
  LogicalResult applyExplicitCuts(const ForwardUnits &units,
                                  ArrayRef<bool> cutAllowed);
  /// A remark per chunk: where it starts and ends, its estimated work.
  void reportChunks();
  LogicalResult assignParameterHomes();
  LogicalResult assignRest();
  /// The stage where `value` is computed; nullopt for values every stage
  /// has.
  std::optional<int64_t> producedAt(Value value) const;
  /// The latest stage that still holds `value` without a transfer.
  std::optional<int64_t> heldUpTo(Value value) const;
  /// Moves backward ops (and gradient all-reduces over other axes) whose
  /// results only one other stage reads into that stage where this sends no
  /// more bytes (a weight gradient then crosses as the small activation
  /// gradient it is computed from).
  void pullTowardUsers();
  /// Splits a bucket all-reduce whose gradients come from several stages
  /// into one per stage; returns the new ops (or `op` alone).
  SmallVector<Operation *> splitBucket(AllReduceOp op);
  /// Splits an ONNX training op (Momentum, Adam, Adagrad) whose parameters
  /// live on several stages into one per stage, over that stage's
  /// parameters; returns the new ops (or `op` alone).
  SmallVector<Operation *> splitOptimizer(Operation *op);
  void insertTransfers();
  /// Where a layer spans two chunks, the later chunk's recomputed ops and
  /// backward ops would read the earlier chunk's recomputed copies, which
  /// run in the earlier chunk's backward pass, after the later one's: they
  /// read the forward originals instead (sent forward with the pass).
  void readOriginalsAcrossChunks();
  /// Gives an op that every stage could compute (it reads only constants,
  /// inputs and the step) to the stages that read its results only, one
  /// copy per stage, so that no stage computes what it does not use.
  void placeSharedOps();
  /// The stage (rank coordinate) that runs chunk `chunk`.
  int64_t rankOf(int64_t chunk) const { return chunk % numRanks; }
  /// Records `op`'s chunk. Its `cleave.stage` is written once every op's
  /// chunk is known (writeStages): setting an attribute rebuilds the op's
  /// whole dictionary, and ops change chunks on the way.
  void setStage(Operation *op, int64_t chunk) {
    stage[op] = chunk;
    if (stagesWritten)
      writeStage(op, chunk);
  }
  void writeStage(Operation *op, int64_t chunk) {
    op->setAttr(CleaveDialect::kStageAttrName,
                IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                 rankOf(chunk)));
  }
  void writeStages() {
    for (auto [op, chunk] : stage)
      writeStage(op, chunk);
    stagesWritten = true;
  }
  /// What the schedule needs to know of each op.
  llvm::DenseMap<Operation *, ScheduledOp> scheduleInfo() const;

  func::FuncOp func;
  Block &body;
  StringAttr axis;
  /// Chunks (numRanks x virtual stages) and stages (ranks along the axis).
  int64_t numStages;
  int64_t numRanks;
  ScheduleShape schedule;
  /// ONNX node names that later chunks start with; empty: cut by work.
  ArrayRef<std::string> explicitCuts;
  double machineBalance;
  double linkBalance;
  int64_t cutMicrobatches;
  bool report;
  /// The first forward unit of each chunk.
  SmallVector<int64_t> chunkStarts;
  llvm::DenseSet<Operation *> everywhere;
  llvm::SetVector<Operation *> forward;
  llvm::DenseMap<Operation *, int64_t> stage;
  bool stagesWritten = false;
  /// Where parameters and optimizer state live.
  llvm::DenseMap<Value, int64_t> home;
  /// Tied parameters: the last stage that reads them forward.
  llvm::DenseMap<Value, int64_t> tiedUpTo;
  /// heldUpTo's answers for forward values, whose readers' stages are
  /// fixed once the forward pass is placed: a value every micro-batch's
  /// copy reads would otherwise be scanned once per reader.
  mutable llvm::DenseMap<Value, int64_t> lastForwardStage;
};

void StageAssigner::findEverywhereOps() {
  for (Operation &op : body.without_terminator()) {
    // all_slice keeps this rank's block without communicating: as pure as
    // any local op.
    if ((!isPure(&op) && !isa<AllSliceOp>(op)) || op.getNumRegions() != 0)
      continue;
    bool local = llvm::all_of(op.getOperands(), [&](Value v) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        return !isParamOrState(arg);
      return everywhere.contains(v.getDefiningOp());
    });
    if (local)
      everywhere.insert(&op);
  }
}

void StageAssigner::separateDataReductions() {
  SmallVector<AllReduceOp> mixed;
  for (auto op : body.getOps<AllReduceOp>()) {
    auto fromData = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && everywhere.contains(def);
    };
    if (llvm::any_of(op.getInputs(), fromData) &&
        !llvm::all_of(op.getInputs(), fromData))
      mixed.push_back(op);
  }
  for (AllReduceOp op : mixed) {
    OpBuilder builder(op);
    for (bool data : {true, false}) {
      SmallVector<Value> inputs;
      SmallVector<unsigned> indices;
      for (auto [i, input] : llvm::enumerate(op.getInputs())) {
        Operation *def = input.getDefiningOp();
        if ((def && everywhere.contains(def)) == data) {
          inputs.push_back(input);
          indices.push_back(i);
        }
      }
      auto part =
          AllReduceOp::create(builder, op.getLoc(), inputs, op.getAxesAttr());
      part->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      for (auto [i, result] : llvm::zip(indices, part.getResults()))
        op.getResult(i).replaceAllUsesWith(result);
    }
    op.erase();
  }
}

LogicalResult StageAssigner::assignForward() {
  // The ops the loss depends on, in program order.
  llvm::DenseSet<Operation *> needed =
      forwardOps(func, [&](Operation *op) { return everywhere.contains(op); });
  // Units of the cut: an op, or all micro-batch copies of one op
  // (cleave-unroll-microbatches), in the order they first appear: stages
  // split layers, and every micro-batch passes through all of them.
  llvm::MapVector<std::pair<Operation *, int64_t>, SmallVector<Operation *, 1>>
      byKey;
  for (Operation &op : body.without_terminator()) {
    if (!needed.contains(&op))
      continue;
    forward.insert(&op);
    auto copyOf =
        op.getAttrOfType<DenseI64ArrayAttr>(CleaveDialect::kMicroBatchAttrName);
    auto key = copyOf ? std::make_pair<Operation *, int64_t>(nullptr, copyOf[1])
                      : std::make_pair<Operation *, int64_t>(&op, 0);
    byKey[key].push_back(&op);
  }
  ForwardUnits units;
  for (auto &[key, ops] : byKey) {
    for (Operation *op : ops)
      units.unitOf[op] = units.ops.size();
    units.ops.push_back(std::move(ops));
  }
  int64_t numUnits = units.ops.size();
  // Ops that only prepare a parameter (a transpose of a weight, say) join
  // the stage that uses their result: the parameter then lives there, and
  // neither it nor its gradient crosses stages.
  llvm::DenseSet<Value> fromData;
  for (BlockArgument arg : body.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), CleaveDialect::kInputAttrName))
      fromData.insert(arg);
  for (Operation &op : body.without_terminator())
    if (forward.contains(&op) || llvm::any_of(op.getOperands(), [&](Value v) {
          return fromData.contains(v);
        }))
      fromData.insert(op.result_begin(), op.result_end());
  llvm::DenseSet<Operation *> weightOnly;
  for (Operation *op : forward)
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return fromData.contains(v); }))
      weightOnly.insert(op);
  // So do forward ops of the data alone that every stage cannot compute
  // for itself (a data-parallel sum of the loss's sample count): only the
  // stage that reads their result needs them.
  llvm::DenseSet<Operation *> dataOnly;
  for (Operation *op : forward)
    if (llvm::all_of(op->getOperands(), [&](Value v) {
          if (auto arg = dyn_cast<BlockArgument>(v))
            return !isParamOrState(arg);
          Operation *def = v.getDefiningOp();
          return everywhere.contains(def) || dataOnly.contains(def);
        }))
      dataOnly.insert(op);
  llvm::DenseSet<Operation *> joinsReader(weightOnly);
  joinsReader.insert(dataOnly.begin(), dataOnly.end());
  // No cut between a unary elementwise op (a layer's ReLU) that alone
  // reads its operand in the forward pass and that operand's producer:
  // what crosses is as large either way (same type), and the backward
  // pass, which reads the op's result, then finds it where the layer's
  // gradient is computed.
  SmallVector<bool> cutAllowed(numUnits, true);
  for (int64_t u = 1; u < numUnits; ++u)
    if (Operation *def = operandItFollows(units.ops[u].front()))
      for (int64_t c = units.unitOf.lookup(def) + 1; c <= u; ++c)
        cutAllowed[c] = false;
  // Nor after a unit that joins its reader: a chunk of such units alone
  // would be left empty. (Trailing ones stay with the unit before them.)
  auto joins = [&](ArrayRef<Operation *> ops) {
    return llvm::all_of(
        ops, [&](Operation *op) { return joinsReader.contains(op); });
  };
  for (int64_t u = 0; u + 1 < numUnits; ++u)
    if (joins(units.ops[u]))
      cutAllowed[u + 1] = false;
  for (int64_t u = numUnits - 1; u > 0 && joins(units.ops[u]); --u)
    cutAllowed[u] = false;
  if (explicitCuts.empty()) {
    auto isEverywhere = [&](Operation *op) { return everywhere.contains(op); };
    auto isState = [&](BlockArgument arg) { return isParamOrState(arg); };
    StepFacts facts{isEverywhere, isState, joinsReader};
    llvm::DenseMap<Operation *, int64_t> placed =
        predictedUnits(body, units, facts);
    // Balanced as for cut-microbatches micro-batches of the same size.
    double laterCopies =
        cutMicrobatches > 0 && schedule.microbatches > 1
            ? double(cutMicrobatches - 1) / double(schedule.microbatches - 1)
            : 1.0;
    SmallVector<double> work =
        unitWork(body, placed, numUnits, machineBalance, laterCopies);
    SmallVector<double> crossing =
        cutBytes(body, placed, numUnits, laterCopies);
    CutCosts costs{work, crossing, linkBalance};
    FailureOr<SmallVector<int64_t>> starts =
        balancedCut(costs, cutAllowed, numStages);
    // Too few legal cuts: cut anywhere (the checks below say whether that
    // leaves a chunk empty).
    if (failed(starts))
      starts = balancedCut(costs, SmallVector<bool>(numUnits, true), numStages);
    if (failed(starts))
      return emptyChunkError(numUnits);
    chunkStarts = *starts;
  } else if (failed(applyExplicitCuts(units, cutAllowed))) {
    return failure();
  }
  SmallVector<int64_t> perStage(numStages, 0);
  for (int64_t c = 0; c < numStages; ++c) {
    int64_t end = c + 1 < numStages ? chunkStarts[c + 1] : numUnits;
    for (int64_t u = chunkStarts[c]; u < end; ++u) {
      for (Operation *op : units.ops[u])
        setStage(op, c);
      ++perStage[c];
    }
  }
  // Explicit cuts (or too few legal ones) may still separate such an op
  // from its operand: it joins the operand's stage.
  for (int64_t u = 1; u < numUnits; ++u) {
    Operation *op = units.ops[u].front();
    Operation *def = operandItFollows(op);
    if (!def)
      continue;
    int64_t from = stage.lookup(op), to = stage.lookup(def);
    if (to >= from || perStage[from] == 1)
      continue;
    --perStage[from];
    ++perStage[to];
    for (Operation *copy : units.ops[u])
      setStage(copy, to);
  }
  // A weight's preparation and an op of the data alone join the first
  // stage that reads them.
  for (Operation *op : llvm::reverse(forward)) {
    if (!joinsReader.contains(op))
      continue;
    std::optional<int64_t> users;
    for (Operation *user : op->getUsers())
      if (forward.contains(user))
        users = std::min(users.value_or(numStages), stage.lookup(user));
    if (users && *users != stage.lookup(op)) {
      --perStage[stage.lookup(op)];
      ++perStage[*users];
      setStage(op, *users);
    }
  }
  for (int64_t s = 0; s < numStages; ++s)
    if (perStage[s] == 0)
      return emptyChunkError(s);
  return success();
}

Operation *StageAssigner::operandItFollows(Operation *op) const {
  if (op->getNumOperands() != 1 ||
      !op->hasTrait<mlir::OpTrait::Elementwise>() ||
      !op->hasTrait<mlir::OpTrait::SameOperandsAndResultType>() ||
      llvm::any_of(op->getOperand(0).getUsers(), [&](Operation *user) {
        return user != op && forward.contains(user);
      }))
    return nullptr;
  Operation *def = op->getOperand(0).getDefiningOp();
  return def && forward.contains(def) ? def : nullptr;
}

LogicalResult StageAssigner::emptyChunkError(int64_t chunk) {
  if (numStages == numRanks)
    return func.emitError()
           << "the forward pass cannot be split into " << numStages
           << " pipeline stages of similar work: stage " << chunk
           << " would get no op (" << forward.size()
           << " forward ops in all); use fewer stages along '"
           << axis.getValue() << "'";
  return func.emitError()
         << "the forward pass cannot be split into " << numStages
         << " chunks of similar work (" << numRanks << " stages x "
         << schedule.virtualStages << " virtual stages): chunk " << chunk
         << " would get no op (" << forward.size()
         << " forward ops in all); use fewer virtual stages or fewer "
            "stages along '"
         << axis.getValue() << "'";
}

LogicalResult
StageAssigner::applyExplicitCuts(const ForwardUnits &units,
                                 ArrayRef<bool> cutAllowed) {
  if (static_cast<int64_t>(explicitCuts.size()) != numStages - 1) {
    InFlightDiagnostic diag = func.emitError();
    diag << "pipeline cuts: " << explicitCuts.size() << " given, but "
         << numRanks << " stages";
    if (numStages != numRanks)
      diag << " x " << schedule.virtualStages << " virtual stages";
    return diag << " need " << numStages - 1
                << " (the ONNX node each later "
                << (numStages != numRanks ? "chunk" : "stage")
                << " starts with, in program order)";
  }
  auto nameOf = [&](int64_t unit) -> StringRef {
    if (auto loc = dyn_cast<NameLoc>(units.ops[unit].front()->getLoc()))
      return loc.getName().getValue();
    return "";
  };
  int64_t numUnits = units.ops.size();
  chunkStarts = {0};
  for (StringRef name : explicitCuts) {
    int64_t previous = chunkStarts.back();
    std::optional<int64_t> at, earlier;
    for (int64_t u = 0; u < numUnits && !at; ++u)
      if (nameOf(u) == name)
        (u > previous ? at : earlier) = u;
    if (!at && earlier) {
      if (*earlier == 0)
        return func.emitError()
               << "pipeline cut '" << name
               << "': the first stage starts there already; cuts name the "
                  "ONNX node each later stage starts with";
      return func.emitError()
             << "pipeline cut '" << name << "' is out of order: it comes "
             << (*earlier == previous ? "at" : "before")
             << " the previous cut '" << nameOf(previous)
             << "' in the forward pass; give the cuts in program order";
    }
    if (!at) {
      // The nearest forward node names by edit distance.
      SmallVector<std::pair<unsigned, StringRef>> near;
      llvm::StringSet<> seen;
      for (int64_t u = 1; u < numUnits; ++u) {
        StringRef candidate = nameOf(u);
        if (candidate.empty() || !seen.insert(candidate).second)
          continue;
        unsigned distance = name.edit_distance(candidate, true, 1000);
        if (distance <= std::max<size_t>(3, name.size() / 3))
          near.push_back({distance, candidate});
      }
      llvm::stable_sort(near, llvm::less_first());
      InFlightDiagnostic diag = func.emitError();
      diag << "pipeline cut '" << name
           << "': no forward op of the model has this ONNX node name";
      if (!near.empty()) {
        diag << "; did you mean ";
        for (size_t i = 0; i < std::min<size_t>(near.size(), 3); ++i)
          diag << (i ? ", " : "") << "'" << near[i].second << "'";
      } else if (!seen.empty()) {
        diag << "; the forward ops are ";
        llvm::StringSet<> listed;
        for (int64_t u = 0; u < numUnits && listed.size() < 4; ++u)
          if (!nameOf(u).empty() && listed.insert(nameOf(u)).second)
            diag << (listed.size() > 1 ? ", " : "") << "'" << nameOf(u)
                 << "'";
        diag << (seen.size() + 1 > listed.size() ? ", ..." : "");
      } else {
        diag << "; the forward ops carry no ONNX node names (IR printed "
                "without locations: import with --print-locations)";
      }
      return diag;
    }
    if (!cutAllowed[*at]) {
      // The run of units the cut would split: from the last allowed cut to
      // the next one.
      int64_t from = *at, to = *at;
      while (from > 0 && !cutAllowed[from])
        --from;
      while (to < numUnits && !cutAllowed[to])
        ++to;
      InFlightDiagnostic diag = func.emitError();
      diag << "pipeline cut '" << name << "' would split the layer from '"
           << nameOf(from) << "' to '" << nameOf(to - 1)
           << "': a unary elementwise op (a ReLU) stays in the stage of the "
              "op whose result it alone reads, since its gradient reads its "
              "own result";
      SmallVector<StringRef, 2> instead;
      if (from > 0)
        instead.push_back(nameOf(from));
      if (to < numUnits)
        instead.push_back(nameOf(to));
      for (auto [i, other] : llvm::enumerate(instead))
        diag << (i ? " or at '" : "; cut at '") << other << "'";
      return diag;
    }
    chunkStarts.push_back(*at);
  }
  return success();
}

void StageAssigner::reportChunks() {
  SmallVector<double> forwardWork(numStages, 0), otherWork(numStages, 0);
  SmallVector<Operation *> first(numStages, nullptr), last(numStages, nullptr);
  SmallVector<int64_t> count(numStages, 0);
  for (Operation &op : body.without_terminator()) {
    auto it = stage.find(&op);
    if (it == stage.end())
      continue;
    int64_t c = it->second;
    double work = estimatedWork(&op, machineBalance);
    if (!forward.contains(&op)) {
      otherWork[c] += work;
      continue;
    }
    forwardWork[c] += work;
    ++count[c];
    if (!first[c])
      first[c] = &op;
    last[c] = &op;
  }
  // What each chunk sends and receives per step (a transfer feeds the
  // chunk of its first reader).
  SmallVector<int64_t> sent(numStages, 0), received(numStages, 0);
  for (auto transfer : body.getOps<SendRecvOp>()) {
    if (std::optional<int64_t> from = producedAt(transfer.getInput()))
      sent[*from] += static_cast<int64_t>(bytesOf(transfer.getResult()));
    std::optional<int64_t> to;
    for (Operation *user : transfer->getUsers())
      if (auto it = stage.find(user); it != stage.end())
        to = std::min(to.value_or(it->second), it->second);
    if (to)
      received[*to] += static_cast<int64_t>(bytesOf(transfer.getResult()));
  }
  for (int64_t c = 0; c < numStages; ++c) {
    InFlightDiagnostic remark = first[c]->emitRemark();
    remark << "pipeline chunk " << c << " (stage " << rankOf(c)
           << "): forward ops " << nodeNameOf(first[c]) << " to "
           << nodeNameOf(last[c]) << " (" << count[c] << "), estimated work "
           << llvm::formatv("{0:e2}", forwardWork[c] + otherWork[c])
           << " (forward " << llvm::formatv("{0:e2}", forwardWork[c])
           << ", backward and update " << llvm::formatv("{0:e2}", otherWork[c])
           << "), sends " << sent[c] << " B and receives " << received[c]
           << " B per step";
  }
}

LogicalResult StageAssigner::assignParameterHomes() {
  for (BlockArgument arg : body.getArguments()) {
    if (!isParamOrState(arg))
      continue;
    // A parameter read forward by several stages (tied embeddings) lives
    // in the first; the others receive it (a transfer at the step's
    // start) and send their part of its gradient back, where the parts
    // are summed and the update runs.
    std::optional<int64_t> first, last;
    for (Operation *user : arg.getUsers()) {
      if (!forward.contains(user))
        continue;
      int64_t s = stage.lookup(user);
      first = std::min(first.value_or(s), s);
      last = std::max(last.value_or(s), s);
    }
    if (first)
      home[arg] = *first;
    if (last && *last != *first)
      tiedUpTo[arg] = *last;
  }
  return success();
}

std::optional<int64_t> StageAssigner::producedAt(Value value) const {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto it = home.find(arg);
    return it == home.end() ? std::nullopt : std::optional(it->second);
  }
  Operation *def = value.getDefiningOp();
  if (auto transfer = dyn_cast<SendRecvOp>(def))
    return transfer.getDestAttr().getInt();
  auto it = stage.find(def);
  return it == stage.end() ? std::nullopt : std::optional(it->second);
}

std::optional<int64_t> StageAssigner::heldUpTo(Value value) const {
  std::optional<int64_t> at = producedAt(value);
  // A tied parameter is at hand in every stage that reads it forward.
  if (auto arg = dyn_cast<BlockArgument>(value))
    if (auto it = tiedUpTo.find(arg); it != tiedUpTo.end())
      return it->second;
  if (!at || !value.getDefiningOp() || !forward.contains(value.getDefiningOp()))
    return at;
  auto [it, inserted] = lastForwardStage.try_emplace(value, *at);
  if (inserted)
    for (Operation *user : value.getUsers())
      if (forward.contains(user))
        it->second = std::max(it->second, stage.lookup(user));
  return it->second;
}

/// The indices 0..n-1 by the stage `destination` gives each, stages in
/// the order first seen.
static llvm::MapVector<int64_t, SmallVector<int64_t>>
groupByStage(int64_t n, llvm::function_ref<int64_t(int64_t)> destination) {
  llvm::MapVector<int64_t, SmallVector<int64_t>> byStage;
  for (int64_t i = 0; i < n; ++i)
    byStage[destination(i)].push_back(i);
  return byStage;
}

SmallVector<Operation *> StageAssigner::splitBucket(AllReduceOp op) {
  // A gradient goes with the stage of the parameter its sum updates.
  auto destination = [&](int64_t i) -> int64_t {
    std::optional<int64_t> at;
    for (Operation *user : op.getResult(i).getUsers())
      for (Value operand : user->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand);
            arg && isParamOrState(arg) && home.count(arg))
          at = std::min(at.value_or(numStages), home.lookup(arg));
    return at ? *at : producedAt(op.getInputs()[i]).value_or(numStages - 1);
  };
  auto byStage = groupByStage(op.getInputs().size(), destination);
  if (byStage.size() < 2)
    return {op};
  OpBuilder builder(op);
  SmallVector<Operation *> parts;
  for (auto &[s, indices] : byStage) {
    SmallVector<Value> inputs;
    for (int64_t i : indices)
      inputs.push_back(op.getInputs()[i]);
    auto part =
        AllReduceOp::create(builder, op.getLoc(), inputs, op.getAxesAttr());
    part->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    for (auto [i, result] : llvm::zip(indices, part.getResults()))
      op.getResult(i).replaceAllUsesWith(result);
    parts.push_back(part);
  }
  op.erase();
  return parts;
}

/// Whether `use` is an update's step count or learning rate, which every
/// update reads (a state of a training_info model): it does not tie the
/// update to a stage, the tensors it updates do.
static bool isSharedByUpdates(OpOperand &use) {
  Operation *op = use.getOwner();
  if (isa<MomentumOp, AdamOp, AdagradOp>(op))
    return use.getOperandNumber() < 2;
  if (auto sgd = dyn_cast<SgdOp>(op))
    return use.get() == sgd.getStep() || use.get() == sgd.getLrFactor();
  if (auto adamw = dyn_cast<AdamwOp>(op))
    return use.get() == adamw.getStep() || use.get() == adamw.getLrFactor();
  return false;
}

/// The step argument `value` is, or that it is a slice of (ZeRO's shard,
/// through all_slice); null for anything else.
static BlockArgument sliceRoot(Value value) {
  while (auto slice = value.getDefiningOp<AllSliceOp>())
    value = slice.getInput();
  return dyn_cast<BlockArgument>(value);
}

SmallVector<Operation *> StageAssigner::splitOptimizer(Operation *op) {
  // Operands: lr, step, then groups of n (params, grads, states); results:
  // groups of n (new params, new states). Each parameter's update reads
  // only its own tensors and the shared lr and step.
  auto properties = cast<DictionaryAttr>(op->getPropertiesAsAttribute());
  auto segments =
      cast<DenseI32ArrayAttr>(properties.get("operandSegmentSizes"));
  int64_t n = segments[2];
  int64_t groupsIn = segments.size() - 2;
  int64_t groupsOut = n ? op->getNumResults() / n : 0;
  auto destination = [&](int64_t i) -> int64_t {
    if (BlockArgument param = sliceRoot(op->getOperand(2 + i)))
      if (auto it = home.find(param); it != home.end())
        return it->second;
    return producedAt(op->getOperand(2 + i)).value_or(numStages - 1);
  };
  auto byStage = groupByStage(n, destination);
  if (byStage.size() < 2)
    return {op};
  OpBuilder builder(op);
  SmallVector<Operation *> parts;
  for (auto &[s, indices] : byStage) {
    int64_t m = indices.size();
    OperationState state(op->getLoc(), op->getName());
    state.addOperands({op->getOperand(0), op->getOperand(1)});
    for (int64_t g = 0; g < groupsIn; ++g)
      for (int64_t i : indices)
        state.addOperands(op->getOperand(2 + g * n + i));
    for (int64_t g = 0; g < groupsOut; ++g)
      for (int64_t i : indices)
        state.addTypes(op->getResult(g * n + i).getType());
    SmallVector<int32_t> sizes = {1, 1};
    sizes.append(groupsIn, static_cast<int32_t>(m));
    NamedAttrList props(properties);
    props.set("operandSegmentSizes", builder.getDenseI32ArrayAttr(sizes));
    state.propertiesAttr = props.getDictionary(op->getContext());
    state.addAttributes(op->getDiscardableAttrDictionary().getValue());
    Operation *part = builder.create(state);
    for (int64_t g = 0; g < groupsOut; ++g)
      for (auto [j, i] : llvm::enumerate(indices))
        op->getResult(g * n + i).replaceAllUsesWith(part->getResult(g * m + j));
    parts.push_back(part);
  }
  op->erase();
  return parts;
}

LogicalResult StageAssigner::assignRest() {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    if (!forward.contains(&op) && !everywhere.contains(&op))
      ops.push_back(&op);
  for (Operation *original : ops) {
    SmallVector<Operation *> parts = {original};
    if (auto bucket = dyn_cast<AllReduceOp>(original))
      parts = splitBucket(bucket);
    else if (isa<MomentumOp, AdamOp, AdagradOp>(original))
      parts = splitOptimizer(original);
    for (Operation *op : parts) {
      // Ops that read a parameter or optimizer state run where it lives;
      // of a tied parameter only its update does (its gradient's parts are
      // computed where its readers are). An update of ZeRO's slice of a
      // parameter is the parameter's too, not that of the least of its
      // other operands (a clipping coefficient from another stage).
      bool update = isa<SgdOp, AdamwOp, MomentumOp, AdamOp, AdagradOp>(op);
      std::optional<int64_t> pinned;
      for (OpOperand &use : op->getOpOperands())
        if (BlockArgument arg = update ? sliceRoot(use.get())
                                       : dyn_cast<BlockArgument>(use.get());
            arg && isParamOrState(arg) && (update || !tiedUpTo.count(arg)) &&
            !(update && isSharedByUpdates(use)))
          if (auto it = home.find(arg); it != home.end()) {
            if (pinned && *pinned != it->second)
              return op->emitOpError("reads parameters of pipeline stages ")
                     << *pinned << " and " << it->second
                     << "; such an op cannot be placed in one stage";
            pinned = it->second;
          }
      std::optional<int64_t> at = pinned;
      if (!at)
        for (Value operand : op->getOperands())
          if (std::optional<int64_t> held = heldUpTo(operand))
            at = at ? std::min(*at, *held) : *held;
      int64_t s = at.value_or(numStages - 1);
      setStage(op, s);
      for (Value operand : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand);
            arg && isParamOrState(arg))
          home.try_emplace(arg, s);
    }
  }
  return success();
}

void StageAssigner::pullTowardUsers() {
  auto at = [&](Operation *op) -> std::optional<int64_t> {
    auto it = stage.find(op);
    return it == stage.end() ? std::nullopt : std::optional(it->second);
  };
  auto produced = [&](Value value) { return producedAt(value); };
  auto move = [&](Operation *op, int64_t s) { setStage(op, s); };
  mlir::cleave::pullTowardUsers(
      body, {at, produced, move},
      [&](Operation *op) { return forward.contains(op); },
      [&](BlockArgument arg) { return isParamOrState(arg); });
}

void StageAssigner::readOriginalsAcrossChunks() {
  // Originals by (number, micro-batch): micro-batch copies share numbers.
  auto key = [](Operation *op, StringRef name) {
    auto number = op->getAttrOfType<IntegerAttr>(name);
    auto copyOf = op->getAttrOfType<DenseI64ArrayAttr>(
        CleaveDialect::kMicroBatchAttrName);
    return std::make_pair(number ? number.getInt() : -1,
                          copyOf ? copyOf[0] : int64_t(-1));
  };
  std::map<std::pair<int64_t, int64_t>, Operation *> originals;
  for (Operation &op : body.without_terminator())
    if (op.hasAttr(CleaveDialect::kRecomputeSourceAttrName))
      originals[key(&op, CleaveDialect::kRecomputeSourceAttrName)] = &op;
  for (Operation &op : body.without_terminator()) {
    if (!stage.count(&op))
      continue;
    for (OpOperand &operand : op.getOpOperands()) {
      Operation *def = operand.get().getDefiningOp();
      if (!def || !def->hasAttr(CleaveDialect::kRecomputeAttrName) ||
          !stage.count(def) || stage.lookup(def) >= stage.lookup(&op))
        continue;
      auto it = originals.find(key(def, CleaveDialect::kRecomputeAttrName));
      if (it == originals.end())
        continue;
      operand.set(it->second->getResult(
          cast<OpResult>(operand.get()).getResultNumber()));
    }
  }
  // Copies no chunk reads any more are not recomputed at all.
  SmallVector<Operation *> copies;
  for (Operation &op : body.without_terminator())
    if (op.hasAttr(CleaveDialect::kRecomputeAttrName))
      copies.push_back(&op);
  for (Operation *op : llvm::reverse(copies))
    if (op->use_empty() && (isPure(op) || isa<DropoutOp>(op))) {
      stage.erase(op);
      op->erase();
    }
}

void StageAssigner::insertTransfers() {
  // One transfer per value and destination stage, right after the value
  // is computed, so that every stage meets its transfers in program order.
  // Chunks on one stage share their values.
  llvm::DenseMap<std::pair<Value, int64_t>, Value> transfers;
  auto fetch = [&](Value value, int64_t toChunk) -> Value {
    std::optional<int64_t> fromChunk = producedAt(value);
    if (!fromChunk || rankOf(*fromChunk) == rankOf(toChunk))
      return value;
    int64_t from = rankOf(*fromChunk), to = rankOf(toChunk);
    Value &transfer = transfers[{value, to}];
    if (!transfer) {
      OpBuilder builder(value.getContext());
      builder.setInsertionPointAfterValue(value);
      transfer =
          SendRecvOp::create(builder, value.getLoc(), value, axis, from, to);
    }
    return transfer;
  };
  SmallVector<Operation *> staged;
  for (Operation &op : body.without_terminator())
    if (stage.count(&op))
      staged.push_back(&op);
  for (Operation *op : staged)
    for (OpOperand &operand : op->getOpOperands())
      operand.set(fetch(operand.get(), stage.lookup(op)));
}

void StageAssigner::placeSharedOps() {
  SmallVector<Operation *> shared;
  for (Operation &op : body.without_terminator())
    if (everywhere.contains(&op) && !isa<ConstantOp>(op))
      shared.push_back(&op);
  // Users first: a shared op's users are then staged ops or copies.
  for (Operation *op : llvm::reverse(shared)) {
    llvm::SmallSetVector<int64_t, 4> stages;
    bool everyStage = false;
    for (Operation *user : op->getUsers()) {
      auto attr =
          user->getAttrOfType<IntegerAttr>(CleaveDialect::kStageAttrName);
      if (!attr) {
        everyStage = true;
        break;
      }
      stages.insert(attr.getInt());
    }
    if (everyStage || stages.empty() ||
        static_cast<int64_t>(stages.size()) == numRanks)
      continue;
    for (int64_t s : stages.getArrayRef().drop_front()) {
      OpBuilder builder(op->getContext());
      builder.setInsertionPointAfter(op);
      Operation *copy = builder.clone(*op);
      // A copy is shared as its original is: computed from constants and
      // data, in no micro-batch's pass (a dropout's offset, say).
      everywhere.insert(copy);
      setStage(copy, s);
      for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults()))
        from.replaceUsesWithIf(to, [&](OpOperand &use) {
          auto attr = use.getOwner()->getAttrOfType<IntegerAttr>(
              CleaveDialect::kStageAttrName);
          return attr && attr.getInt() == s;
        });
    }
    setStage(op, stages.front());
  }
}

LogicalResult StageAssigner::run() {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // Tensors may be split over the other axes (tensor parallel, ZeRO), never
  // over the stages'.
  for (BlockArgument arg : body.getArguments()) {
    auto sharding = func.getArgAttrOfType<ShardingAttr>(
        arg.getArgNumber(), CleaveDialect::kShardingAttrName);
    if (!sharding || sharding.isFullyReplicated())
      continue;
    for (int64_t d = 0; d < static_cast<int64_t>(sharding.getDims().size());
         ++d)
      if (llvm::is_contained(sharding.getDimAxes(d), axis))
        return func.emitError()
               << "'" << argName(arg) << "' is split over the pipeline axis '"
               << axis.getValue()
               << "'; sharding hints may use the other mesh axes only";
  }
  findEverywhereOps();
  if (schedule.schedule != PipelineSchedule::GPipe)
    separateDataReductions();
  if (failed(assignForward()) || failed(assignParameterHomes()) ||
      failed(assignRest()))
    return failure();
  pullTowardUsers();
  readOriginalsAcrossChunks();
  insertTransfers();
  if (report)
    reportChunks();
  writeStages();
  placeSharedOps();
  if (schedule.schedule != PipelineSchedule::GPipe &&
      failed(orderForSchedule(body, scheduleInfo(), schedule, func.getLoc())))
    return failure();
  // Where the runtime finds each tensor: parameters and state in their
  // stage (the first one when nothing reads them), results where computed.
  Builder builder(func.getContext());
  FunctionAttributes argAttrs(func, FunctionAttributes::Arguments);
  for (BlockArgument arg : body.getArguments())
    if (isParamOrState(arg))
      argAttrs.set(arg.getArgNumber(), CleaveDialect::kStageAttrName,
                   builder.getI64IntegerAttr(rankOf(home.lookup(arg))));
  FunctionAttributes resultAttrs(func, FunctionAttributes::Results);
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (std::optional<int64_t> at = producedAt(value))
      resultAttrs.set(i, CleaveDialect::kStageAttrName,
                      builder.getI64IntegerAttr(rankOf(*at)));
  return success();
}

llvm::DenseMap<Operation *, ScheduledOp> StageAssigner::scheduleInfo() const {
  llvm::DenseMap<Operation *, ScheduledOp> info;
  for (auto [op, chunk] : stage) {
    ScheduledOp &entry = info[op];
    entry.chunk = chunk;
    entry.forward = forward.contains(op);
    entry.cost = costOf(op);
    // Ops of data inputs only (a loss's sample count) run whenever they
    // are needed, outside the units.
    if (auto copyOf = op->getAttrOfType<DenseI64ArrayAttr>(
            CleaveDialect::kMicroBatchAttrName);
        copyOf && !everywhere.contains(op))
      entry.microbatch = copyOf[0];
  }
  return info;
}

struct PipelineStagesPass
    : public mlir::cleave::impl::PipelineStagesPassBase<PipelineStagesPass> {
  using PipelineStagesPassBase::PipelineStagesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<int64_t> stages =
        getModuleMeshAxisSize(module, axis, "pipeline stages");
    if (failed(stages))
      return signalPassFailure();
    int64_t numStages = *stages;
    std::optional<PipelineSchedule> kind = parsePipelineSchedule(schedule);
    if (!kind) {
      module.emitError("unknown pipeline schedule '")
          << schedule << "'; use gpipe, 1f1b or interleaved";
      return signalPassFailure();
    }
    if (virtualStages < 1 ||
        (virtualStages > 1) != (*kind == PipelineSchedule::Interleaved)) {
      module.emitError("virtual-stages = ")
          << static_cast<int64_t>(virtualStages)
          << ": the interleaved schedule needs at least 2 chunks per stage, "
             "the others exactly 1";
      return signalPassFailure();
    }
    auto axisAttr = StringAttr::get(module.getContext(), axis);
    module->setAttr(CleaveDialect::kPipelineAttrName, axisAttr);
    bool found = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!lossOf(func))
        continue;
      found = true;
      ScheduleShape shape;
      shape.schedule = *kind;
      shape.stages = numStages;
      shape.virtualStages = virtualStages;
      func.walk([&](Operation *op) {
        if (auto copyOf = op->getAttrOfType<DenseI64ArrayAttr>(
                CleaveDialect::kMicroBatchAttrName))
          shape.microbatches = std::max(shape.microbatches, copyOf[0] + 1);
      });
      if (*kind == PipelineSchedule::Interleaved &&
          shape.microbatches % numStages != 0) {
        func.emitError("the interleaved schedule runs micro-batches in "
                       "groups of the stage count: ")
            << shape.microbatches << " micro-batches do not divide into "
            << "groups of " << numStages;
        return signalPassFailure();
      }
      if (failed(StageAssigner(func, axisAttr, numStages, shape, cuts,
                               machineBalance, linkBalance, cutMicrobatches,
                               report)
                     .run()))
        return signalPassFailure();
    }
    if (!found) {
      module.emitError("pipeline stages need a training step (a function "
                       "with a 'cleave.loss' result)");
      return signalPassFailure();
    }
  }
};

} // namespace
