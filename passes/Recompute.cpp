//===- Recompute.cpp - activation recomputation ---------------------------===//
//
// Trades compute for activation memory: forward values the backward pass
// reads are recomputed just before it needs them instead of being kept
// from the forward pass. See Passes.td for the contract.
//
// Layer boundaries come from the graph, not from names: a forward value is
// a checkpoint when it is the only activation alive between two forward
// ops (a transformer's residual stream after each residual add, the
// embedding's output). Values between two checkpoints form a segment; the
// backward readers of a segment's values get clones of the forward ops
// they need, computed from the segment's checkpoint, inserted before the
// first of them, so the originals die in the forward pass.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TrainingStep.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

bool isContraction(Operation *op) {
  return isa<GemmOp, MatmulOp, ConvOp>(op);
}

class Recomputer {
public:
  Recomputer(func::FuncOp func, bool selective)
      : func(func), body(func.getBody().front()), selective(selective) {}

  /// Recomputes the step's saved activations; returns the number of ops
  /// cloned.
  int64_t run();

private:
  /// The ops the loss depends on, in program order; their results that
  /// depend on the data are the activations.
  void findForward();
  /// Activations alone alive between two forward ops.
  void findCheckpoints();

  func::FuncOp func;
  Block &body;
  bool selective;
  SmallVector<Operation *> forward;
  llvm::DenseMap<Operation *, int64_t> forwardIndex;
  llvm::DenseSet<Value> activations;
  llvm::DenseSet<Value> checkpoints;
};

void Recomputer::findForward() {
  llvm::DenseSet<Operation *> needed = forwardOps(func);
  llvm::DenseSet<Value> fromData;
  for (BlockArgument arg : body.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), CleaveDialect::kInputAttrName))
      fromData.insert(arg);
  for (Operation &op : body.without_terminator()) {
    if (!needed.contains(&op))
      continue;
    forwardIndex[&op] = forward.size();
    forward.push_back(&op);
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return fromData.contains(v); }))
      for (Value result : op.getResults()) {
        fromData.insert(result);
        activations.insert(result);
      }
  }
}

void Recomputer::findCheckpoints() {
  // Each activation is alive from its op to its last forward reader; a cut
  // between two forward ops that only one crosses is a layer boundary. The
  // count of activations across each cut, and the sum of their numbers
  // (the one activation's number where the count is 1), by differences.
  int64_t n = forward.size();
  SmallVector<int64_t> count(n + 1, 0), sum(n + 1, 0);
  SmallVector<Value> numbered;
  for (Operation *op : forward)
    for (Value result : op->getResults()) {
      if (!activations.contains(result))
        continue;
      int64_t def = forwardIndex[op], last = def;
      for (Operation *user : result.getUsers())
        if (auto it = forwardIndex.find(user); it != forwardIndex.end())
          last = std::max(last, it->second);
      // Alive across the cuts after ops def .. last - 1.
      int64_t number = numbered.size();
      numbered.push_back(result);
      count[def] += 1, count[last] -= 1;
      sum[def] += number, sum[last] -= number;
    }
  for (int64_t cut = 0, alive = 0, total = 0; cut < n; ++cut) {
    alive += count[cut];
    total += sum[cut];
    if (alive == 1)
      checkpoints.insert(numbered[total]);
  }
}

int64_t Recomputer::run() {
  findForward();
  findCheckpoints();
  llvm::DenseSet<Operation *> isForward(forward.begin(), forward.end());
  // What the backward pass keeps: checkpoints; results of ops that cannot
  // be run twice to the same effect (random draws, dropout); with
  // `selective`, also the products of GEMMs, matmuls and convolutions (the
  // expensive ops), so that only the cheap ops between them run again.
  auto kept = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return !activations.contains(v) || checkpoints.contains(v) || !def ||
           !isPure(def) || def->getNumRegions() != 0 ||
           (selective && isContraction(def));
  };
  // Segments: the forward ops between consecutive checkpoints.
  llvm::DenseMap<Operation *, int64_t> segmentOf;
  int64_t segment = 0;
  for (Operation *op : forward) {
    segmentOf[op] = segment;
    if (llvm::any_of(op->getResults(),
                     [&](Value v) { return checkpoints.contains(v); }))
      ++segment;
  }
  // Per segment: the values its backward readers need recomputed, and the
  // first of those readers. The last segment (the loss) is kept: its
  // backward pass starts as its forward pass ends.
  llvm::MapVector<int64_t, SmallVector<Value>> wanted;
  llvm::DenseMap<int64_t, Operation *> firstReader;
  for (Operation &op : body.without_terminator()) {
    if (isForward.contains(&op))
      continue;
    for (Value operand : op.getOperands()) {
      if (kept(operand))
        continue;
      int64_t s = segmentOf.lookup(operand.getDefiningOp());
      if (s == segment)
        continue;
      wanted[s].push_back(operand);
      firstReader.try_emplace(s, &op);
    }
  }
  int64_t cloned = 0;
  for (auto &[s, values] : wanted) {
    // The forward ops these values need, back to kept values.
    llvm::SetVector<Operation *> needed;
    SmallVector<Operation *> worklist;
    for (Value v : values)
      worklist.push_back(v.getDefiningOp());
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!needed.insert(op))
        continue;
      for (Value operand : op->getOperands())
        if (!kept(operand))
          worklist.push_back(operand.getDefiningOp());
    }
    SmallVector<Operation *> ordered(needed.begin(), needed.end());
    llvm::sort(ordered, [&](Operation *a, Operation *b) {
      return forwardIndex[a] < forwardIndex[b];
    });
    // Copy and original carry the copy's number (cleave.recompute and
    // cleave.recompute_source), so that CSE never merges them and pipeline
    // stages can find the original.
    OpBuilder builder(firstReader[s]);
    IRMapping mapping;
    for (Operation *op : ordered) {
      Operation *copy = builder.clone(*op, mapping);
      IntegerAttr number = builder.getI64IntegerAttr(cloned++);
      copy->setAttr(CleaveDialect::kRecomputeAttrName, number);
      op->setAttr(CleaveDialect::kRecomputeSourceAttrName, number);
    }
    // Backward readers use the copies of the values recomputed, not of
    // those kept: a copy's result that is a checkpoint (a LayerNorm's
    // output, whose statistics are recomputed) may be read before the copy.
    for (Operation *op : ordered)
      for (Value result : op->getResults())
        if (!kept(result))
          result.replaceUsesWithIf(mapping.lookup(result), [&](OpOperand &use) {
            Operation *user = use.getOwner();
            return !isForward.contains(user) &&
                   !user->hasAttr(CleaveDialect::kRecomputeAttrName);
          });
  }
  return cloned;
}

struct RecomputePass
    : public mlir::cleave::impl::RecomputePassBase<RecomputePass> {
  using RecomputePassBase::RecomputePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (mode != "full" && mode != "selective") {
      func.emitError("unknown recomputation mode '")
          << mode << "'; use full or selective";
      return signalPassFailure();
    }
    // Saying so beats a silent no-op: the user asked for less memory.
    if (lossOf(func) && Recomputer(func, mode == "selective").run() == 0)
      func.emitWarning("recomputation (")
          << mode
          << ") finds nothing to recompute: every activation the backward "
             "pass reads is a layer boundary, a dropout's or the loss "
             "layer's; the step keeps its memory";
  }
};

} // namespace
