//===- FoldTransposes.cpp - linear layers as GEMMs with trans flags -------===//
//
// PyTorch exports a Linear layer on activations of rank 3 or more (a
// transformer's) as MatMul(x, Transpose(W)) and a bias Add. Run as it is,
// the step transposes every weight in the forward pass, and the backward
// pass transposes it back, transposes the activations to [batch, K, M],
// multiplies per batch entry and sums the products. As one 2-d GEMM on the
// flattened rows, the transposes are GEMM flags, the bias is the GEMM's C
// and the weight gradient is one GEMM. See Passes.td for the contract.
//
//===----------------------------------------------------------------------===//

#include "passes/BiasAdd.h"
#include "passes/Passes.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_FOLDTRANSPOSESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The input of `value` when it is a 2-d transpose, else null.
Value transposedFrom(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose || transpose.getInput().getType().getRank() != 2)
    return {};
  ArrayRef<int64_t> perm = transpose.getPermutation();
  return perm[0] == 1 && perm[1] == 0 ? transpose.getInput() : Value();
}

/// matmul(x [..., M, K], W [K, N] or transpose(W [N, K])) (+ bias [N]) as
/// reshape(gemm(reshape(x, [rows, K]), W, bias), [..., M, N]).
void formGemm(MatmulOp matmul) {
  auto lhsType = matmul.getLhs().getType();
  auto rhsType = matmul.getRhs().getType();
  auto resultType = matmul.getType();
  if (lhsType.getRank() < 2 || rhsType.getRank() != 2 ||
      !resultType.getElementType().isF32())
    return;
  auto [bias, add] = biasAddOf(matmul.getResult());
  // At the add, which the bias dominates (the matmul's only user).
  OpBuilder b(add ? add.getOperation() : matmul.getOperation());
  Location loc = matmul.getLoc();
  Type f32 = resultType.getElementType();
  int64_t k = lhsType.getShape().back(), n = resultType.getShape().back();
  int64_t rows = lhsType.getNumElements() / k;

  Value a = matmul.getLhs();
  if (lhsType.getRank() != 2)
    a = ReshapeOp::create(b, loc, RankedTensorType::get({rows, k}, f32), a);
  Value weight = matmul.getRhs();
  bool transB = false;
  if (Value untransposed = transposedFrom(weight)) {
    weight = untransposed;
    transB = true;
  }
  auto gemm = GemmOp::create(
      b, loc, RankedTensorType::get({rows, n}, f32), a, weight, bias,
      b.getF32FloatAttr(1.0f), b.getF32FloatAttr(bias ? 1.0f : 0.0f),
      b.getBoolAttr(false), b.getBoolAttr(transB));
  Value result = gemm.getResult();
  if (resultType.getRank() != 2)
    result = ReshapeOp::create(b, loc, resultType, result);
  if (add) {
    add.replaceAllUsesWith(result);
    add.erase();
  }
  matmul.replaceAllUsesWith(result);
  matmul.erase();
}

/// gemm(transpose(x), ...) reads x with the operand's trans flag flipped.
void foldOperandTransposes(GemmOp gemm) {
  while (Value a = transposedFrom(gemm.getA())) {
    gemm.getAMutable().assign(a);
    gemm.setTransA(!gemm.getTransA());
  }
  while (Value b = transposedFrom(gemm.getB())) {
    gemm.getBMutable().assign(b);
    gemm.setTransB(!gemm.getTransB());
  }
}

/// transpose(transpose(x, p), q) as transpose(x, p[q]) (or x itself): the
/// backward pass transposes the gradients of transposed values, so that a
/// batched product can then read x through strides (codegen/FusionPlan.h).
void composeTransposes(TransposeOp outer) {
  auto inner = outer.getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return;
  ArrayRef<int64_t> p = inner.getPermutation();
  SmallVector<int64_t> composed;
  for (int64_t q : outer.getPermutation())
    composed.push_back(p[q]);
  Value source = inner.getInput();
  if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size()))) {
    outer.replaceAllUsesWith(source);
    return;
  }
  outer.getInputMutable().assign(source);
  outer.setPermutation(composed);
}

struct FoldTransposesPass
    : mlir::cleave::impl::FoldTransposesPassBase<FoldTransposesPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) { matmuls.push_back(op); });
    for (MatmulOp matmul : matmuls)
      formGemm(matmul);
    SmallVector<TransposeOp> transposes;
    getOperation().walk([&](Operation *op) {
      if (auto gemm = dyn_cast<GemmOp>(op))
        foldOperandTransposes(gemm);
      else if (auto transpose = dyn_cast<TransposeOp>(op)) {
        composeTransposes(transpose);
        transposes.push_back(transpose);
      }
    });
    // The transposes only the GEMMs read (users first: a transpose of a
    // transpose).
    for (TransposeOp transpose : llvm::reverse(transposes))
      if (transpose->use_empty())
        transpose.erase();
  }
};

} // namespace
