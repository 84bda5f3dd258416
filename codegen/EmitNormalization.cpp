//===- EmitNormalization.cpp - softmax, normalizations --------------------===//
//
// Softmax, LogSoftmax, LayerNorm and BatchNorm, forward and backward
// (runtime/KernelsNormalization.cpp), and a split batch's BatchNorm sums
// (runtime/KernelsBatchNorm.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

LogicalResult Emitter::emitOperation(SoftmaxOp softmax) {
  call(softmax,
       formatv("softmax({0}, {1}, {2}, false, {3})", ref(softmax.getInput()),
               shapeLiteral(softmax.getInput()), softmax.getAxis(),
               ref(softmax.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(LogSoftmaxOp softmax) {
  call(softmax,
       formatv("softmax({0}, {1}, {2}, true, {3})", ref(softmax.getInput()),
               shapeLiteral(softmax.getInput()), softmax.getAxis(),
               ref(softmax.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(SoftmaxGradOp grad) {
  call(grad, formatv("softmaxGrad({0}, {1}, {2}, {3}, {4}, {5})",
                     ref(grad.getOutput()), ref(grad.getOutputGrad()),
                     shapeLiteral(grad.getOutput()), grad.getAxis(),
                     grad.getLog(), ref(grad.getInputGrad())));
  return success();
}

LogicalResult Emitter::emitFusedSoftmax(Operation *at,
                                         const SoftmaxFusion &fused) {
  Value maskValue = fused.mask ? fused.mask : fused.condition;
  std::string masking = formatv(
      "SoftmaxMasking{{{0}, {1}, {2}, {3}, {4}, {5}, {6}}",
      nullable(fused.scale), fused.divide, nullable(fused.mask),
      nullable(fused.condition), fused.keepWhen, nullable(fused.fill),
      maskValue ? shapeLiteral(maskValue) : std::string("Shape{}"));
  // The node names of the ops run here, for the reader.
  std::string names;
  for (Operation *op : fused.ops)
    names += " " + baseName(op);
  body << "  // fused softmax:" << names << "\n";
  if (auto grad = dyn_cast<SoftmaxGradOp>(fused.softmax)) {
    call(at, formatv("softmaxGradMasked({0}, {1}, {2}, {3}, {4}, {5}, {6})",
                     ref(grad.getOutput()), ref(grad.getOutputGrad()),
                     shapeLiteral(grad.getOutput()), grad.getAxis(),
                     grad.getLog(), masking, ref(at->getResult(0))));
    return success();
  }
  Value result = fused.softmax->getResult(0);
  int64_t axis = isa<SoftmaxOp>(fused.softmax)
                     ? cast<SoftmaxOp>(fused.softmax).getAxis()
                     : cast<LogSoftmaxOp>(fused.softmax).getAxis();
  call(at, formatv("softmaxMasked({0}, {1}, {2}, {3}, {4}, {5})",
                   ref(fused.input), shapeLiteral(result), axis,
                   isa<LogSoftmaxOp>(fused.softmax), masking, ref(result)));
  return success();
}

LogicalResult Emitter::emitOperation(LayerNormOp norm) {
  call(norm,
       formatv("layerNorm({0}, {1}, {2}, {3}, {4}, {5}f, {6}, {7}, {8})",
               ref(norm.getInput()), shapeLiteral(norm.getInput()),
               norm.getAxis(), ref(norm.getScale()), nullable(norm.getBias()),
               floatLiteral(norm.getEpsilon().convertToFloat()),
               ref(norm.getY()), ref(norm.getMean()),
               ref(norm.getInvStdDev())));
  return success();
}

LogicalResult Emitter::emitOperation(LayerNormGradOp grad) {
  call(grad, formatv("layerNormGrad({0}, {1}, {2}, {3}, {4}, {5}, {6}, "
                     "{7}, {8}, {9})",
                     ref(grad.getOutputGrad()), ref(grad.getInput()),
                     shapeLiteral(grad.getInput()), grad.getAxis(),
                     ref(grad.getScale()), ref(grad.getMean()),
                     ref(grad.getInvStdDev()), ref(grad.getInputGrad()),
                     ref(grad.getScaleGrad()), ref(grad.getBiasGrad())));
  return success();
}

LogicalResult Emitter::emitOperation(BatchNormOp norm) {
  // The batch's statistics when they come from the whole batch of several
  // ranks; the kernel computes them from the input otherwise.
  std::string given;
  for (Value stat : norm.getBatchStatistics())
    given += ", " + ref(stat);
  call(norm,
       formatv("batchNorm({0}, {1}, {2}, {3}, {4}, {5}, {6}f, {7}f, "
               "{8}, {9}, {10}, {11}{12})",
               ref(norm.getInput()), shapeLiteral(norm.getInput()),
               ref(norm.getScale()), ref(norm.getBias()),
               ref(norm.getRunningMean()), ref(norm.getRunningVar()),
               floatLiteral(norm.getEpsilon().convertToFloat()),
               floatLiteral(norm.getMomentum().convertToFloat()),
               norm.getTraining(), ref(norm.getY()),
               ref(norm.getNewRunningMean()), ref(norm.getNewRunningVar()),
               given));
  return success();
}

LogicalResult Emitter::emitOperation(BatchNormGradOp grad) {
  call(grad, formatv("batchNormGrad({0}, {1}, {2}, {3}, {4}f, {5}, {6}, {7})",
                     ref(grad.getOutputGrad()), ref(grad.getInput()),
                     shapeLiteral(grad.getInput()), ref(grad.getScale()),
                     floatLiteral(grad.getEpsilon().convertToFloat()),
                     ref(grad.getInputGrad()), ref(grad.getScaleGrad()),
                     ref(grad.getBiasGrad())));
  return success();
}

LogicalResult Emitter::emitOperation(BatchNormSumOp sum) {
  call(sum, formatv("batchNormSum({0}, {1}, {2}, {3})", ref(sum.getInput()),
                    shapeLiteral(sum.getInput()), sum.getDivisor(),
                    ref(sum.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(BatchNormSquaredDeviationSumOp sum) {
  call(sum, formatv("batchNormSquaredDeviationSum({0}, {1}, {2}, {3}, {4})",
                    ref(sum.getInput()), shapeLiteral(sum.getInput()),
                    ref(sum.getMean()), sum.getDivisor(),
                    ref(sum.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(BatchNormGradSumsOp sums) {
  call(sums, formatv("batchNormGradSums({0}, {1}, {2}, {3}, {4}, {5})",
                     ref(sums.getOutputGrad()), ref(sums.getInput()),
                     shapeLiteral(sums.getInput()), ref(sums.getMean()),
                     ref(sums.getSumGrad()), ref(sums.getSumGradCentered())));
  return success();
}

LogicalResult Emitter::emitOperation(BatchNormGradFromSumsOp grad) {
  call(grad,
       formatv("batchNormGradFromSums({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
               "{8}, {9}f, {10}, {11}, {12})",
               ref(grad.getOutputGrad()), ref(grad.getInput()),
               shapeLiteral(grad.getInput()), ref(grad.getScale()),
               ref(grad.getMean()), ref(grad.getVariance()),
               ref(grad.getSumGrad()), ref(grad.getSumGradCentered()),
               grad.getCount(),
               floatLiteral(grad.getEpsilon().convertToFloat()),
               ref(grad.getInputGrad()), ref(grad.getScaleGrad()),
               ref(grad.getBiasGrad())));
  return success();
}

} // namespace mlir::cleave::codegen
