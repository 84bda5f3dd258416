//===- RepeatedLayers.cpp - a model's run of identical layers -------------===//

#include "planner/RepeatedLayers.h"

#include "dialects/cleave/CleaveDialect.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SetVector.h"

namespace cleave::planner {

using namespace mlir;

namespace {

/// What an op computes, not which values it reads: its kind, attributes,
/// types, and whether each operand is an argument.
size_t fingerprint(Operation *op) {
  // Ops with regions are never taken for copies of each other (their
  // bodies are not compared).
  if (op->getNumRegions())
    return llvm::hash_value(op);
  llvm::hash_code hash = llvm::hash_combine(
      op->getName().getAsOpaquePointer(),
      op->getAttrDictionary().getAsOpaquePointer(), op->getNumOperands());
  for (Type type : op->getResultTypes())
    hash = llvm::hash_combine(hash, type.getAsOpaquePointer());
  for (Value operand : op->getOperands())
    hash = llvm::hash_combine(hash, operand.getType().getAsOpaquePointer(),
                              isa<BlockArgument>(operand));
  return hash;
}

/// How an operand of a layer's op relates to the layer.
struct Reference {
  enum Kind {
    Own,
    Previous,
    Shared,
    Parameter,
    Constant,
    Invalid
  } kind = Invalid;
  /// Own and Previous: the defining op's offset in its layer and result;
  /// Constant: the constant's fingerprint.
  int64_t offset = 0;
  unsigned result = 0;
  /// Shared: the value itself.
  Value value;
  bool operator==(const Reference &other) const {
    return kind == other.kind && offset == other.offset &&
           result == other.result && (kind != Shared || value == other.value);
  }
};

/// An op of no operands (a constant): not part of a layer's sequence, as
/// an importer may create it once for all layers or once per layer.
bool isConstant(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0;
}

/// The ops of a function's body but constants, and their indices.
struct Body {
  explicit Body(func::FuncOp func) {
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (isConstant(&op))
        continue;
      index[&op] = static_cast<int64_t>(ops.size());
      ops.push_back(&op);
    }
  }
  std::vector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> index;
};

/// A candidate run: `count` copies of `period` ops from `start`.
class Run {
public:
  Run(const Body &body, int64_t start, int64_t period, int64_t count)
      : body(body), start(start), period(period), count(count) {}

  /// How `value`, an operand of an op of layer `layer`, relates to it.
  Reference classify(Value value, int64_t layer) const {
    Reference ref;
    int64_t first = start + layer * period;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      bool own = !arg.use_empty();
      for (Operation *user : arg.getUsers()) {
        auto it = body.index.find(user);
        own &= it != body.index.end() && it->second >= first &&
               it->second < first + period;
      }
      ref.kind = own ? Reference::Parameter : Reference::Shared;
      ref.value = value;
      return ref;
    }
    auto result = cast<OpResult>(value);
    if (isConstant(result.getOwner())) {
      ref.kind = Reference::Constant;
      ref.offset = static_cast<int64_t>(fingerprint(result.getOwner()));
      return ref;
    }
    auto it = body.index.find(result.getOwner());
    if (it == body.index.end())
      return ref;
    int64_t relative = it->second - first;
    ref.result = result.getResultNumber();
    if (relative >= 0 && relative < period) {
      ref.kind = Reference::Own;
      ref.offset = relative;
    } else if (relative >= -period && relative < 0) {
      ref.kind = Reference::Previous;
      ref.offset = relative + period;
    } else if (relative < -period) {
      ref.kind = Reference::Shared;
      ref.value = value;
    }
    return ref;
  }

  /// Whether every layer after the first reads what the second does, and
  /// the ops after the run read only the last layer's values.
  bool holds() const {
    for (int64_t layer = 2; layer < count; ++layer)
      for (int64_t offset = 0; offset < period; ++offset) {
        Operation *op = body.ops[start + layer * period + offset];
        Operation *second = body.ops[start + period + offset];
        for (unsigned i = 0; i < op->getNumOperands(); ++i) {
          Reference ref = classify(op->getOperand(i), layer);
          if (ref.kind == Reference::Invalid ||
              !(ref == classify(second->getOperand(i), 1)))
            return false;
        }
      }
    for (int64_t offset = 0; offset < period; ++offset)
      for (Value operand : body.ops[start + period + offset]->getOperands())
        if (classify(operand, 1).kind == Reference::Invalid)
          return false;
    int64_t end = start + count * period, last = end - period;
    for (int64_t i = start; i < last; ++i)
      for (Operation *user : body.ops[i]->getUsers()) {
        auto it = body.index.find(user);
        if (it == body.index.end() || it->second >= end)
          return false;
      }
    return true;
  }

  /// The values the second layer reads from the first.
  int64_t carried() const {
    llvm::SetVector<std::pair<int64_t, unsigned>> crossing;
    for (int64_t offset = 0; offset < period; ++offset)
      for (Value operand : body.ops[start + period + offset]->getOperands()) {
        Reference ref = classify(operand, 1);
        if (ref.kind == Reference::Previous)
          crossing.insert({ref.offset, ref.result});
      }
    return static_cast<int64_t>(crossing.size());
  }

  /// The location name of layer `layer`'s first op that reads a value
  /// computed before it (not a constant or a weight's transpose).
  std::string startName(int64_t layer) const {
    for (int64_t offset = 0; offset < period; ++offset) {
      Operation *op = body.ops[start + layer * period + offset];
      bool readsActivation = llvm::any_of(op->getOperands(), [](Value v) {
        return !isa<BlockArgument>(v) && !isConstant(v.getDefiningOp());
      });
      if (!readsActivation)
        continue;
      if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
        return loc.getName().str();
      return "";
    }
    return "";
  }

  const Body &body;
  int64_t start, period, count;
};

} // namespace

std::optional<RepeatedLayers> findRepeatedLayers(func::FuncOp func,
                                                 int64_t minimum) {
  if (func.getBody().empty())
    return std::nullopt;
  Body body(func);
  int64_t n = static_cast<int64_t>(body.ops.size());
  std::vector<size_t> prints(n);
  for (int64_t i = 0; i < n; ++i)
    prints[i] = fingerprint(body.ops[i]);

  // The period covering the most ops with back-to-back copies (the
  // smallest such: two layers are not one).
  int64_t bestStart = 0, bestPeriod = 0, bestEnd = 0, bestCover = 0;
  for (int64_t period = 1; period * minimum <= n; ++period)
    for (int64_t i = 0; i + period < n;) {
      if (prints[i] != prints[i + period]) {
        ++i;
        continue;
      }
      int64_t j = i;
      while (j + period < n && prints[j] == prints[j + period])
        ++j;
      int64_t end = j + period;
      int64_t cover = (end - i) / period * period;
      if ((end - i) / period >= minimum && cover > bestCover) {
        bestStart = i, bestPeriod = period, bestEnd = end, bestCover = cover;
      }
      i = j + 1;
    }
  if (!bestCover)
    return std::nullopt;

  // Of the boundaries between copies, the one fewest values cross (a
  // transformer's residual stream alone): there a pipeline may cut.
  std::optional<Run> chosen;
  int64_t fewest = 0;
  for (int64_t phase = 0; phase < bestPeriod; ++phase) {
    int64_t start = bestStart + phase;
    int64_t count = (bestEnd - start) / bestPeriod;
    if (count < minimum)
      break;
    Run run(body, start, bestPeriod, count);
    int64_t carried = run.carried();
    if (chosen && carried >= fewest)
      continue;
    if (!run.holds())
      continue;
    chosen.emplace(run);
    fewest = carried;
  }
  if (!chosen)
    return std::nullopt;
  RepeatedLayers layers;
  layers.start = chosen->start;
  layers.period = chosen->period;
  layers.count = chosen->count;
  for (int64_t layer = 0; layer < layers.count; ++layer)
    layers.startNames.push_back(chosen->startName(layer));
  return layers;
}

func::FuncOp mainGraph(ModuleOp module) {
  func::FuncOp main;
  size_t most = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.getBody().empty())
      continue;
    size_t ops = func.getBody().front().getOperations().size();
    if (!main || ops > most)
      main = func, most = ops;
  }
  return main;
}

void keepLayers(func::FuncOp func, const RepeatedLayers &layers, int64_t keep) {
  Body body(func);
  int64_t end = layers.start + layers.count * layers.period;
  int64_t last = end - layers.period;
  int64_t kept = layers.start + (keep - 1) * layers.period;
  // What the ops after the run read of the last layer, they read of the
  // last one kept.
  for (int64_t i = last; i < end; ++i) {
    Operation *op = body.ops[i];
    Operation *replacement = body.ops[kept + (i - last)];
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      op->getResult(r).replaceUsesWithIf(
          replacement->getResult(r), [&](OpOperand &use) {
            auto it = body.index.find(use.getOwner());
            return it == body.index.end() || it->second >= end;
          });
  }
  llvm::BitVector dropped(func.getNumArguments());
  for (int64_t i = end - 1; i >= layers.start + keep * layers.period; --i) {
    for (Value operand : body.ops[i]->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand))
        dropped.set(arg.getArgNumber());
    body.ops[i]->erase();
  }
  // Constants only the dropped layers read.
  for (Operation &op :
       llvm::make_early_inc_range(func.getBody().front().without_terminator()))
    if (isConstant(&op) && op.use_empty())
      op.erase();
  for (int arg : dropped.set_bits())
    if (!func.getArgument(arg).use_empty() ||
        !func.getArgAttr(arg, mlir::cleave::CleaveDialect::kParamAttrName))
      dropped.reset(arg);
  (void)func.eraseArguments(dropped);
}

llvm::Expected<std::pair<OwningOpRef<ModuleOp>, std::string>>
stepWithLayers(ModuleOp model, int64_t count, int64_t keep,
               mlir::cleave::TrainingOptions training) {
  OwningOpRef<ModuleOp> copy = model.clone();
  if (keep) {
    func::FuncOp main = mainGraph(*copy);
    std::optional<RepeatedLayers> found =
        main ? findRepeatedLayers(main) : std::nullopt;
    if (!found || found->count != count)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "the model's identical layers differ from those planned with");
    keepLayers(main, *found, keep);
  }
  training.distributed = true;
  llvm::Expected<func::FuncOp> step =
      mlir::cleave::buildTrainingStep(*copy, training);
  if (!step)
    return step.takeError();
  std::string name = step->getSymName().str();
  return std::make_pair(std::move(copy), name);
}

} // namespace cleave::planner
