//===- EmitLoss.cpp - losses and their gradients --------------------------===//
//
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss, forward and
// backward (runtime/KernelsLoss.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

/// The runtime's Reduction enumerator.
static const char *reduction(LossReduction r) {
  StringRef name = stringifyLossReduction(r);
  return name == "none"  ? "Reduction::None"
         : name == "sum" ? "Reduction::Sum"
                         : "Reduction::Mean";
}

/// The runtime's (hasIgnoreIndex, ignoreIndex) arguments.
static std::string ignore(IntegerAttr index) {
  return formatv("{0}, {1}", index ? "true" : "false",
                 index ? index.getInt() : 0)
      .str();
}

LogicalResult Emitter::emitOperation(SoftmaxCrossEntropyOp loss) {
  call(loss, formatv("softmaxCrossEntropy({0}, {1}, {2}, {3}, {4}, {5}, "
                     "{6}, {7})",
                     ref(loss.getScores()), shapeLiteral(loss.getScores()),
                     ref(loss.getLabels()), nullable(loss.getWeights()),
                     reduction(loss.getReduction()),
                     ignore(loss.getIgnoreIndexAttr()), ref(loss.getLoss()),
                     ref(loss.getLogProb())));
  return success();
}

LogicalResult Emitter::emitOperation(SoftmaxCrossEntropyGradOp grad) {
  call(grad,
       formatv("softmaxCrossEntropyGrad({0}, {1}, {2}, {3}, {4}, "
               "{5}, {6}, {7})",
               ref(grad.getLossGrad()), ref(grad.getLogProb()),
               shapeLiteral(grad.getLogProb()), ref(grad.getLabels()),
               nullable(grad.getWeights()), reduction(grad.getReduction()),
               ignore(grad.getIgnoreIndexAttr()), ref(grad.getScoresGrad())));
  return success();
}

LogicalResult Emitter::emitOperation(NllLossOp loss) {
  call(loss, formatv("nllLoss({0}, {1}, {2}, {3}, {4}, {5}, {6})",
                     ref(loss.getInput()), shapeLiteral(loss.getInput()),
                     ref(loss.getTarget()), nullable(loss.getWeight()),
                     reduction(loss.getReduction()),
                     ignore(loss.getIgnoreIndexAttr()), ref(loss.getLoss())));
  return success();
}

LogicalResult Emitter::emitOperation(NllLossGradOp grad) {
  call(grad,
       formatv("nllLossGrad({0}, {1}, {2}, {3}, {4}, {5}, {6})",
               ref(grad.getLossGrad()), shapeLiteral(grad.getInputGrad()),
               ref(grad.getTarget()), nullable(grad.getWeight()),
               reduction(grad.getReduction()),
               ignore(grad.getIgnoreIndexAttr()), ref(grad.getInputGrad())));
  return success();
}

} // namespace mlir::cleave::codegen
