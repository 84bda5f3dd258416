//===- CpuConvolution.cpp - the cpu runtime's convolution calls -----------===//

#include "planner/CpuConvolution.h"

#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/RuntimeShape.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

template <typename ConvLike>
std::optional<CpuConvCall> callOf(ConvLike op, rt::ConvPass pass, Value input,
                                  Value weight, Value output, bool bias,
                                  int threads) {
  CpuConvCall call;
  call.pass = pass;
  call.x = runtimeShape(input);
  call.w = runtimeShape(weight);
  call.y = runtimeShape(output);
  if (call.x.rank != 4 || call.w.rank != 4 || call.y.rank != 4)
    return std::nullopt;
  call.strides = op.getStrides().data();
  call.dilations = op.getDilations().data();
  std::copy_n(op.getPads().data(), 4, call.pads);
  call.group = std::max<int64_t>(op.getGroup(), 1);
  call.bias = bias;
  rt::ConvCrop crop;
  if (rt::cropDeadTaps(call.x, call.w, call.y, call.strides, call.pads,
                       call.dilations, crop)) {
    call.liveTaps =
        double(crop.wShape.numElements()) / double(call.w.numElements());
    call.w = crop.wShape;
    std::copy_n(crop.pads, 4, call.pads);
  }
  call.oneDnn =
      rt::choosesOneDnn(pass, call.x, call.w, call.y, call.strides, call.pads,
                        call.dilations, call.group, threads, call.layout);
  return call;
}

} // namespace

std::optional<CpuConvCall> cpuConvCall(Operation *op, int threads) {
  using Call = std::optional<CpuConvCall>;
  return llvm::TypeSwitch<Operation *, Call>(op)
      .Case([&](ConvOp conv) {
        return callOf(conv, rt::ConvPass::Forward, conv.getInput(),
                      conv.getWeight(), conv.getResult(),
                      static_cast<bool>(conv.getBias()), threads);
      })
      .Case([&](ConvGradInputOp grad) {
        return callOf(grad, rt::ConvPass::GradInput, grad.getInputGrad(),
                      grad.getWeight(), grad.getOutputGrad(), false, threads);
      })
      .Case([&](ConvGradWeightOp grad) {
        return callOf(grad, rt::ConvPass::GradWeight, grad.getInput(),
                      grad.getWeightGrad(), grad.getOutputGrad(), false,
                      threads);
      })
      .Default([](Operation *) -> Call { return std::nullopt; });
}

} // namespace cleave::planner
