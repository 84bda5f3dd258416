//===- PropagateSharding.cpp - shardings for every value ------------------===//
//
// Priority-ordered fixed point over the ops' sharding rules. See Passes.td
// for the contract.
//
//===----------------------------------------------------------------------===//

#include "passes/FunctionAttributes.h"
#include "passes/Passes.h"
#include "passes/ShardingRules.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

#include <limits>
#include <numeric>

namespace mlir::cleave {
#define GEN_PASS_DEF_PROPAGATESHARDINGPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

constexpr StringLiteral kPriorityAttrName = "cleave.priority";

/// The axes one dimension is split over, and how strongly that is wanted
/// (lower is stronger; hints give it, propagation passes it on).
struct DimAssignment {
  AxisList axes;
  int64_t priority;
};
using ValueState = SmallVector<std::optional<DimAssignment>>;

/// Values whose dimensions share factors: an op's operands and results, or
/// an updated tensor and its argument.
struct Tie {
  SmallVector<Value> values;
  SmallVector<SmallVector<int64_t>> dimFactors;
  SmallVector<int64_t> factorSizes;
  /// How many of `values` are operands (the rest are results).
  size_t numOperands = 0;
};

Tie tieFromRule(Operation *op, const OpShardingRule &rule) {
  Tie tie;
  llvm::append_range(tie.values, op->getOperands());
  llvm::append_range(tie.values, op->getResults());
  llvm::append_range(tie.dimFactors, rule.operandFactors);
  llvm::append_range(tie.dimFactors, rule.resultFactors);
  tie.factorSizes = rule.factorSizes;
  tie.numOperands = op->getNumOperands();
  return tie;
}

/// A description of a value for messages: the argument's tensor name or
/// the ONNX node that computes it.
std::string describe(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    for (StringRef attr : {CleaveDialect::kParamAttrName,
                           CleaveDialect::kInputAttrName,
                           CleaveDialect::kStateAttrName})
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        attr))
        return "'" + name.str() + "'";
    return "argument " + std::to_string(arg.getArgNumber());
  }
  Operation *op = value.getDefiningOp();
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return "the result of '" + name.getName().str() + "'";
  return "the result of " + op->getName().getStringRef().str();
}

class Propagator {
public:
  Propagator(MeshAttr mesh) : mesh(mesh) {}

  LogicalResult seed(func::FuncOp func);
  void run(func::FuncOp func);
  /// Splits `gemm(a, b, c)` whose contraction is split into a gemm and
  /// an add, so that `c` is added once to the reduced sum; the same for a
  /// convolution's bias.
  void splitBiasOffContractions(func::FuncOp func);
  /// Whether a factor of `op` that no result has (a contraction) is split.
  bool contractionIsSplit(Operation *op);
  void materialize(func::FuncOp func, bool report);

private:
  bool propagate(const Tie &tie);
  ShardingAttr shardingOf(Value value);
  ValueState &stateOf(Value value) {
    auto [it, inserted] = state.try_emplace(value);
    if (inserted)
      it->second.resize(cast<ShapedType>(value.getType()).getRank());
    return it->second;
  }

  MeshAttr mesh;
  llvm::DenseMap<Value, ValueState> state;
  /// Axes a value must stay whole over (a sharding's `replicated`).
  llvm::DenseMap<Value, AxisList> forbidden;
  SmallVector<Tie> updateTies;
};

LogicalResult Propagator::seed(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    auto sharding = func.getArgAttrOfType<ShardingAttr>(
        arg.getArgNumber(), CleaveDialect::kShardingAttrName);
    if (!sharding)
      continue;
    if (std::optional<std::string> problem =
            sharding.checkAgainst(mesh, cast<ShapedType>(arg.getType())))
      return func.emitError("the sharding of ")
             << describe(arg) << " does not fit: " << *problem;
    if (!sharding.getPartial().empty())
      return func.emitError("the sharding of ")
             << describe(arg)
             << " has 'partial': arguments are whole values, not sums";
    if (!sharding.getReplicated().empty())
      forbidden[arg] = AxisList(sharding.getReplicatedAxes());
    auto priority = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                       kPriorityAttrName);
    ValueState &dims = stateOf(arg);
    for (int64_t dim = 0; dim < static_cast<int64_t>(dims.size()); ++dim)
      dims[dim] = DimAssignment{AxisList(sharding.getDimAxes(dim)),
                                priority ? priority.getInt() : 0};
  }
  // Explicit reshards fix their result's sharding.
  for (auto reshard : func.getOps<ReshardOp>()) {
    ValueState &dims = stateOf(reshard);
    for (int64_t dim = 0; dim < static_cast<int64_t>(dims.size()); ++dim)
      dims[dim] = DimAssignment{AxisList(reshard.getSharding().getDimAxes(dim)),
                                std::numeric_limits<int64_t>::min()};
  }
  // An update result and the tensor it overwrites share every dimension.
  llvm::StringMap<BlockArgument> byName;
  for (BlockArgument arg : func.getArguments())
    for (StringRef attr :
         {CleaveDialect::kParamAttrName, CleaveDialect::kStateAttrName})
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        attr))
        byName[name.getValue()] = arg;
  Operation *ret = func.getBody().front().getTerminator();
  for (auto [index, value] : llvm::enumerate(ret->getOperands())) {
    auto name = func.getResultAttrOfType<StringAttr>(
        index, CleaveDialect::kUpdateAttrName);
    if (!name || !byName.count(name.getValue()))
      continue;
    Tie tie;
    tie.values = {value, byName[name.getValue()]};
    ArrayRef<int64_t> shape = cast<ShapedType>(value.getType()).getShape();
    tie.factorSizes.assign(shape.begin(), shape.end());
    SmallVector<int64_t> dims(shape.size());
    std::iota(dims.begin(), dims.end(), 0);
    tie.dimFactors = {dims, dims};
    updateTies.push_back(std::move(tie));
  }
  return success();
}

bool Propagator::propagate(const Tie &tie) {
  // The strongest proposal per factor; replicated dims propose nothing.
  SmallVector<std::optional<DimAssignment>> best(tie.factorSizes.size());
  for (auto [value, factors] : llvm::zip(tie.values, tie.dimFactors)) {
    ValueState &dims = stateOf(value);
    for (auto [dim, f] : llvm::enumerate(factors))
      if (f >= 0 && dims[dim] && !dims[dim]->axes.empty() &&
          (!best[f] || dims[dim]->priority < best[f]->priority))
        best[f] = dims[dim];
  }
  // Strongest factors claim their axes first; an axis splits one factor.
  SmallVector<int64_t> order;
  for (int64_t f = 0; f < static_cast<int64_t>(best.size()); ++f)
    if (best[f])
      order.push_back(f);
  // Contracting factors (on no result) first, as getFactorAxes does.
  SmallVector<bool> onResult(best.size(), tie.numOperands == 0);
  for (size_t v = tie.numOperands; v < tie.values.size(); ++v)
    for (int64_t f : tie.dimFactors[v])
      if (f >= 0)
        onResult[f] = true;
  llvm::stable_sort(order, [&](int64_t a, int64_t b) {
    if (onResult[a] != onResult[b])
      return !onResult[a];
    return best[a]->priority < best[b]->priority;
  });
  llvm::SmallDenseSet<StringAttr> claimed;
  for (int64_t f : order) {
    bool free = llvm::none_of(best[f]->axes,
                              [&](StringAttr a) { return claimed.count(a); });
    if (!free || tie.factorSizes[f] % mesh.getGroupSize(best[f]->axes) != 0) {
      best[f].reset();
      continue;
    }
    claimed.insert(best[f]->axes.begin(), best[f]->axes.end());
  }
  bool changed = false;
  for (auto [value, factors] : llvm::zip(tie.values, tie.dimFactors)) {
    ValueState &dims = stateOf(value);
    for (auto [dim, f] : llvm::enumerate(factors)) {
      if (f < 0 || !best[f])
        continue;
      std::optional<DimAssignment> &current = dims[dim];
      if (current && current->priority <= best[f]->priority)
        continue;
      // A value cannot be split twice over one axis, nor over an axis it
      // must stay whole over.
      bool clash = llvm::any_of(best[f]->axes, [&](StringAttr axis) {
        return llvm::is_contained(forbidden.lookup(value), axis);
      });
      for (auto [other, assignment] : llvm::enumerate(dims))
        if (other != dim && assignment)
          for (StringAttr axis : best[f]->axes)
            clash |= llvm::is_contained(assignment->axes, axis);
      if (clash)
        continue;
      current = best[f];
      changed = true;
    }
  }
  return changed;
}

void Propagator::run(func::FuncOp func) {
  SmallVector<Tie> ties;
  for (Operation &op : func.getBody().front().without_terminator())
    if (std::optional<OpShardingRule> rule = getShardingRule(&op))
      ties.push_back(tieFromRule(&op, *rule));
  llvm::append_range(ties, updateTies);
  // Each round can only strengthen assignments, so this terminates; the
  // bound guards against a rule bug rather than a real need.
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    for (const Tie &tie : ties)
      changed |= propagate(tie);
    for (const Tie &tie : llvm::reverse(ties))
      changed |= propagate(tie);
    if (!changed)
      break;
  }
}

void Propagator::splitBiasOffContractions(func::FuncOp func) {
  for (auto gemm : llvm::make_early_inc_range(func.getOps<GemmOp>())) {
    if (!gemm.getC())
      continue;
    if (!contractionIsSplit(gemm))
      continue;
    // Every rank would add C to its partial sum: add it once, after the
    // sums are reduced.
    OpBuilder b(gemm);
    Location loc = gemm.getLoc();
    Value c = gemm.getC();
    auto cType = cast<RankedTensorType>(c.getType());
    if (gemm.getBeta().convertToFloat() != 1.0f) {
      auto scalar = RankedTensorType::get({}, cType.getElementType());
      Value beta = ConstantOp::create(
          b, loc, DenseElementsAttr::get(scalar, gemm.getBetaAttr()));
      c = MulOp::create(b, loc, cType, c, beta);
      // A copy: inserting into `state` may move what stateOf refers to.
      ValueState cState = stateOf(gemm.getC());
      state[c] = std::move(cState);
    }
    auto product = GemmOp::create(
        b, loc, gemm.getType(), gemm.getA(), gemm.getB(), Value(),
        gemm.getAlphaAttr(), b.getF32FloatAttr(0.0f), gemm.getTransAAttr(),
        gemm.getTransBAttr());
    auto sum = AddOp::create(b, loc, gemm.getType(), product, c);
    ValueState resultState = stateOf(gemm.getResult());
    state[product] = resultState;
    state[sum] = std::move(resultState);
    gemm.replaceAllUsesWith(sum.getResult());
    state.erase(gemm.getResult());
    gemm.erase();
  }
  // The same for a convolution's bias when its input channels (or kernel
  // window) are split: the bias, as [M, 1, ..., 1], is added after the
  // reduction.
  for (auto conv : llvm::make_early_inc_range(func.getOps<ConvOp>())) {
    if (!conv.getBias() || !contractionIsSplit(conv))
      continue;
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    auto resultType = cast<RankedTensorType>(conv.getType());
    auto product =
        ConvOp::create(b, loc, resultType, conv.getInput(), conv.getWeight(),
                       Value(), conv.getStridesAttr(), conv.getPadsAttr(),
                       conv.getDilationsAttr(), conv.getGroupAttr());
    SmallVector<int64_t> biasShape(resultType.getRank() - 1, 1);
    biasShape[0] = resultType.getDimSize(1);
    Value bias = ReshapeOp::create(
        b, loc, RankedTensorType::get(biasShape, resultType.getElementType()),
        conv.getBias());
    ValueState biasState = stateOf(conv.getBias());
    biasState.resize(biasShape.size());
    state[bias] = biasState;
    auto sum = AddOp::create(b, loc, resultType, product, bias);
    ValueState resultState = stateOf(conv.getResult());
    state[product] = resultState;
    state[sum] = std::move(resultState);
    conv.replaceAllUsesWith(sum.getResult());
    state.erase(conv.getResult());
    conv.erase();
  }
}

bool Propagator::contractionIsSplit(Operation *op) {
  std::optional<OpShardingRule> rule = getShardingRule(op);
  SmallVector<ShardingAttr> operands, results;
  for (Value v : op->getOperands())
    operands.push_back(shardingOf(v));
  for (Value v : op->getResults())
    results.push_back(shardingOf(v));
  SmallVector<AxisList> factorAxes = getFactorAxes(*rule, operands, results);
  // Contracting factors are those on no result.
  for (auto [f, axes] : llvm::enumerate(factorAxes))
    if (!axes.empty() &&
        !llvm::is_contained(rule->resultFactors[0], static_cast<int64_t>(f)))
      return true;
  return false;
}

ShardingAttr Propagator::shardingOf(Value value) {
  SmallVector<SmallVector<StringAttr>> dims;
  for (const std::optional<DimAssignment> &dim : stateOf(value))
    dims.push_back(dim ? SmallVector<StringAttr>(dim->axes)
                       : SmallVector<StringAttr>());
  return ShardingAttr::get(value.getContext(), dims, {}, {});
}

void Propagator::materialize(func::FuncOp func, bool report) {
  MLIRContext *context = func.getContext();
  std::optional<FunctionAttributes> argAttrs(std::in_place, func,
                                             FunctionAttributes::Arguments);
  for (BlockArgument arg : func.getArguments()) {
    ShardingAttr sharding = shardingOf(arg);
    if (auto it = forbidden.find(arg); it != forbidden.end())
      sharding = ShardingAttr::get(context, sharding.getDims(),
                                   ArrayAttr::get(context, SmallVector<Attribute>(
                                       it->second.begin(), it->second.end())),
                                   sharding.getPartial());
    argAttrs->set(arg.getArgNumber(), CleaveDialect::kShardingAttrName,
                  sharding);
    argAttrs->remove(arg.getArgNumber(), kPriorityAttrName);
  }
  argAttrs.reset();
  // What each value really is: an op produces the sharding its rule
  // gives (a dimension its rule maps to no factor comes out whole), which
  // may differ from what propagation wished for the value.
  llvm::DenseMap<Value, ShardingAttr> produced;
  for (BlockArgument arg : func.getArguments())
    produced[arg] = shardingOf(arg);
  // Feeds `op`'s operand through a reshard when its sharding differs.
  auto reshardOperand = [&](Operation *op, unsigned index,
                            ShardingAttr required) {
    Value operand = op->getOperand(index);
    ShardingAttr actual = produced.lookup(operand);
    if (actual.getDims() == required.getDims())
      return;
    OpBuilder b(op);
    auto reshard = ReshardOp::create(b, op->getLoc(), operand, required);
    reshard->setAttr(CleaveDialect::kShardingAttrName,
                     ArrayAttr::get(context, {required}));
    produced[reshard] = required;
    op->setOperand(index, reshard);
    if (report)
      op->emitRemark("resharding ")
          << describe(operand) << " from " << actual << " to " << required;
  };
  Operation *terminator = func.getBody().front().getTerminator();
  for (Operation &op :
       llvm::make_early_inc_range(func.getBody().front().without_terminator())) {
    SmallVector<Attribute> resultAttrs;
    if (auto reshard = dyn_cast<ReshardOp>(op)) {
      produced[reshard] = reshard.getSharding();
      op.setAttr(CleaveDialect::kShardingAttrName,
                 ArrayAttr::get(context, {reshard.getSharding()}));
      continue;
    }
    std::optional<OpShardingRule> rule = getShardingRule(&op);
    SmallVector<ShardingAttr> operands, wished;
    for (Value v : op.getOperands())
      operands.push_back(produced.lookup(v));
    for (Value v : op.getResults())
      wished.push_back(shardingOf(v));
    SmallVector<AxisList> factorAxes;
    if (rule)
      factorAxes = getFactorAxes(*rule, operands, wished);
    for (auto [index, result] : llvm::enumerate(op.getResults())) {
      SmallVector<SmallVector<StringAttr>> dims;
      int64_t rank = cast<ShapedType>(result.getType()).getRank();
      for (int64_t dim = 0; dim < rank; ++dim) {
        int64_t f = rule ? rule->resultFactors[index][dim] : -1;
        dims.push_back(f >= 0 ? SmallVector<StringAttr>(factorAxes[f])
                              : SmallVector<StringAttr>());
      }
      AxisList partial;
      if (rule)
        partial = getResultPartialAxes(*rule, index, factorAxes);
      produced[result] = ShardingAttr::get(context, dims, {}, partial);
      resultAttrs.push_back(produced[result]);
    }
    op.setAttr(CleaveDialect::kShardingAttrName,
               ArrayAttr::get(context, resultAttrs));
    for (unsigned i = 0; i < op.getNumOperands(); ++i)
      reshardOperand(&op, i,
                     rule ? getRequiredOperandSharding(context, *rule, i,
                                                       factorAxes)
                          : ShardingAttr::getReplicated(
                                context, operands[i].getDims().size()));
  }
  // Updates leave with their tensor's sharding, everything else whole.
  llvm::DenseMap<Value, Value> updateTarget;
  for (const Tie &tie : updateTies)
    updateTarget[tie.values[0]] = tie.values[1];
  FunctionAttributes resultAttrs(func, FunctionAttributes::Results);
  for (unsigned i = 0; i < terminator->getNumOperands(); ++i) {
    Value value = terminator->getOperand(i);
    auto update = dyn_cast_or_null<StringAttr>(
        resultAttrs.get(i, CleaveDialect::kUpdateAttrName));
    ShardingAttr required = ShardingAttr::getReplicated(
        context, cast<ShapedType>(value.getType()).getRank());
    if (update && updateTarget.count(value))
      required = shardingOf(updateTarget[value]);
    reshardOperand(terminator, i, required);
    resultAttrs.set(i, CleaveDialect::kShardingAttrName, required);
  }
}

struct PropagateShardingPass
    : mlir::cleave::impl::PropagateShardingPassBase<PropagateShardingPass> {
  using PropagateShardingPassBase::PropagateShardingPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshAttr mesh = getModuleMesh(module);
    if (!mesh) {
      module.emitError("sharding propagation needs a 'cleave.mesh' module "
                       "attribute");
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>()) {
      Propagator propagator(mesh);
      if (failed(propagator.seed(func)))
        return signalPassFailure();
      propagator.run(func);
      propagator.splitBiasOffContractions(func);
      propagator.materialize(func, report);
    }
  }
};

} // namespace
