//===- EmitTraining.cpp - randomness and optimizers -----------------------===//
//
// Dropout and the random generators (pure functions of seed, op number,
// step and index), the learning-rate schedule and the optimizer updates
// (runtime/KernelsTraining.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

/// A random op's own seed, else the program's.
static std::string randomSeed(IntegerAttr seed) {
  return seed ? formatv("{0}ull", static_cast<uint64_t>(seed.getInt())).str()
              : std::string("ctx.seed");
}

std::string Emitter::learningRate(APFloat lr, Value factor) {
  // The factor is a tensor the schedule op wrote: in device memory on the
  // cuda target, read through the target's scalar read.
  std::string text = floatLiteral(lr.convertToFloat()) + "f";
  return factor ? text + " * " + scalar(factor) : text;
}

LogicalResult Emitter::emitOperation(DropoutOp dropout) {
  if (!dropout.getTraining()) {
    call(dropout,
         formatv("{0}({1}, {2}, {3})", traits.copyFunction,
                 ref(dropout.getInput()), numElements(dropout.getInput()),
                 ref(dropout.getOutput())));
    call(dropout,
         formatv("{0}({1}, {2}, true)", traits.fillFunction,
                 ref(dropout.getMask()), numElements(dropout.getMask())));
    return success();
  }
  // Masks are a pure function of (seed, dropout number, step, index),
  // the same in every run and on every target. A block's rows are strided
  // in the whole tensor when it is split after dim 0.
  int64_t rowLength = dropout.getRowElements();
  int64_t rowStride = dropout.getRowStride().value_or(rowLength);
  call(dropout,
       formatv("dropout({0}, {1}, {2}f, ctx.seed, {3}, ctx.step, {4}, {5}, "
               "{6}, {7}, {8})",
               ref(dropout.getInput()), numElements(dropout.getInput()),
               floatLiteral(dropout.getRatio().convertToFloat()),
               dropoutNumber.lookup(dropout),
               dropout.getOffset() ? ref(dropout.getOffset()) : "nullptr",
               rowLength, rowStride, ref(dropout.getOutput()),
               ref(dropout.getMask())));
  return success();
}

LogicalResult Emitter::emitOperation(RandomUniformOp random) {
  call(random,
       formatv("randomUniform({0}, {1}, {2}f, {3}f, {4}, {5}, "
               "ctx.step)",
               ref(random.getResult()), numElements(random.getResult()),
               floatLiteral(random.getLow().convertToFloat()),
               floatLiteral(random.getHigh().convertToFloat()),
               randomSeed(random.getSeedAttr()), randomNumber.lookup(random)));
  return success();
}

LogicalResult Emitter::emitOperation(RandomNormalOp random) {
  call(random,
       formatv("randomNormal({0}, {1}, {2}f, {3}f, {4}, {5}, "
               "ctx.step)",
               ref(random.getResult()), numElements(random.getResult()),
               floatLiteral(random.getMean().convertToFloat()),
               floatLiteral(random.getScale().convertToFloat()),
               randomSeed(random.getSeedAttr()), randomNumber.lookup(random)));
  return success();
}

LogicalResult Emitter::emitOperation(LrScheduleOp schedule) {
  StringRef kind = schedule.getSchedule();
  std::string factor =
      formatv("lrScheduleFactor(Schedule::{0}, {1}, {2}, {3}f, ctx.step)",
              kind == "cosine"   ? "Cosine"
              : kind == "linear" ? "Linear"
                                 : "Constant",
              schedule.getWarmupStepsAttr().getInt(),
              schedule.getTotalStepsAttr().getInt(),
              floatLiteral(schedule.getMinFactor().convertToFloat()));
  call(schedule,
       formatv(traits.writeScalar, ref(schedule.getFactor()), factor));
  return success();
}

std::string Emitter::sgdOptions(SgdOp sgd) {
  return formatv("{0}, {1}f, {2}f, {3}, {4}f, ctx.step",
                 learningRate(sgd.getLr(), sgd.getLrFactor()),
                 floatLiteral(sgd.getMomentum().convertToFloat()),
                 floatLiteral(sgd.getDampening().convertToFloat()),
                 sgd.getNesterov(),
                 floatLiteral(sgd.getWeightDecay().convertToFloat()));
}

LogicalResult Emitter::emitOperation(SgdOp sgd) {
  if (auto conv = sgd.getGrad().getDefiningOp<ConvGradWeightOp>();
      conv && backward.convWithUpdate.count(conv)) {
    body << "  // " << baseName(sgd)
         << ": in the weight gradient's convGradWeightSgd\n";
    return success();
  }
  if (auto slice = sgd.getGrad().getDefiningOp<SliceGradOp>();
      slice && fusion.liveTapUpdates.count(slice) &&
      !changesLiveTapsAlone(sgd)) {
    // Every tap stepped, with the slice's gradient at its taps and zero at
    // the others (FusionPlan.h).
    call(sgd, formatv("sgdUpdateLiveTaps({0}, {1}, {2}, {3}, {4}, {5}, {6})",
                      ref(slice.getOutputGrad()),
                      shapeLiteral(slice.getOutputGrad()),
                      window(slice, slice.getOffsets(), "offsets"),
                      ref(sgd.getParam()), shapeLiteral(sgd.getParam()),
                      nullable(sgd.getMomentumBuffer()), sgdOptions(sgd)));
    return success();
  }
  if (auto slice = sgd.getGrad().getDefiningOp<SliceGradOp>();
      slice && fusion.liveTapUpdates.count(slice)) {
    // w += -lr * g at the taps the slice_grad would fill; the cached copy
    // of w's live taps, where it has one, takes the update (FusionPlan.h).
    std::string cached = croppedWeightRef(sgd.getParam());
    call(sgd, formatv("sgdLiveTaps({0}, {1}, {2}, {3}, {4}, {5}{6})",
                      ref(slice.getOutputGrad()),
                      shapeLiteral(slice.getOutputGrad()),
                      window(slice, slice.getOffsets(), "offsets"),
                      learningRate(sgd.getLr(), sgd.getLrFactor()),
                      ref(sgd.getParam()), shapeLiteral(sgd.getParam()),
                      cached.empty() ? "" : ", &" + cached));
    return success();
  }
  if (backward.fusedUpdates.contains(sgd)) {
    body << "  // " << baseName(sgd)
         << ": in the input gradient's linearBackwardSgd\n";
    return success();
  }
  if (Operation *producer = sgd.getGrad().getDefiningOp();
      producer && plan.gemmInUpdate.count(producer)) {
    // param += (-lr * alpha) * op(a) * op(b): the gradient is never
    // stored, and the parameter is read and written once.
    auto gemm = cast<GemmOp>(producer);
    float alpha =
        -sgd.getLr().convertToFloat() * gemm.getAlpha().convertToFloat();
    call(sgd, gemmCall(gemm, floatLiteral(alpha) + "f", "1.0f",
                       ref(sgd.getParam())));
    return success();
  }
  call(sgd, formatv("sgdUpdate({0}, {1}, {2}, {3}, {4})", ref(sgd.getParam()),
                    ref(sgd.getGrad()), nullable(sgd.getMomentumBuffer()),
                    numElements(sgd.getParam()), sgdOptions(sgd)));
  return success();
}

LogicalResult Emitter::emitOperation(AdamwOp adamw) {
  call(adamw, formatv("adamwUpdate({0}, {1}, {2}, {3}, {4}, {5}, {6}f, {7}f, "
                      "{8}f, {9}f, ctx.step)",
                      ref(adamw.getParam()), ref(adamw.getGrad()),
                      ref(adamw.getExpAvg()), ref(adamw.getExpAvgSq()),
                      numElements(adamw.getParam()),
                      learningRate(adamw.getLr(), adamw.getLrFactor()),
                      floatLiteral(adamw.getBeta1().convertToFloat()),
                      floatLiteral(adamw.getBeta2().convertToFloat()),
                      floatLiteral(adamw.getEps().convertToFloat()),
                      floatLiteral(adamw.getWeightDecay().convertToFloat())));
  return success();
}

LogicalResult Emitter::emitOperation(MomentumOp momentum) {
  size_t count = momentum.getParams().size();
  for (size_t i = 0; i < count; ++i)
    call(momentum,
         formatv("onnxMomentumUpdate({0}, {1}, {2}, {3}, {4}, "
                 "static_cast<int64_t>({5}), {6}f, {7}f, {8}f, "
                 "{9}, {10}, {11})",
                 ref(momentum.getParams()[i]), ref(momentum.getGrads()[i]),
                 ref(momentum.getVelocities()[i]),
                 numElements(momentum.getParams()[i]), scalar(momentum.getLr()),
                 scalar(momentum.getStep()),
                 floatLiteral(momentum.getAlpha().convertToFloat()),
                 floatLiteral(momentum.getBeta().convertToFloat()),
                 floatLiteral(momentum.getNormCoefficient().convertToFloat()),
                 momentum.getMode() == MomentumMode::Nesterov,
                 ref(momentum.getNewParams()[i]),
                 ref(momentum.getNewVelocities()[i])));
  return success();
}

LogicalResult Emitter::emitOperation(AdamOp adam) {
  size_t count = adam.getParams().size();
  for (size_t i = 0; i < count; ++i)
    call(adam,
         formatv("onnxAdamUpdate({0}, {1}, {2}, {3}, {4}, {5}, "
                 "static_cast<int64_t>({6}), {7}f, {8}f, {9}f, "
                 "{10}f, {11}f, {12}, {13}, {14})",
                 ref(adam.getParams()[i]), ref(adam.getGrads()[i]),
                 ref(adam.getFirstMoments()[i]),
                 ref(adam.getSecondMoments()[i]),
                 numElements(adam.getParams()[i]), scalar(adam.getLr()),
                 scalar(adam.getStep()),
                 floatLiteral(adam.getAlpha().convertToFloat()),
                 floatLiteral(adam.getBeta().convertToFloat()),
                 floatLiteral(adam.getEpsilon().convertToFloat()),
                 floatLiteral(adam.getNormCoefficient().convertToFloat()),
                 floatLiteral(adam.getNormCoefficientPost().convertToFloat()),
                 ref(adam.getNewParams()[i]), ref(adam.getNewFirstMoments()[i]),
                 ref(adam.getNewSecondMoments()[i])));
  return success();
}

LogicalResult Emitter::emitOperation(AdagradOp adagrad) {
  size_t count = adagrad.getParams().size();
  for (size_t i = 0; i < count; ++i)
    call(adagrad,
         formatv("onnxAdagradUpdate({0}, {1}, {2}, {3}, {4}, "
                 "static_cast<int64_t>({5}), {6}f, {7}f, {8}f, "
                 "{9}, {10})",
                 ref(adagrad.getParams()[i]), ref(adagrad.getGrads()[i]),
                 ref(adagrad.getAccumulators()[i]),
                 numElements(adagrad.getParams()[i]), scalar(adagrad.getLr()),
                 scalar(adagrad.getStep()),
                 floatLiteral(adagrad.getDecayFactor().convertToFloat()),
                 floatLiteral(adagrad.getEpsilon().convertToFloat()),
                 floatLiteral(adagrad.getNormCoefficient().convertToFloat()),
                 ref(adagrad.getNewParams()[i]),
                 ref(adagrad.getNewAccumulators()[i])));
  return success();
}

} // namespace mlir::cleave::codegen
