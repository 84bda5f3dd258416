//===- TransformerBlocks.cpp - finding Megatron-style layer pairs ---------===//

#include "passes/TransformerBlocks.h"

#include "dialects/cleave/CleaveOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// A linear layer in the forward pass: its weight, input and output.
struct FoundLinear {
  LinearLayer layer;
  Value input;
  Value output;
};

bool isParam(func::FuncOp func, Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  return arg && func.getArgAttr(arg.getArgNumber(),
                                CleaveDialect::kParamAttrName);
}

/// The linear layer `op` computes, if it multiplies activations by a 2-d
/// parameter (PyTorch's Linear: Gemm with trans_b, or MatMul with the
/// transposed weight).
std::optional<FoundLinear> matchLinear(func::FuncOp func, Operation *op) {
  FoundLinear found;
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (!isParam(func, gemm.getB()) || gemm.getTransA())
      return std::nullopt;
    found.layer = {cast<BlockArgument>(gemm.getB()), gemm.getTransB() ? 0 : 1,
                   BlockArgument()};
    if (gemm.getC() && isParam(func, gemm.getC()))
      found.layer.bias = cast<BlockArgument>(gemm.getC());
    found.input = gemm.getA();
    found.output = gemm.getResult();
    return found;
  }
  auto matmul = dyn_cast<MatmulOp>(op);
  if (!matmul || matmul.getRhs().getType().getRank() != 2)
    return std::nullopt;
  Value rhs = matmul.getRhs();
  if (auto transpose = rhs.getDefiningOp<TransposeOp>();
      transpose && isParam(func, transpose.getInput()))
    found.layer = {cast<BlockArgument>(transpose.getInput()), 0,
                   BlockArgument()};
  else if (isParam(func, rhs))
    found.layer = {cast<BlockArgument>(rhs), 1, BlockArgument()};
  else
    return std::nullopt;
  found.input = matmul.getLhs();
  found.output = matmul.getResult();
  // A following add of a 1-d parameter is the bias.
  if (found.output.hasOneUse())
    if (auto add = dyn_cast<AddOp>(*found.output.user_begin()))
      for (Value operand : add->getOperands())
        if (operand != found.output && isParam(func, operand) &&
            cast<ShapedType>(operand.getType()).getRank() == 1) {
          found.layer.bias = cast<BlockArgument>(operand);
          found.output = add.getResult();
        }
  return found;
}

/// Whether a split of `input` along `axis` cuts each head's block of a
/// fused projection: `input` is the projection's [..., F] reshaped to
/// [..., H, F / H] and `axis` is the last dim. A contiguous block of the F
/// outputs is then whole heads with all of their pieces (Megatron-LM's q/k/v
/// layout), so the projection splits by columns like an unfused one; a split of
/// F itself (GPT-2's c_attn: all of q, then k, then v) would need every piece's
/// block, which no column split gives.
bool cutsWithinHeads(Value input, int64_t axis) {
  auto reshape = input.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return false;
  ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
  ArrayRef<int64_t> out = reshape.getResult().getType().getShape();
  int64_t rank = static_cast<int64_t>(out.size());
  return rank >= 2 && axis == rank - 1 && !in.empty() &&
         out.drop_back(2) == in.drop_back() &&
         out[rank - 2] * out[rank - 1] == in.back();
}

/// The same for a slice (PyTorch's MultiheadAttention takes q, k and v out
/// of its fused projection by slicing): within heads when it cuts the last
/// dim of such a reshape only.
bool slicesWithinHeads(SliceOp slice) {
  ArrayRef<int64_t> in =
      cast<ShapedType>(slice.getInput().getType()).getShape();
  ArrayRef<int64_t> out = cast<ShapedType>(slice.getType()).getShape();
  int64_t rank = static_cast<int64_t>(in.size());
  for (int64_t d = 0; d + 1 < rank; ++d)
    if (in[d] != out[d])
      return false;
  return cutsWithinHeads(slice.getInput(), rank - 1);
}

/// The heads H of a reshape between [..., H x D] and [..., H, D] (either
/// way), if it is one.
std::optional<int64_t> headsOf(ReshapeOp reshape) {
  ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
  ArrayRef<int64_t> out = reshape.getResult().getType().getShape();
  if (in.size() > out.size())
    std::swap(in, out);
  if (out.size() != in.size() + 1 || in.empty() ||
      out.drop_back(2) != in.drop_back() || out.end()[-2] <= 1 ||
      out.end()[-2] * out.back() != in.back())
    return std::nullopt;
  return out.end()[-2];
}

} // namespace

TensorParallelPlan mlir::cleave::findTensorParallelLayers(func::FuncOp func) {
  // The forward pass: ops before the first gradient op (autodiff appends
  // the backward pass after the forward ops).
  SmallVector<FoundLinear> linears;
  llvm::DenseMap<Value, size_t> byOutput;
  llvm::DenseSet<Value> seenWeights;
  for (Operation &op : func.getBody().front()) {
    std::optional<FoundLinear> found = matchLinear(func, &op);
    // A weight used twice (tied, or its gradient's matmul) is not a
    // forward layer we can split on its own.
    if (!found || !seenWeights.insert(found->layer.weight).second)
      continue;
    byOutput[found->output] = linears.size();
    linears.push_back(*found);
  }

  TensorParallelPlan plan;
  // Embeddings: the tables token ids (graph inputs) index.
  for (Operation &op : func.getBody().front())
    if (auto gather = dyn_cast<GatherOp>(op)) {
      // (Sequence-first ids come as a transpose of their batch-first input.)
      Value indices = gather.getIndices();
      if (auto transpose = indices.getDefiningOp<TransposeOp>())
        indices = transpose.getInput();
      auto ids = dyn_cast<BlockArgument>(indices);
      if (gather.getAxis() == 0 && isParam(func, gather.getData()) &&
          gather.getData().getType().getRank() == 2 && ids &&
          func.getArgAttr(ids.getArgNumber(), CleaveDialect::kInputAttrName) &&
          !llvm::is_contained(plan.vocabularyTables, gather.getData()))
        plan.vocabularyTables.push_back(cast<BlockArgument>(gather.getData()));
    }
  // The head: the linear layer whose output, reshaped, is a loss's scores.
  for (const FoundLinear &linear : linears) {
    SmallVector<Value> worklist{linear.output};
    while (!worklist.empty() && !plan.head) {
      Value value = worklist.pop_back_val();
      for (Operation *user : value.getUsers()) {
        if (isa<SoftmaxCrossEntropyOp, NllLossOp>(user) &&
            user->getOperand(0) == value)
          plan.head = linear.layer;
        else if (isa<ReshapeOp>(user))
          worklist.push_back(user->getResult(0));
      }
    }
  }
  // Values computed from graph inputs and constants only (masks, a
  // dropout's offset): no linear layer's output flows through them.
  llvm::DenseSet<Value> fromDataAlone;
  for (Operation &op : func.getBody().front())
    if (op.getNumResults() &&
        llvm::all_of(op.getOperands(), [&](Value operand) {
          if (auto arg = dyn_cast<BlockArgument>(operand))
            return !isParam(func, arg);
          return fromDataAlone.contains(operand);
        }))
      fromDataAlone.insert(op.result_begin(), op.result_end());
  llvm::DenseSet<size_t> assigned;
  for (auto [index, second] : llvm::enumerate(linears)) {
    // Walk back from the layer's input to the linear outputs it comes from.
    SmallVector<Value> worklist{second.input};
    llvm::DenseSet<Value> visited;
    llvm::SetVector<size_t> sources;
    SmallVector<std::pair<Operation *, int64_t>> headReshapes;
    bool crossesHeads = false, splitsFused = false, blocked = false;
    while (!worklist.empty() && !blocked) {
      Value value = worklist.pop_back_val();
      if (!visited.insert(value).second)
        continue;
      if (auto it = byOutput.find(value); it != byOutput.end()) {
        sources.insert(it->second);
        continue;
      }
      Operation *def = value.getDefiningOp();
      if (!def || isa<ConstantOp>(def))
        continue;
      if (isa<MatmulOp>(def)) {
        crossesHeads = true;
      } else if (auto split = dyn_cast<SplitOp>(def)) {
        splitsFused |= !cutsWithinHeads(split.getInput(), split.getAxis());
      } else if (auto slice = dyn_cast<SliceOp>(def)) {
        splitsFused |= !slicesWithinHeads(slice);
      } else if (auto reshape = dyn_cast<ReshapeOp>(def)) {
        if (std::optional<int64_t> heads = headsOf(reshape))
          headReshapes.push_back({reshape, *heads});
      } else if (!def->hasTrait<cleave::OpTrait::Broadcasting>() &&
                 !def->hasTrait<mlir::OpTrait::Elementwise>() &&
                 !isa<ReshapeOp, TransposeOp, SoftmaxOp, DropoutOp>(def)) {
        blocked = true;
        break;
      }
      // Parameters along the way (a bias, a scale) are not activations,
      // nor is what the data alone gives (an attention mask).
      for (Value operand : def->getOperands())
        if (!isParam(func, operand) && !fromDataAlone.contains(operand))
          worklist.push_back(operand);
    }
    if (blocked || sources.size() != 1 || assigned.count(index))
      continue;
    size_t first = sources.front();
    if (assigned.count(first))
      continue;
    plan.rowParallel.push_back(second.layer);
    assigned.insert(index);
    if (crossesHeads)
      llvm::append_range(plan.headReshapes, headReshapes);
    if (!crossesHeads || !splitsFused) {
      plan.columnParallel.push_back(linears[first].layer);
      assigned.insert(first);
    }
  }
  return plan;
}
