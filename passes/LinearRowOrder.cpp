//===- LinearRowOrder.cpp - linear layers on rows in their producer's order -===//
//
// nn.MultiheadAttention (batch_first) transposes its input to [S, B, E]
// and multiplies it by its in-projection; its attention output goes back
// to [S, B, E] rows through a transpose and the view [S * B, E]. Flattened
// into one GEMM, the rows are sequence-major: a batch split over ranks is
// then a strided set of rows, which no block sharding describes, and
// data parallelism gathers the whole batch before every projection (and
// computes it on every rank). A linear layer treats its rows alike, so the
// rows can be taken in the order the transpose's input holds them
// (batch-major) and the result put back in the model's order afterwards.
// See Passes.td for the contract.
//
//===----------------------------------------------------------------------===//

#include "passes/BiasAdd.h"
#include "passes/Passes.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_LINEARROWORDERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The common refinement of two shapes of the same element count: the
/// factors both shapes are products of consecutive runs of, and for each
/// dim of either shape the index of its first factor (plus the count at
/// the end). Fails when the shapes cut each other's dims unevenly
/// ([4, 6] against [6, 4]) or have dims of size 1 (no use here).
struct Refinement {
  SmallVector<int64_t> factors;
  SmallVector<int64_t> firstOfA, firstOfB;
};

std::optional<Refinement> refine(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (llvm::is_contained(a, 1) || llvm::is_contained(b, 1))
    return std::nullopt;
  Refinement r;
  size_t i = 0, j = 0;
  int64_t restA = a.empty() ? 1 : a[0], restB = b.empty() ? 1 : b[0];
  r.firstOfA.push_back(0);
  r.firstOfB.push_back(0);
  while (i < a.size() && j < b.size()) {
    int64_t factor = std::min(restA, restB);
    if (restA % factor || restB % factor)
      return std::nullopt;
    r.factors.push_back(factor);
    restA /= factor;
    restB /= factor;
    int64_t next = static_cast<int64_t>(r.factors.size());
    if (restA == 1 && ++i < a.size()) {
      restA = a[i];
      r.firstOfA.push_back(next);
    }
    if (restB == 1 && ++j < b.size()) {
      restB = b[j];
      r.firstOfB.push_back(next);
    }
  }
  if (i != a.size() || j != b.size())
    return std::nullopt;
  r.firstOfA.push_back(static_cast<int64_t>(r.factors.size()));
  r.firstOfB.push_back(static_cast<int64_t>(r.factors.size()));
  return r;
}

/// reshape(x) to `shape`, reading through a reshape that made x, and x
/// itself when it has that shape already.
Value reshaped(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  if (auto inner = x.getDefiningOp<ReshapeOp>())
    x = inner.getInput();
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, type.clone(shape), x);
}

Value transposed(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  return TransposeOp::create(b, loc, type.clone(shape), x,
                             b.getDenseI64ArrayAttr(perm));
}

/// How to take the rows of a product's left operand A in the order the
/// transpose making A read them from: Y reshaped to `yRefined`, transposed
/// by `order` (rows first), and the row factors' sizes in that order;
/// `back` puts a result of those row dims (and the columns) in A's order.
struct RowOrder {
  Value y;
  SmallVector<int64_t> yRefined, order, rowShape, back;
  /// batchRowOrder's: the batch dim of Y, and of the result put back.
  std::optional<int64_t> batchDim;
};

std::optional<RowOrder> rowOrderOf(Value a) {
  auto aType = cast<RankedTensorType>(a.getType());
  auto view = a.getDefiningOp<ReshapeOp>();
  auto transpose = (view ? view.getInput() : a).getDefiningOp<TransposeOp>();
  if (!transpose || aType.getRank() < 2)
    return std::nullopt;
  ArrayRef<int64_t> perm = transpose.getPermutation();
  // Factors common to T (the transpose's result) and A.
  std::optional<Refinement> r =
      refine(transpose.getType().getShape(), aType.getShape());
  if (!r)
    return std::nullopt;
  int64_t firstColumn = r->firstOfB[aType.getRank() - 1];
  // Y's dim j is T's dim i with perm[i] == j: Y's factors in its order.
  SmallVector<int64_t> yFactors;
  for (int64_t j = 0, e = perm.size(); j < e; ++j) {
    int64_t i = llvm::find(perm, j) - perm.begin();
    for (int64_t f = r->firstOfA[i]; f < r->firstOfA[i + 1]; ++f)
      yFactors.push_back(f);
  }
  SmallVector<int64_t> rowsInY;
  for (int64_t f : yFactors)
    if (f < firstColumn)
      rowsInY.push_back(f);
  if (llvm::equal(rowsInY, llvm::seq<int64_t>(0, firstColumn)))
    return std::nullopt;
  RowOrder o;
  o.y = transpose.getInput();
  auto positionInY = [&](int64_t f) {
    return static_cast<int64_t>(llvm::find(yFactors, f) - yFactors.begin());
  };
  for (int64_t f : yFactors)
    o.yRefined.push_back(r->factors[f]);
  // The rows in Y's order, then the columns in A's (the weight's) order.
  for (int64_t f : rowsInY)
    o.order.push_back(positionInY(f));
  for (int64_t f = firstColumn, e = r->factors.size(); f < e; ++f)
    o.order.push_back(positionInY(f));
  o.back.resize(rowsInY.size() + 1);
  for (auto [position, f] : llvm::enumerate(rowsInY)) {
    o.rowShape.push_back(r->factors[f]);
    o.back[f] = position;
  }
  o.back.back() = rowsInY.size();
  return o;
}

/// Where the samples of the data inputs (dim 0 of each, the frontend takes
/// them batch-first) lie in the values computed from them, followed op by
/// op: through transposes, reshapes that keep the dim whole, gathers by
/// the values, and ops whose result keeps an operand's rank and the size
/// of its batch dim (elementwise ops, normalizations, products by a
/// weight). A guess where it is wrong costs speed only: reordering a
/// product's rows is exact whatever order it takes.
class BatchDims {
public:
  explicit BatchDims(func::FuncOp func) {
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), CleaveDialect::kInputAttrName) &&
          cast<RankedTensorType>(arg.getType()).getRank() > 0)
        dims[arg] = 0;
    func.walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (std::optional<int64_t> dim = follow(op, result))
          dims[result] = *dim;
    });
  }

  void set(Value value, int64_t dim) { dims[value] = dim; }

  std::optional<int64_t> of(Value value) const {
    auto it = dims.find(value);
    return it == dims.end() ? std::nullopt : std::optional(it->second);
  }

private:
  std::optional<int64_t> follow(Operation *op, Value result) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      return std::nullopt;
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      std::optional<int64_t> in = of(transpose.getInput());
      if (!in)
        return std::nullopt;
      return llvm::find(transpose.getPermutation(), *in) -
             transpose.getPermutation().begin();
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      auto inType = reshape.getInput().getType();
      std::optional<int64_t> in = of(reshape.getInput());
      if (!in || inType.getDimSize(*in) == 1)
        return std::nullopt;
      // The dim of the same size after the same number of elements.
      int64_t before = 1, after = 1;
      for (int64_t d = 0; d < *in; ++d)
        before *= inType.getDimSize(d);
      for (int64_t d = 0; d < type.getRank(); after *= type.getDimSize(d++))
        if (after == before && type.getDimSize(d) == inType.getDimSize(*in))
          return d;
      return std::nullopt;
    }
    if (auto gather = dyn_cast<GatherOp>(op)) {
      std::optional<int64_t> in = of(gather.getIndices());
      return in ? std::optional(*in + gather.getAxis()) : std::nullopt;
    }
    for (Value operand : op->getOperands()) {
      std::optional<int64_t> in = of(operand);
      auto operandType = dyn_cast<RankedTensorType>(operand.getType());
      if (in && operandType && operandType.getRank() == type.getRank() &&
          operandType.getDimSize(*in) == type.getDimSize(*in))
        return in;
    }
    return std::nullopt;
  }

  DenseMap<Value, int64_t> dims;
};

/// The permutation that brings dim `dim` of a rank-`rank` value first,
/// the others after it in order.
SmallVector<int64_t> batchFirst(int64_t dim, int64_t rank) {
  SmallVector<int64_t> perm{dim};
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim)
      perm.push_back(d);
  return perm;
}

/// The rows of `a` (a product's left operand: Y of rank 3 or more, or its
/// view as rows [rows, K]) batch first, where Y's batch (BatchDims) is one
/// of its row dims but not the first: a sequence-first model's [S, B, E]
/// activations, whose batch split would otherwise be strided rows.
std::optional<RowOrder> batchRowOrder(Value a, const BatchDims &batch) {
  auto view = a.getDefiningOp<ReshapeOp>();
  Value y = view ? view.getInput() : a;
  auto yType = cast<RankedTensorType>(y.getType());
  auto aType = cast<RankedTensorType>(a.getType());
  int64_t rank = yType.getRank();
  std::optional<int64_t> dim = batch.of(y);
  if (rank < 3 || !dim || *dim == 0 || *dim >= rank - 1 ||
      yType.getShape().back() != aType.getShape().back())
    return std::nullopt;
  RowOrder o;
  o.y = y;
  o.yRefined.assign(yType.getShape().begin(), yType.getShape().end());
  o.order = batchFirst(*dim, rank);
  for (int64_t d : ArrayRef<int64_t>(o.order).drop_back())
    o.rowShape.push_back(yType.getDimSize(d));
  o.batchDim = dim;
  // Result dim i (Y's row dim i, then the columns) from the batch-first one.
  for (int64_t d = 0; d < rank; ++d)
    o.back.push_back(d < *dim ? d + 1 : d == *dim ? 0 : d);
  return o;
}

/// Rewrites a product of A's rows by a weight, `matmul(A, W)` (W of rank
/// 2, with the bias add after it) or `gemm(A, W, c)` (A not transposed, c
/// absent or a vector), where A's rows come from a transpose in another
/// order than its input holds them (RowOrder). Returns whether it did.
bool orderRows(Operation *product, Value a, BatchDims &batch) {
  auto resultType = cast<RankedTensorType>(product->getResult(0).getType());
  if (!resultType.getElementType().isF32())
    return false;
  std::optional<RowOrder> o = rowOrderOf(a);
  if (!o)
    o = batchRowOrder(a, batch);
  if (!o)
    return false;
  auto matmul = dyn_cast<MatmulOp>(product);
  auto [bias, add] =
      matmul ? biasAddOf(matmul.getResult()) : std::pair<Value, AddOp>();
  Operation *replaced = add ? add.getOperation() : product;
  OpBuilder b(replaced);
  Location loc = product->getLoc();
  auto aType = cast<RankedTensorType>(a.getType());
  int64_t k = aType.getShape().back(), n = resultType.getShape().back();
  int64_t rows = aType.getNumElements() / k;
  Value rowsFirst =
      reshaped(b, loc,
               transposed(b, loc, reshaped(b, loc, o->y, o->yRefined), o->order),
               {rows, k});
  Type productType = resultType.clone({rows, n});
  Value result;
  if (matmul) {
    result = MatmulOp::create(b, loc, productType, rowsFirst, matmul.getRhs());
    if (add)
      result = AddOp::create(b, loc, productType, result, bias);
  } else {
    auto gemm = cast<GemmOp>(product);
    result = GemmOp::create(b, loc, productType, rowsFirst, gemm.getB(),
                            gemm.getC(), gemm.getAlphaAttr(),
                            gemm.getBetaAttr(), gemm.getTransAAttr(),
                            gemm.getTransBAttr());
  }
  SmallVector<int64_t> rowShape(o->rowShape);
  rowShape.push_back(n);
  result = transposed(b, loc, reshaped(b, loc, result, rowShape), o->back);
  if (o->batchDim)
    batch.set(result, *o->batchDim); // for a loss over the same rows
  result = reshaped(b, loc, result, resultType.getShape());
  replaced->getResult(0).replaceAllUsesWith(result);
  if (add)
    add.erase();
  product->erase();
  return true;
}

/// For `value`, a view as rows of a value Y whose batch (BatchDims) is one
/// of its dims but not the first nor one of its last `columns`: Y and the
/// permutation that brings its batch first.
std::optional<std::pair<Value, SmallVector<int64_t>>>
batchFirstView(Value value, const BatchDims &batch, int64_t columns) {
  auto view = value.getDefiningOp<ReshapeOp>();
  if (!view)
    return std::nullopt;
  Value y = view.getInput();
  std::optional<int64_t> dim = batch.of(y);
  if (!dim || *dim == 0 ||
      *dim >= cast<RankedTensorType>(y.getType()).getRank() - columns)
    return std::nullopt;
  return std::make_pair(
      y, batchFirst(*dim, cast<RankedTensorType>(y.getType()).getRank()));
}

/// A sequence-first model's loss over [S * B] rows of scores and labels,
/// viewed from [S, B, ...]: the same rows batch first (a sum over them
/// does not depend on their order), so that a batch split reaches the
/// loss unstrided. Only where the rows' losses are summed (not `none`)
/// and nothing reads the log-probabilities (the gradient does, later).
bool orderLossRows(SoftmaxCrossEntropyOp loss, const BatchDims &batch) {
  if (loss.getReduction() == LossReduction::None ||
      !loss.getLogProb().use_empty() ||
      loss.getScores().getType().getRank() != 2)
    return false;
  // Scores [..., C] and labels [...] of the same rows, batch at one dim.
  auto scores = batchFirstView(loss.getScores(), batch, 1);
  auto labels = batchFirstView(loss.getLabels(), batch, 0);
  if (!scores || !labels ||
      ArrayRef<int64_t>(scores->second).drop_back() !=
          ArrayRef<int64_t>(labels->second) ||
      cast<RankedTensorType>(scores->first.getType()).getShape().drop_back() !=
          cast<RankedTensorType>(labels->first.getType()).getShape())
    return false;
  OpBuilder b(loss);
  Location loc = loss.getLoc();
  loss.getScoresMutable().assign(
      ReshapeOp::create(b, loc, loss.getScores().getType(),
                        transposed(b, loc, scores->first, scores->second)));
  loss.getLabelsMutable().assign(
      ReshapeOp::create(b, loc, loss.getLabels().getType(),
                        transposed(b, loc, labels->first, labels->second)));
  return true;
}

/// Whether `gemm`'s rows can be reordered: A read untransposed and c
/// absent or the same for every row.
bool rowsIndependent(GemmOp gemm) {
  if (gemm.getTransA())
    return false;
  Value c = gemm.getC();
  return !c || cast<RankedTensorType>(c.getType()).getRank() <= 1;
}

struct LinearRowOrderPass
    : mlir::cleave::impl::LinearRowOrderPassBase<LinearRowOrderPass> {
  void runOnOperation() override {
    SmallVector<std::pair<Operation *, Value>> products;
    getOperation().walk([&](Operation *op) {
      if (auto matmul = dyn_cast<MatmulOp>(op);
          matmul && matmul.getRhs().getType().getRank() == 2)
        products.push_back({op, matmul.getLhs()});
      else if (auto gemm = dyn_cast<GemmOp>(op); gemm && rowsIndependent(gemm))
        products.push_back({op, gemm.getA()});
    });
    BatchDims batch(getOperation());
    bool changed = false;
    for (auto [product, a] : products)
      changed |= orderRows(product, a, batch);
    SmallVector<SoftmaxCrossEntropyOp> losses;
    getOperation().walk(
        [&](SoftmaxCrossEntropyOp loss) { losses.push_back(loss); });
    for (SoftmaxCrossEntropyOp loss : losses)
      changed |= orderLossRows(loss, batch);
    if (!changed)
      return;
    // A reshape of a reshape reads the first one's input (the model's view
    // back to [S, B, N] after the one put back here); dead views go.
    SmallVector<Operation *> views;
    getOperation().walk([&](Operation *op) {
      if (isa<ReshapeOp, TransposeOp>(op))
        views.push_back(op);
    });
    for (Operation *op : views)
      if (auto reshape = dyn_cast<ReshapeOp>(op))
        if (auto inner = reshape.getInput().getDefiningOp<ReshapeOp>())
          reshape.getInputMutable().assign(inner.getInput());
    for (Operation *op : llvm::reverse(views)) {
      if (auto reshape = dyn_cast<ReshapeOp>(op);
          reshape && reshape.getInput().getType() == reshape.getType())
        reshape.replaceAllUsesWith(reshape.getInput());
      if (op->use_empty())
        op->erase();
    }
  }
};

} // namespace
