//===- IntraOpIlp.cpp - tensor-parallel shardings from an ILP -------------===//
//
// The formulation is in IntraOpIlp.h. Here: the strategies of each op and
// tensor (from the sharding rules), the costs, the program, its answer.
//
//===----------------------------------------------------------------------===//

#include "planner/IntraOpIlp.h"
#include "planner/FusedUpdates.h"

#include "planner/IlpSolver.h"
#include "planner/OpCost.h"

#include "codegen/MemoryPlan.h"
#include "dialects/cleave/CleaveOps.h"
#include "passes/ShardingRules.h"
#include "runtime/CommVolume.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// How a tensor lies on the axis: whole, split along `dim`, or partial
/// sums (each rank holds a summand of the whole tensor).
struct Placement {
  int64_t dim = -1;
  bool partial = false;
  bool operator<(const Placement &other) const {
    return std::tie(dim, partial) < std::tie(other.dim, other.partial);
  }
  bool operator==(const Placement &other) const {
    return dim == other.dim && partial == other.partial;
  }
};

/// One way to run an op (or to hold a tensor) on the axis.
struct Choice {
  /// The rule's factor split over the axis (-1: whole).
  int64_t factor = -1;
  /// Per operand, the dimension it must arrive split along (-1: whole).
  SmallVector<int64_t> operandDims;
  /// Per result (for a tensor: the tensor itself), what it leaves as.
  SmallVector<Placement> results;
  double computeUs = 0;
  /// A parameter's gradient all-reduce over the data axis.
  double dataUs = 0;
};

/// A linear expression over the program's columns.
struct Linear {
  double constant = 0;
  SmallVector<IlpTerm> terms;
  bool isConstant() const { return terms.empty(); }
  void add(const Linear &other, double scale = 1) {
    constant += scale * other.constant;
    for (auto [column, coefficient] : other.terms)
      terms.push_back({column, scale * coefficient});
  }
};

/// An op or a tensor (block argument) with its choices.
struct Node {
  Operation *op = nullptr;
  BlockArgument arg;
  /// A parameter or a state tensor: gets a hint.
  bool hinted = false;
  /// Bytes held per rank when whole (parameter with its gradient, or
  /// state) for the memory row.
  double heldBytes = 0;
  std::vector<Choice> choices;
  /// Per choice: its 0/1 column, or the constant 1 when it is the only one.
  std::vector<Linear> chosen;
  /// The op's rule, when it has one.
  std::optional<OpShardingRule> rule;
  /// A follower (see followedOperand): the node whose choices it shares.
  std::optional<size_t> follows;
};


bool isOptimizerState(StringRef name) {
  return name.ends_with(".momentum_buffer") || name.ends_with(".exp_avg") ||
         name.ends_with(".exp_avg_sq");
}

/// Per value, which dimensions carry the batch: the data inputs' first
/// dimension and every dimension the ops' rules tie to one (a fixed
/// point over the rules). The batch belongs to the data axis.
class BatchDims {
public:
  explicit BatchDims(func::FuncOp step) {
    for (BlockArgument arg : step.getArguments())
      if (step.getArgAttr(arg.getArgNumber(), CleaveDialect::kInputAttrName))
        if (auto type = dyn_cast<ShapedType>(arg.getType());
            type && type.getRank() > 0)
          dimsOf(arg)[0] = true;
    std::vector<std::pair<Operation *, OpShardingRule>> rules;
    for (Operation &op : step.getBody().front().without_terminator())
      if (std::optional<OpShardingRule> rule = getShardingRule(&op))
        rules.push_back({&op, std::move(*rule)});
    for (int round = 0; round < 64; ++round) {
      bool changed = false;
      for (auto &[op, rule] : rules) {
        SmallVector<bool> batch(rule.factorSizes.size(), false);
        visit(op, rule, [&](Value value, int64_t dim, int64_t f) {
          batch[f] = batch[f] || dimsOf(value)[dim];
        });
        visit(op, rule, [&](Value value, int64_t dim, int64_t f) {
          if (batch[f] && !dimsOf(value)[dim])
            dimsOf(value)[dim] = changed = true;
        });
        factors[op] = batch;
      }
      if (!changed)
        break;
    }
  }

  bool hasBatch(Value value) { return llvm::is_contained(dimsOf(value), true); }
  bool isBatchFactor(Operation *op, int64_t f) {
    auto it = factors.find(op);
    return it != factors.end() && it->second[f];
  }

private:
  template <typename Fn>
  static void visit(Operation *op, const OpShardingRule &rule, Fn fn) {
    for (auto [index, dims] : llvm::enumerate(rule.operandFactors))
      for (auto [dim, f] : llvm::enumerate(dims))
        if (f >= 0)
          fn(op->getOperand(index), dim, f);
    for (auto [index, dims] : llvm::enumerate(rule.resultFactors))
      for (auto [dim, f] : llvm::enumerate(dims))
        if (f >= 0)
          fn(op->getResult(index), dim, f);
  }
  SmallVector<bool> &dimsOf(Value value) {
    auto [it, inserted] = dims.try_emplace(value);
    if (inserted)
      if (auto type = dyn_cast<ShapedType>(value.getType()))
        it->second.assign(type.getRank(), false);
    return it->second;
  }

  llvm::DenseMap<Value, SmallVector<bool>> dims;
  llvm::DenseMap<Operation *, SmallVector<bool>> factors;
};

/// The largest program solved a second time to say what a split would
/// cost when the answer splits nothing (DenseNet-121's 35k columns took
/// 4 s more; ResNet-18's 3k, 0.2 s).
constexpr int64_t kExplainedColumns = 10000;

/// Builds the program for one step and reads its answer.
class Formulation {
public:
  Formulation(func::FuncOp step, const Cluster &cluster,
              const IntraOpProblem &problem)
      : step(step), cluster(cluster), problem(problem), batch(step) {}

  llvm::Expected<IntraOpPlan> solve();

private:
  void addTensors();
  void addOps();
  void addColumns();
  void addReshards();
  void addPropagationRows();
  void addTargets(Value value,
                  std::map<Placement, std::vector<Linear>> &targets);
  /// What turning `value`, produced as `produced` says (placement: its
  /// 0/1 expression), into `target` costs when `need` (0/1) says a
  /// consumer wants it so.
  void addReshard(Value value, const std::map<Placement, Linear> &produced,
                  Placement target, const Linear &need);
  /// cost x (a AND b) for 0/1 expressions a, b.
  void addProduct(const Linear &a, const Linear &b, double cost);
  void addObjective(const Linear &expression, double cost);
  bool addMemoryRow();

  double bytesOf(Value value) {
    double bytes = static_cast<double>(tensorBytes(value.getType()));
    return batch.hasBatch(value) ? bytes / problem.dataDegree : bytes;
  }
  /// The op's time on one rank when the data axis divides its batch by
  /// `data` and the tensor axis splits its factor `factor` (-1: none): a
  /// matrix product at the efficiency of the shape it is left with, as the
  /// cost model times the partitioned step (Cluster::matrixEfficiency).
  double roofline(Operation *op, const std::optional<OpShardingRule> &rule,
                  double data, int64_t factor) {
    OpCost cost = costOf(op, convRuntimeOf(cluster));
    if (cost.free)
      return 0;
    double divisor = data * (factor >= 0 ? problem.axisSize : 1);
    double efficiency = cluster.computeEfficiency;
    if (cost.matrix) {
      double m = cost.m, n = cost.n, k = cost.k;
      if (m > 0 && rule && !rule->resultFactors.empty()) {
        // Which of m, n, k a factor is: the result's last dim is n, its
        // rows m (all of them where one matrix multiplies every row), a
        // factor on no result the contraction k; another dim of a
        // batched product only divides the count of products.
        const SmallVector<int64_t> &result = rule->resultFactors[0];
        int64_t rank = static_cast<int64_t>(result.size());
        auto matmul = dyn_cast<MatmulOp>(op);
        bool rowsMerged =
            matmul &&
            cast<ShapedType>(matmul.getRhs().getType()).getRank() <= 2;
        // A convolution's result is [samples or output channels, channels,
        // positions...] (OpCost's im2col product: its first dim is m, its
        // second n).
        bool convolution = isa<ConvOp, ConvGradInputOp, ConvGradWeightOp>(op);
        auto shrink = [&](int64_t f, double by) {
          if (convolution) {
            int productDim = rank >= 1 && result[0] == f      ? 0
                             : rank >= 2 && result[1] == f    ? 1
                             : !llvm::is_contained(result, f) ? 2
                                                              : -1;
            if (productDim >= 0) {
              *(productDim == 0 ? &m : productDim == 1 ? &n : &k) /= by;
              if (cost.im2col)
                cost.im2col->divideProductDim(productDim, by);
              // The samples (the weight gradient's k, else m) set a direct
              // kernel's rows per call.
              if (cost.directConv &&
                  productDim ==
                      (cost.directConv->pass == rt::ConvPass::GradWeight ? 2
                                                                         : 0))
                cost.directConv->rows /= by;
            }
            return;
          }
          if (rank >= 1 && result[rank - 1] == f)
            n /= by;
          else if (rank >= 2 && (result[rank - 2] == f ||
                                 (rowsMerged && llvm::is_contained(result, f))))
            m /= by;
          else if (!llvm::is_contained(result, f))
            k /= by;
        };
        if (data > 1)
          for (int64_t f = 0;
               f < static_cast<int64_t>(rule->factorSizes.size()); ++f)
            if (batch.isBatchFactor(op, f)) {
              shrink(f, data);
              break;
            }
        if (factor >= 0)
          shrink(factor, double(problem.axisSize));
      }
      efficiency = cluster.matrixEfficiency(std::max(m, 1.0), std::max(n, 1.0),
                                            std::max(k, 1.0));
      if (efficiency <= 0)
        efficiency = cluster.computeEfficiency;
    }
    double flops = cost.flops;
    applyDirectConvRate(cost, cluster, flops, efficiency);
    // An im2col convolution's split is in its dimensions already.
    double compute =
        cost.im2col && cost.m > 0 && rule && !rule->resultFactors.empty()
            ? im2colConvSeconds(*cost.im2col, cluster,
                                cluster.peakTflopsFp32 * 1e12)
            : flops / divisor / (cluster.peakTflopsFp32 * 1e12 * efficiency);
    double memory =
        cost.bytes / divisor /
        (cluster.memoryBandwidthGBs * 1e9 * cluster.memoryEfficiency);
    // An update the program will fuse into its gradient's call, as the cost
    // model times the partitioned step (FusedUpdates.h).
    bool dataParallel = problem.dataDegree > 1,
         cpu = convRuntimeOf(cluster) == ConvRuntime::Cpu;
    FusedUpdate fused;
    if (auto sgd = dyn_cast<SgdOp>(op))
      fused = updateBeforePartitioning(sgd, dataParallel, cpu);
    // A gradient GEMM is called where its update stands.
    if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm->hasOneUse())
      if (auto sgd = dyn_cast<SgdOp>(*gemm->user_begin()))
        fused.call =
            updateBeforePartitioning(sgd, dataParallel, cpu).share == 1;
    return std::max(compute, fused.share * memory) * 1e6 +
           (fused.call ? cluster.opOverheadUs : 0);
  }
  /// The collective `kind` over a buffer of `bufferBytes` in a group of
  /// `group` ranks, each sending `bytes` in `steps` messages: timed as the
  /// cost model times it (Cluster::collectiveSeconds: the link's measured
  /// collectives where it has them, else latency and bandwidth).
  double collectiveUs(MeasuredCollective kind, double bufferBytes,
                      double bytes, int64_t group, int64_t steps,
                      bool interNode) {
    const Link &link = interNode ? cluster.interNode : cluster.intraNode;
    return cluster.collectiveSeconds(link, kind, bufferBytes, bytes, group,
                                     steps) *
           1e6;
  }
  /// An all-reduce of `bytes` over a group of `group` ranks.
  double allReduceUs(double bytes, int64_t group, bool interNode);
  /// What turning `from` into `to` costs on one rank (`from` not partial:
  /// partial sums are all-reduced once, where they are produced).
  double reshardUs(Value value, Placement from, Placement to);

  func::FuncOp step;
  const Cluster &cluster;
  const IntraOpProblem &problem;
  BatchDims batch;
  std::vector<Node> nodes;
  /// Where each value comes from: its node and result index.
  llvm::DenseMap<Value, std::pair<size_t, unsigned>> producer;
  llvm::DenseMap<Operation *, size_t> opNode;
  /// Per value and placement: 1 when a chosen consumer needs it so.
  llvm::DenseMap<Value, std::map<Placement, Linear>> needOf;
  llvm::StringMap<size_t> tensorByName;
  IlpProgram program;
  double constantUs = 0;
};

void Formulation::addTensors() {
  int64_t t = problem.axisSize;
  SmallVector<std::pair<BlockArgument, StringRef>> states;
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = dyn_cast<ShapedType>(arg.getType());
    StringAttr param =
        step.getArgAttrOfType<StringAttr>(i, CleaveDialect::kParamAttrName);
    StringAttr state =
        step.getArgAttrOfType<StringAttr>(i, CleaveDialect::kStateAttrName);
    if (state && isOptimizerState(state.getValue())) {
      states.push_back({arg, state.getValue()});
      continue;
    }
    Node node;
    node.arg = arg;
    node.choices.push_back(Choice{-1, {}, {Placement{}}, 0});
    if ((param || state) && type) {
      node.hinted = true;
      // A parameter's gradient is held as long (the update reads it).
      node.heldBytes = tensorBytes(type) * (param ? 2 : 1);
      for (int64_t dim = 0; dim < type.getRank(); ++dim)
        if (type.getDimSize(dim) % t == 0)
          node.choices.push_back(Choice{dim, {}, {Placement{dim, false}}, 0});
      // Data parallelism all-reduces the gradient of the block each rank
      // holds (the cost model overlaps it with the backward pass; here it
      // counts whole, which favours smaller blocks where it matters).
      if (param && problem.dataDegree > 1)
        for (Choice &choice : node.choices)
          choice.dataUs = allReduceUs(
              tensorBytes(type) / (choice.results[0].dim >= 0 ? t : 1),
              problem.dataDegree, problem.dataInterNode);
      tensorByName[(param ? param : state).getValue()] = nodes.size();
    }
    producer[arg] = {nodes.size(), 0};
    nodes.push_back(std::move(node));
  }
  // Optimizer state lies as its parameter does (the update op ties them).
  for (auto [arg, name] : states) {
    StringRef owner = name.substr(0, name.rfind('.'));
    auto it = tensorByName.find(owner);
    if (it == tensorByName.end()) {
      Node node;
      node.arg = arg;
      node.choices.push_back(Choice{-1, {}, {Placement{}}, 0});
      producer[arg] = {nodes.size(), 0};
      nodes.push_back(std::move(node));
      continue;
    }
    nodes[it->second].heldBytes += tensorBytes(arg.getType());
    producer[arg] = {it->second, 0};
    // Its update leaves as the parameter lies.
    tensorByName[name] = it->second;
  }
}

/// The operand an op follows, if it is a follower: a one-result op whose
/// rule ties every dimension of one operand to the same dimension of its
/// result (a ReLU, a scale by a scalar); its other operands are scalars.
/// Propagation splits it as that operand arrives, so the ILP gives it the
/// operand producer's variables instead of its own (Alpa merges such
/// nodes too): fewer columns, the same answers.
std::optional<unsigned> followedOperand(Operation *op,
                                        const OpShardingRule &rule) {
  if (op->getNumResults() != 1 || rule.statisticsFactor >= 0)
    return std::nullopt;
  auto shape = cast<ShapedType>(op->getResult(0).getType()).getShape();
  std::optional<unsigned> followed;
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    auto type = cast<ShapedType>(operand.getType());
    if (type.getRank() == 0)
      continue;
    if (followed || type.getShape() != shape ||
        rule.operandFactors[index] != rule.resultFactors[0] ||
        llvm::is_contained(rule.resultFactors[0], -1))
      return std::nullopt;
    followed = index;
  }
  return followed;
}

void Formulation::addOps() {
  int64_t t = problem.axisSize;
  for (Operation &op : step.getBody().front().without_terminator()) {
    Node node;
    node.op = &op;
    node.rule = getShardingRule(&op);
    bool batched = llvm::any_of(op.getOperands(),
                                [&](Value v) { return batch.hasBatch(v); }) ||
                   llvm::any_of(op.getResults(),
                                [&](Value v) { return batch.hasBatch(v); });
    double data = batched ? problem.dataDegree : 1;
    std::optional<unsigned> followed =
        node.rule ? followedOperand(&op, *node.rule) : std::nullopt;
    if (followed) {
      auto [from, result] = producer.lookup(op.getOperand(*followed));
      node.follows = from;
      for (const Choice &source : nodes[from].choices) {
        // Partial sums are all-reduced where they are made: whole here.
        int64_t dim = source.results[result].dim;
        Choice choice;
        choice.factor = dim >= 0 ? node.rule->resultFactors[0][dim] : -1;
        choice.operandDims.assign(op.getNumOperands(), -1);
        choice.operandDims[*followed] = dim;
        choice.results.push_back(Placement{dim, false});
        choice.computeUs = roofline(&op, node.rule, data, choice.factor);
        node.choices.push_back(std::move(choice));
      }
      producer[op.getResult(0)] = {nodes.size(), 0};
      opNode[&op] = nodes.size();
      nodes.push_back(std::move(node));
      continue;
    }
    Choice whole;
    whole.operandDims.assign(op.getNumOperands(), -1);
    whole.results.assign(op.getNumResults(), Placement{});
    whole.computeUs = roofline(&op, node.rule, data, -1);
    node.choices.push_back(whole);
    if (const std::optional<OpShardingRule> &rule = node.rule) {
      for (int64_t f = 0; f < static_cast<int64_t>(rule->factorSizes.size());
           ++f) {
        if (rule->factorSizes[f] % t != 0 || f == rule->statisticsFactor ||
            batch.isBatchFactor(&op, f))
          continue;
        Choice split;
        split.factor = f;
        split.computeUs = roofline(&op, rule, data, f);
        for (const SmallVector<int64_t> &dims : rule->operandFactors) {
          auto at = llvm::find(dims, f);
          split.operandDims.push_back(at == dims.end() ? -1
                                                       : at - dims.begin());
        }
        for (const SmallVector<int64_t> &dims : rule->resultFactors) {
          auto at = llvm::find(dims, f);
          // A factor the result lacks is summed over: partial sums.
          split.results.push_back(at == dims.end()
                                      ? Placement{-1, true}
                                      : Placement{at - dims.begin(), false});
        }
        node.choices.push_back(std::move(split));
      }
      // A training BatchNorm (and its gradient) normalizes with the
      // statistics of every data-parallel rank's rows: the partitioner
      // all-reduces per-channel sums over dp (passes/SplitBatchStatistics:
      // the forward pass two of C floats, the gradient one of 2 C), C
      // split where the choice splits the channels.
      if (rule->statisticsFactor >= 0 && problem.dataDegree > 1) {
        int64_t d = problem.dataDegree;
        auto input = cast<ShapedType>(op.getOperand(isa<BatchNormOp>(op) ? 0 : 1)
                                          .getType());
        double channelBytes = 4.0 * double(input.getDimSize(1));
        bool forward = isa<BatchNormOp>(op);
        // The sums are ops of their own, one pass each over the input
        // (the forward pass's two over x; the gradient's one over dy and
        // x, its kernel taking the sums as the kernel it replaces takes
        // dy and x).
        int ops = forward ? 2 : 1;
        double passes = 2;
        double inputBytes = bytesOf(op.getOperand(isa<BatchNormOp>(op) ? 0 : 1));
        for (Choice &choice : node.choices) {
          double split = choice.operandDims[0] >= 0 ? t : 1;
          double sum = (forward ? 1 : 2) * channelBytes / split;
          for (int i = 0; i < (forward ? 2 : 1); ++i)
            choice.dataUs += allReduceUs(sum, d, problem.dataInterNode);
          choice.dataUs +=
              ops * cluster.opOverheadUs +
              passes * inputBytes / split /
                  (cluster.memoryBandwidthGBs * 1e9 * cluster.memoryEfficiency) *
                  1e6;
        }
      }
    }
    for (auto [index, result] : llvm::enumerate(op.getResults()))
      producer[result] = {nodes.size(), static_cast<unsigned>(index)};
    opNode[&op] = nodes.size();
    nodes.push_back(std::move(node));
  }
}

void Formulation::addColumns() {
  for (Node &node : nodes) {
    if (node.follows) {
      node.chosen = nodes[*node.follows].chosen;
      for (auto [choice, chosen] : llvm::zip(node.choices, node.chosen))
        addObjective(chosen, choice.computeUs);
      continue;
    }
    if (node.choices.size() == 1) {
      node.chosen.push_back(Linear{1, {}});
      constantUs += node.choices[0].computeUs + node.choices[0].dataUs;
      continue;
    }
    SmallVector<IlpTerm> exactlyOne;
    for (const Choice &choice : node.choices) {
      int column = program.addBinary(choice.computeUs + choice.dataUs);
      node.chosen.push_back(Linear{0, {{column, 1.0}}});
      exactlyOne.push_back({column, 1.0});
    }
    program.addRow(exactlyOne, 'E', 1);
  }
}

void Formulation::addObjective(const Linear &expression, double cost) {
  constantUs += cost * expression.constant;
  for (auto [column, coefficient] : expression.terms)
    program.addCost(column, cost * coefficient);
}

void Formulation::addProduct(const Linear &a, const Linear &b, double cost) {
  if (cost == 0)
    return;
  // a and b are 0/1: a constant one is 0 or 1 and leaves the other.
  if (a.isConstant())
    return a.constant ? addObjective(b, cost) : void();
  if (b.isConstant())
    return b.constant ? addObjective(a, cost) : void();
  // z >= a + b - 1, z >= 0: z is 1 exactly when both are (minimised).
  int z = program.addContinuous(0, 1, cost);
  SmallVector<IlpTerm> row{{z, 1.0}};
  for (auto [column, coefficient] : a.terms)
    row.push_back({column, -coefficient});
  for (auto [column, coefficient] : b.terms)
    row.push_back({column, -coefficient});
  program.addRow(row, 'G', a.constant + b.constant - 1);
}

double Formulation::allReduceUs(double bytes, int64_t t, bool interNode) {
  auto count = static_cast<int64_t>(bytes / 4);
  bool doubling = !problem.ringOnly &&
                  ::cleave::rt::usesRecursiveDoubling(
                      static_cast<int64_t>(bytes), static_cast<int>(t));
  int64_t sent = problem.ringOnly
                     ? ::cleave::rt::ringAllReduceBytesSent(count, 4, t, 0)
                     : ::cleave::rt::allReduceBytesSent(count, 4, t, 0);
  int64_t steps = 2 * (t - 1);
  if (doubling)
    for (steps = 0; (int64_t(1) << steps) < t; ++steps)
      ;
  return collectiveUs(MeasuredCollective::AllReduce, bytes, sent, t, steps,
                      interNode);
}

double Formulation::reshardUs(Value value, Placement from, Placement to) {
  if (from.dim == to.dim)
    return 0;
  int64_t t = problem.axisSize;
  double bytes = bytesOf(value);
  double us = 0;
  // Gather what is split, then slice what the target splits (a local
  // copy of one block), as the partitioner lowers a reshard.
  if (from.dim >= 0)
    us += collectiveUs(MeasuredCollective::AllGather, bytes,
                       (t - 1) * bytes / t, t, t - 1, problem.interNode);
  // Gathered along a dimension with others before it, the blocks are
  // interleaved after: a copy of the whole tensor, as the cost model
  // times it (CostModel.cpp, innerDimCopySeconds).
  auto type = cast<ShapedType>(value.getType());
  int64_t outer = 1;
  for (int64_t d = 0; d < from.dim && d < type.getRank(); ++d)
    outer *= type.getDimSize(d);
  if (from.dim >= 0 && outer > 1)
    us += 2 * bytes /
          (cluster.memoryBandwidthGBs * 1e9 * cluster.memoryEfficiency) * 1e6;
  if (to.dim >= 0)
    us += 2 * bytes / t /
              (cluster.memoryBandwidthGBs * 1e9 * cluster.memoryEfficiency) *
              1e6 +
          cluster.opOverheadUs;
  return us;
}

void Formulation::addReshard(Value value,
                             const std::map<Placement, Linear> &produced,
                             Placement target, const Linear &need) {
  bool costly = false;
  for (auto &[from, has] : produced)
    costly |= reshardUs(value, from, target) > 0;
  if (!costly)
    return;
  if (need.isConstant() || produced.size() == 1) {
    for (auto &[from, has] : produced)
      addProduct(has, need, reshardUs(value, from, target));
    return;
  }
  // Exactly one placement is produced (the P sum to 1), so the products
  // z_p = P_p AND need are tight as: sum_p z_p = need, z_p <= P_p (the
  // transportation form Alpa uses for edges). z >= P + need - 1 alone
  // leaves the LP relaxation so loose that CBC takes seconds on a CNN.
  SmallVector<IlpTerm> sum;
  for (auto &[from, has] : produced) {
    int z = program.addContinuous(0, 1, reshardUs(value, from, target));
    sum.push_back({z, 1.0});
    SmallVector<IlpTerm> row{{z, 1.0}};
    for (auto [column, coefficient] : has.terms)
      row.push_back({column, -coefficient});
    program.addRow(row, 'L', has.constant);
  }
  for (auto [column, coefficient] : need.terms)
    sum.push_back({column, -coefficient});
  program.addRow(sum, 'E', need.constant);
}

void Formulation::addTargets(
    Value value, std::map<Placement, std::vector<Linear>> &targets) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    unsigned index = use.getOperandNumber();
    if (isa<func::ReturnOp>(user)) {
      // An update leaves as its tensor lies; everything else whole.
      auto name = step.getResultAttrOfType<StringAttr>(
          index, CleaveDialect::kUpdateAttrName);
      auto it = name ? tensorByName.find(name.getValue()) : tensorByName.end();
      if (it == tensorByName.end()) {
        targets[Placement{}].push_back(Linear{1, {}});
        continue;
      }
      const Node &tensor = nodes[it->second];
      for (auto [choice, chosen] : llvm::zip(tensor.choices, tensor.chosen))
        targets[choice.results[0]].push_back(chosen);
      continue;
    }
    const Node &consumer = nodes[opNode.lookup(user)];
    for (auto [choice, chosen] : llvm::zip(consumer.choices, consumer.chosen))
      targets[Placement{choice.operandDims[index], false}].push_back(chosen);
  }
}

void Formulation::addReshards() {
  SmallVector<Value> values;
  for (BlockArgument arg : step.getArguments())
    values.push_back(arg);
  for (Operation &op : step.getBody().front().without_terminator())
    llvm::append_range(values, op.getResults());
  // An optimizer state shares its parameter's node: its uses are one more
  // value of that node.
  for (Value value : values) {
    if (value.use_empty() || !isa<ShapedType>(value.getType()))
      continue;
    auto [nodeIndex, result] = producer.lookup(value);
    const Node &node = nodes[nodeIndex];
    // What the producer leaves, by placement; partial sums are
    // all-reduced once, where they are produced (then whole).
    std::map<Placement, Linear> produced;
    for (auto [choice, chosen] : llvm::zip(node.choices, node.chosen)) {
      Placement placement = choice.results[result];
      if (placement.partial) {
        addObjective(chosen, allReduceUs(bytesOf(value), problem.axisSize,
                                         problem.interNode));
        placement = Placement{};
      }
      produced[placement].add(chosen);
    }
    std::map<Placement, std::vector<Linear>> targets;
    addTargets(value, targets);
    for (auto &[target, needs] : targets) {
      // need = 1 when some consumer's chosen way wants `target`.
      Linear need;
      bool always = llvm::any_of(
          needs, [](const Linear &l) { return l.isConstant() && l.constant; });
      if (always) {
        need.constant = 1;
      } else if (needs.size() == 1) {
        need = needs.front();
      } else {
        int y = program.addContinuous(0, 1, 0);
        need.terms.push_back({y, 1.0});
        for (const Linear &l : needs) {
          SmallVector<IlpTerm> row{{y, 1.0}};
          for (auto [column, coefficient] : l.terms)
            row.push_back({column, -coefficient});
          program.addRow(row, 'G', l.constant);
        }
      }
      addReshard(value, produced, target, need);
      needOf[value][target] = need;
    }
  }
}

void Formulation::addPropagationRows() {
  // The compiler derives every value's sharding by propagation, which
  // spreads a split along the rules' factors as far as it goes: an op
  // whose operand arrives split along a factor's dimension, or one of
  // whose results a consumer wants split, splits a factor itself. Which
  // one: of those proposed, the first a contraction (a factor on no
  // result), else the first by index (getFactorAxes' and propagation's
  // claim order; every hint here has one priority). The ILP obeys this,
  // so that its choices are ones the hints can produce: an op splits the
  // proposed factor or one that comes before it (a relaxation of "the
  // first proposed"). Without it, it would count an activation's
  // all-gather where the compiler gathers a weight.
  for (const Node &node : nodes) {
    if (!node.rule)
      continue;
    const OpShardingRule &rule = *node.rule;
    auto onResult = [&](int64_t f) {
      return llvm::any_of(rule.resultFactors, [&](ArrayRef<int64_t> dims) {
        return llvm::is_contained(dims, f);
      });
    };
    auto claimsBefore = [&](int64_t g, int64_t f) {
      return std::make_pair(onResult(g), g) <= std::make_pair(onResult(f), f);
    };
    // proposed <= the choices splitting f or a factor claiming before it.
    auto require = [&](const Linear &proposed, int64_t f) {
      if (proposed.isConstant() && !proposed.constant)
        return;
      Linear splits;
      for (auto [choice, chosen] : llvm::zip(node.choices, node.chosen))
        if (choice.factor >= 0 && claimsBefore(choice.factor, f))
          splits.add(chosen);
      SmallVector<IlpTerm> row = proposed.terms;
      for (auto [column, coefficient] : splits.terms)
        row.push_back({column, -coefficient});
      if (!row.empty())
        program.addRow(row, 'L', splits.constant - proposed.constant);
    };
    auto splittable = [&](int64_t f) {
      return llvm::any_of(node.choices,
                          [&](const Choice &c) { return c.factor == f; });
    };
    for (auto [index, dims] : llvm::enumerate(rule.operandFactors))
      for (auto [dim, f] : llvm::enumerate(dims)) {
        if (f < 0 || !splittable(f))
          continue;
        auto [from, result] = producer.lookup(node.op->getOperand(index));
        const Node &source = nodes[from];
        Linear arrives;
        for (auto [choice, chosen] : llvm::zip(source.choices, source.chosen))
          if (choice.results[result] ==
              Placement{static_cast<int64_t>(dim), false})
            arrives.add(chosen);
        require(arrives, f);
      }
    for (auto [index, dims] : llvm::enumerate(rule.resultFactors))
      for (auto [dim, f] : llvm::enumerate(dims)) {
        if (f < 0 || !splittable(f))
          continue;
        auto it = needOf.find(node.op->getResult(index));
        if (it == needOf.end())
          continue;
        auto need =
            it->second.find(Placement{static_cast<int64_t>(dim), false});
        if (need != it->second.end())
          require(need->second, f);
      }
  }
}

bool Formulation::addMemoryRow() {
  double budget = static_cast<double>(cluster.memoryBytes()) * problem.stages;
  SmallVector<IlpTerm> row;
  double fixed = 0;
  for (const Node &node : nodes) {
    if (!node.heldBytes)
      continue;
    for (auto [choice, chosen] : llvm::zip(node.choices, node.chosen)) {
      double bytes = choice.results[0].dim >= 0
                         ? node.heldBytes / problem.axisSize
                         : node.heldBytes;
      fixed += bytes * chosen.constant;
      for (auto [column, coefficient] : chosen.terms)
        row.push_back({column, bytes * coefficient});
    }
  }
  if (fixed > budget)
    return false;
  if (!row.empty())
    program.addRow(row, 'L', budget - fixed);
  return true;
}

llvm::Expected<IntraOpPlan> Formulation::solve() {
  addTensors();
  addOps();
  addColumns();
  addReshards();
  addPropagationRows();
  if (!addMemoryRow())
    return fail("no sharding over " + problem.axis +
                " fits: the whole tensors alone exceed the device memory");
  IntraOpPlan plan;
  plan.variables = program.columns();
  plan.constraints = program.rows();
  for (const Node &node : nodes)
    plan.wholeMs += (node.choices[0].computeUs + node.choices[0].dataUs) * 1e-3;
  // The choices each solution makes, and what they cost.
  auto decode = [&](const IlpProgram::Solution &solution) {
    SmallVector<size_t> picked;
    for (const Node &node : nodes) {
      size_t best = 0;
      double value = -1;
      for (auto [index, chosen] : llvm::enumerate(node.chosen)) {
        double v = chosen.constant;
        for (auto [column, coefficient] : chosen.terms)
          v += coefficient * solution.values[column];
        if (v > value)
          value = v, best = index;
      }
      picked.push_back(best);
    }
    return picked;
  };
  if (program.columns() == 0) {
    plan.objectiveMs = plan.computeMs = plan.wholeMs;
    plan.optimal = true;
    return plan;
  }
  // Start from everything whole (an answer whenever it fits).
  std::vector<int> whole;
  for (const Node &node : nodes)
    if (!node.follows && node.choices.size() > 1)
      whole.push_back(node.chosen[0].terms[0].first);
  program.setStart(std::move(whole));
  IlpProgram::Solution solution = program.solve();
  plan.seconds = solution.seconds;
  if (!solution.feasible)
    return fail("no sharding over " + problem.axis +
                " fits the device memory (CBC found none)");
  plan.optimal = solution.optimal;
  plan.gap = solution.gap;
  plan.objectiveMs = (solution.objective + constantUs) * 1e-3;
  SmallVector<size_t> picked = decode(solution);
  for (auto [node, choice] : llvm::zip(nodes, picked)) {
    plan.computeMs += node.choices[choice].computeUs * 1e-3;
    if (!node.hinted)
      continue;
    auto type = cast<ShapedType>(node.arg.getType());
    unsigned i = node.arg.getArgNumber();
    StringAttr name =
        step.getArgAttrOfType<StringAttr>(i, CleaveDialect::kParamAttrName);
    if (!name)
      name =
          step.getArgAttrOfType<StringAttr>(i, CleaveDialect::kStateAttrName);
    ShardingHint hint;
    hint.pattern = escapeGlob(name.getValue());
    hint.dims.resize(type.getRank());
    hint.origin = "the intra-op ILP";
    if (int64_t dim = node.choices[choice].results[0].dim; dim >= 0) {
      hint.dims[dim] = {problem.axis};
      ++plan.splitTensors;
    }
    plan.hints.push_back(std::move(hint));
    ++plan.tensors;
  }
  plan.commMs = std::max(0.0, plan.objectiveMs - plan.computeMs);
  if (plan.splitTensors == 0) {
    // What the best split would have cost, for the reason given; only
    // for programs small enough to solve again in about a second (it only
    // explains).
    SmallVector<IlpTerm> anySplit;
    for (const Node &node : nodes)
      if (node.hinted)
        for (auto [choice, chosen] : llvm::zip(node.choices, node.chosen))
          if (choice.results[0].dim >= 0)
            llvm::append_range(anySplit, chosen.terms);
    if (!anySplit.empty() && program.columns() <= kExplainedColumns) {
      program.addRow(anySplit, 'G', 1);
      IlpProgram::Solution split = program.solve();
      plan.seconds += split.seconds;
      if (split.feasible)
        plan.bestSplitMs = (split.objective + constantUs) * 1e-3;
    }
  }
  return plan;
}

} // namespace

llvm::Expected<IntraOpPlan> solveIntraOpIlp(func::FuncOp step,
                                            const Cluster &cluster,
                                            const IntraOpProblem &problem) {
  Formulation formulation(step, cluster, problem);
  return formulation.solve();
}

} // namespace cleave::planner
