//===- EmitConvolution.cpp - convolutions and pooling ---------------------===//
//
// Conv (ConvTranspose imports as conv_grad_input) and its gradients,
// max and average pooling (runtime/KernelsConvolution.cpp; cuDNN on the
// cuda target). Window attributes become named arrays beside the call.
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

LogicalResult Emitter::emitOperation(ConvOp conv) {
  std::string strides = window(conv, conv.getStrides(), "strides"),
              pads = window(conv, conv.getPads(), "pads"),
              dilations = window(conv, conv.getDilations(), "dilations");
  std::string cached = croppedWeightRef(conv.getWeight());
  call(conv, formatv("conv({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, "
                     "{9}, {10}{11})",
                     ref(conv.getInput()), shapeLiteral(conv.getInput()),
                     ref(conv.getWeight()), shapeLiteral(conv.getWeight()),
                     nullable(conv.getBias()), strides, pads, dilations,
                     conv.getGroup(), ref(conv.getResult()),
                     shapeLiteral(conv.getResult()),
                     cached.empty() ? "" : ", " + cached));
  return success();
}

LogicalResult Emitter::emitOperation(ConvGradInputOp grad) {
  std::string strides = window(grad, grad.getStrides(), "strides"),
              pads = window(grad, grad.getPads(), "pads"),
              dilations = window(grad, grad.getDilations(), "dilations");
  std::string cached = croppedWeightRef(grad.getWeight());
  call(grad,
       formatv("convGradInput({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
               "{8}, {9}{10})",
               ref(grad.getOutputGrad()), shapeLiteral(grad.getOutputGrad()),
               ref(grad.getWeight()), shapeLiteral(grad.getWeight()), strides,
               pads, dilations, grad.getGroup(), ref(grad.getInputGrad()),
               shapeLiteral(grad.getInputGrad()),
               cached.empty() ? "" : ", " + cached));
  return success();
}

/// Whether a conv_grad_input of the same output gradient comes before
/// `grad` in its block: dy is then one value, unchanged between the two
/// calls, and the cpu runtime's oneDNN passes may share its reorder
/// (convGradWeight's afterGradInput).
static bool followsGradInput(ConvGradWeightOp grad) {
  return llvm::any_of(grad.getOutputGrad().getUsers(), [&](Operation *user) {
    return isa<ConvGradInputOp>(user) && user->getBlock() == grad->getBlock() &&
           user->isBeforeInBlock(grad);
  });
}

LogicalResult Emitter::emitOperation(ConvGradWeightOp grad) {
  std::string strides = window(grad, grad.getStrides(), "strides"),
              pads = window(grad, grad.getPads(), "pads"),
              dilations = window(grad, grad.getDilations(), "dilations");
  bool afterGradInput = !cuda && followsGradInput(grad);
  if (SgdOp sgd = backward.convWithUpdate.lookup(grad)) {
    // w += -lr * dw, the gradient never stored (FusionPlan.h); the copy
    // of w's live taps, where it has one, takes the same update.
    std::string cached = croppedWeightRef(sgd.getParam());
    std::string tail = cached.empty() ? "" : ", &" + cached;
    if (afterGradInput)
      tail = (cached.empty() ? ", nullptr" : tail) + ", true";
    call(grad,
         formatv("convGradWeightSgd({0}, {1}, {2}, {3}, {4}, {5}, {6}, "
                 "{7}, {8}, {9}, {10}{11})",
                 ref(grad.getOutputGrad()), shapeLiteral(grad.getOutputGrad()),
                 ref(grad.getInput()), shapeLiteral(grad.getInput()), strides,
                 pads, dilations, grad.getGroup(),
                 learningRate(sgd.getLr(), sgd.getLrFactor()),
                 ref(sgd.getParam()), shapeLiteral(grad.getWeightGrad()),
                 tail));
    return success();
  }
  call(grad,
       formatv("convGradWeight({0}, {1}, {2}, {3}, {4}, {5}, {6}, "
               "{7}, {8}, {9}{10})",
               ref(grad.getOutputGrad()), shapeLiteral(grad.getOutputGrad()),
               ref(grad.getInput()), shapeLiteral(grad.getInput()), strides,
               pads, dilations, grad.getGroup(), ref(grad.getWeightGrad()),
               shapeLiteral(grad.getWeightGrad()),
               afterGradInput ? ", true" : ""));
  return success();
}

LogicalResult Emitter::emitOperation(MaxPoolOp pool) {
  std::string kernel = window(pool, pool.getKernelShape(), "kernel"),
              strides = window(pool, pool.getStrides(), "strides"),
              pads = window(pool, pool.getPads(), "pads"),
              dilations = window(pool, pool.getDilations(), "dilations");
  call(pool, formatv("maxPool({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
                     ref(pool.getInput()), shapeLiteral(pool.getInput()),
                     kernel, strides, pads, dilations, ref(pool.getResult()),
                     shapeLiteral(pool.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(MaxPoolGradOp grad) {
  std::string kernel = window(grad, grad.getKernelShape(), "kernel"),
              strides = window(grad, grad.getStrides(), "strides"),
              pads = window(grad, grad.getPads(), "pads"),
              dilations = window(grad, grad.getDilations(), "dilations");
  // The output gradient's shape is the forward result's.
  call(grad,
       formatv("maxPoolGrad({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
               "{8})",
               ref(grad.getOutputGrad()), shapeLiteral(grad.getOutputGrad()),
               ref(grad.getInput()), shapeLiteral(grad.getInput()), kernel,
               strides, pads, dilations, ref(grad.getInputGrad())));
  return success();
}

LogicalResult Emitter::emitOperation(AvgPoolOp pool) {
  std::string kernel = window(pool, pool.getKernelShape(), "kernel"),
              strides = window(pool, pool.getStrides(), "strides"),
              pads = window(pool, pool.getPads(), "pads");
  call(pool, formatv("avgPool({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
                     ref(pool.getInput()), shapeLiteral(pool.getInput()),
                     kernel, strides, pads, pool.getCountIncludePad(),
                     ref(pool.getResult()), shapeLiteral(pool.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(AvgPoolGradOp grad) {
  std::string kernel = window(grad, grad.getKernelShape(), "kernel"),
              strides = window(grad, grad.getStrides(), "strides"),
              pads = window(grad, grad.getPads(), "pads");
  call(grad,
       formatv("avgPoolGrad({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
               ref(grad.getOutputGrad()), shapeLiteral(grad.getOutputGrad()),
               kernel, strides, pads, grad.getCountIncludePad(),
               ref(grad.getInputGrad()), shapeLiteral(grad.getInputGrad())));
  return success();
}

} // namespace mlir::cleave::codegen
