//===- EmitLinalg.cpp - GEMM and matmul -----------------------------------===//
//
// runtime/KernelsLinalg.cpp: OpenBLAS on the cpu target, cuBLAS and
// cuBLASLt (with its bias and ReLU epilogues) on the cuda target. A GEMM may
// run in another op's call: a gradient GEMM in its plain-SGD update, an
// update in its input gradient's linearBackwardSgd (FusionPlan.h).
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

std::string Emitter::gemmCall(GemmOp gemm, const std::string &alpha,
                              const std::string &beta, const std::string &out) {
  ArrayRef<int64_t> a = tensorType(gemm.getA()).getShape();
  ArrayRef<int64_t> r = tensorType(gemm.getResult()).getShape();
  return formatv("gemm({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9})",
                 gemm.getTransA(), gemm.getTransB(), r[0], r[1],
                 gemm.getTransA() ? a[0] : a[1], alpha, ref(gemm.getA()),
                 ref(gemm.getB()), beta, out)
      .str();
}

LogicalResult Emitter::emitOperation(GemmOp gemm) {
  // A gradient GEMM of a plain SGD update runs there.
  if (plan.gemmInUpdate.count(gemm))
    return success();
  if (SgdOp sgd = backward.updateWithInputGradient.lookup(gemm)) {
    // dx = dy w, then w += -lr * dy^T x: one pass over w.
    auto update = cast<GemmOp>(sgd.getGrad().getDefiningOp());
    ArrayRef<int64_t> dyShape = tensorType(gemm.getA()).getShape();
    ArrayRef<int64_t> wShape = tensorType(gemm.getB()).getShape();
    call(gemm, formatv("linearBackwardSgd({0}, {1}, {2}, {3}, {4}, {5}, "
                       "{6}f, {7})",
                       dyShape[0], wShape[0], wShape[1], ref(gemm.getA()),
                       ref(sgd.getParam()), ref(update.getB()),
                       floatLiteral(-sgd.getLr().convertToFloat()),
                       ref(gemm.getResult())));
    return success();
  }
  ArrayRef<int64_t> a = tensorType(gemm.getA()).getShape();
  ArrayRef<int64_t> r = tensorType(gemm.getResult()).getShape();
  int64_t k = gemm.getTransA() ? a[0] : a[1];
  float beta = gemm.getBeta().convertToFloat();
  Value c = gemm.getC();
  // On the cuda target a bias row ([N] or [1, N]) added with beta 1 is
  // cuBLASLt's bias epilogue: one kernel instead of broadcastTo and
  // gemm; with the ReLU that alone reads the result (in place, see
  // MemoryPlan), its RELU_BIAS epilogue.
  if (traits.gemmBiasEpilogue && c && beta == 1.0f) {
    ArrayRef<int64_t> cShape = tensorType(c).getShape();
    bool biasRow = (cShape.size() == 1 || cShape.size() == 2) &&
                   cShape.back() == r[1] &&
                   (cShape.size() == 1 || cShape[0] == 1);
    if (biasRow) {
      Value result = gemm.getResult();
      auto relu = result.hasOneUse() ? dyn_cast<ReluOp>(*result.user_begin())
                                     : ReluOp();
      bool withRelu = relu && !fusion.fusedAway.contains(relu) &&
                      !fusion.groups.count(relu) && runsOnStage(relu, stage) &&
                      plan.root(relu.getResult()) == plan.root(result);
      if (withRelu)
        reluInGemm.insert(relu);
      call(gemm, formatv("gemmBias({0}, {1}, {2}, {3}, {4}, {5}f, {6}, "
                         "{7}, {8}, {9}, GemmEpilogue::{10})",
                         gemm.getTransA(), gemm.getTransB(), r[0], r[1], k,
                         floatLiteral(gemm.getAlpha().convertToFloat()),
                         ref(gemm.getA()), ref(gemm.getB()), ref(c),
                         ref(result), withRelu ? "BiasRelu" : "Bias"));
      return success();
    }
  }
  // (Accumulating into C's own buffer needs no copy.)
  if (!c)
    beta = 0;
  else if (plan.root(gemm.getResult()) != plan.root(c))
    call(gemm,
         formatv("broadcastTo({0}, {1}, {2}, {3})", ref(c), shapeLiteral(c),
                 ref(gemm.getResult()), shapeLiteral(gemm.getResult())));
  call(gemm,
       gemmCall(gemm, floatLiteral(gemm.getAlpha().convertToFloat()) + "f",
                floatLiteral(beta) + "f", ref(gemm.getResult())));
  return success();
}

void Emitter::emitStridedMatmul(MatmulOp matmul, Operation *at) {
  auto [a, aStrides] = stridedMatmulView(matmul, 0, fusion);
  auto [b, bStrides] = stridedMatmulView(matmul, 1, fusion);
  auto [c, cStrides] = stridedMatmulView(matmul, -1, fusion);
  ArrayRef<int64_t> shape = tensorType(matmul.getResult()).getShape();
  size_t r = shape.size();
  std::string base = baseName(at);
  std::string aName = array(base + "_a_strides", aStrides);
  std::string bName = array(base + "_b_strides", bStrides);
  std::string cName = array(base + "_c_strides", cStrides);
  call(at, formatv("matmulStrided(Shape{0}, {1}, {2}, {3}, {4}, {5}, {6}, "
                   "{7}, {8}, {9})",
                   listLiteral(shape.drop_back(2)), shape[r - 2], shape[r - 1],
                   tensorType(matmul.getLhs()).getShape().back(), ref(a),
                   aName, ref(b), bName, ref(c), cName));
}

LogicalResult Emitter::emitOperation(MatmulOp matmul) {
  // Transposed operands read through strides (planStridedMatmuls; one run
  // at its result's transpose is emitted there).
  if (runsStrided(matmul, fusion)) {
    emitStridedMatmul(matmul, matmul);
    return success();
  }
  call(matmul,
       formatv("matmul({0}, {1}, {2}, {3}, {4}, {5})", ref(matmul.getLhs()),
               shapeLiteral(matmul.getLhs()), ref(matmul.getRhs()),
               shapeLiteral(matmul.getRhs()), ref(matmul.getResult()),
               shapeLiteral(matmul.getResult())));
  return success();
}

} // namespace mlir::cleave::codegen
