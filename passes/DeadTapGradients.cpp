//===- DeadTapGradients.cpp - weight gradients summed without dead taps ---===//

#include "passes/DeadTapGradients.h"

#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/RuntimeShape.h"
#include "runtime/ConvolutionLiveTaps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::cleave {

namespace {

/// `grad`'s crop when some of its kernel's taps read only padding.
std::optional<::cleave::rt::ConvCrop> deadTapCrop(ConvGradWeightOp grad) {
  ::cleave::rt::ConvCrop crop;
  if (!::cleave::rt::cropDeadTaps(
          runtimeShape(grad.getInput()), runtimeShape(grad.getWeightGrad()),
          runtimeShape(grad.getOutputGrad()), grad.getStrides().data(),
          grad.getPads().data(), grad.getDilations().data(), crop))
    return std::nullopt;
  return crop;
}

/// `type` with its kernel dims (2 and 3) those of `crop`.
RankedTensorType croppedType(RankedTensorType type,
                             const ::cleave::rt::ConvCrop &crop) {
  SmallVector<int64_t> shape(type.getShape());
  shape[2] = crop.wShape.dims[2];
  shape[3] = crop.wShape.dims[3];
  return type.clone(shape);
}

/// The gradient of `grad`'s live taps: the same gradient with the cropped
/// kernel and the pads that keep each live tap on the input positions it
/// read (ConvCrop).
Value liveTapGradient(OpBuilder &b, ConvGradWeightOp grad,
                      const ::cleave::rt::ConvCrop &crop) {
  auto type = cast<RankedTensorType>(grad.getWeightGrad().getType());
  auto live = ConvGradWeightOp::create(
      b, grad.getLoc(), croppedType(type, crop), grad.getOutputGrad(),
      grad.getInput(), grad.getStridesAttr(),
      b.getDenseI64ArrayAttr(ArrayRef<int64_t>(crop.pads, 4)),
      grad.getDilationsAttr(), grad.getGroupAttr());
  live->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
  return live;
}

/// `sum` (cropped taps) placed back in a kernel of `type`, zeros elsewhere.
Value wholeKernel(OpBuilder &b, Location loc, Value sum, Type type,
                  const ::cleave::rt::ConvCrop &crop) {
  return SliceGradOp::create(
      b, loc, type, sum, b.getDenseI64ArrayAttr({0, 0, crop.lo[0], crop.lo[1]}),
      b.getDenseI64ArrayAttr({1, 1, 1, 1}));
}

/// The conv_grad_weight with dead taps that `input` is the only use of.
ConvGradWeightOp
soleDeadTapGradient(Value input, std::optional<::cleave::rt::ConvCrop> &crop) {
  auto grad = input.getDefiningOp<ConvGradWeightOp>();
  if (!grad || !input.hasOneUse())
    return {};
  crop = deadTapCrop(grad);
  return crop ? grad : ConvGradWeightOp();
}

} // namespace

void sumLiveTapGradientsOnly(func::FuncOp func) {
  SmallVector<Operation *> sums;
  func.walk([&](Operation *op) {
    if (auto reduce = dyn_cast<AllReduceOp>(op);
        reduce && reduce.getInputs().size() == 1)
      sums.push_back(op);
    // A scatter over a kernel dim would split the cropped taps instead.
    if (auto scatter = dyn_cast<ReduceScatterOp>(op);
        scatter && scatter.getDim() < 2)
      sums.push_back(op);
  });
  for (Operation *sum : sums) {
    std::optional<::cleave::rt::ConvCrop> crop;
    ConvGradWeightOp grad = soleDeadTapGradient(sum->getOperand(0), crop);
    if (!grad)
      continue;
    // Each op where the one it replaces was, so that the backward pass
    // keeps its order.
    OpBuilder atGrad(grad);
    Value live = liveTapGradient(atGrad, grad, *crop);
    OpBuilder b(sum);
    Operation *liveSum;
    if (auto reduce = dyn_cast<AllReduceOp>(sum))
      liveSum = AllReduceOp::create(b, reduce.getLoc(), ValueRange{live},
                                    reduce.getAxesAttr());
    else {
      auto scatter = cast<ReduceScatterOp>(sum);
      liveSum = ReduceScatterOp::create(
          b, scatter.getLoc(),
          croppedType(cast<RankedTensorType>(scatter.getType()), *crop), live,
          scatter.getAxesAttr(), scatter.getDimAttr());
    }
    liveSum->setDiscardableAttrs(sum->getDiscardableAttrDictionary());
    // The zeros are put back where the sum is first read (the optimizer),
    // not at once: a read right after the sum would close its bucket.
    Operation *firstUser = nullptr;
    for (Operation *user : sum->getResult(0).getUsers()) {
      while (user->getBlock() != sum->getBlock())
        user = user->getParentOp();
      if (!firstUser || user->isBeforeInBlock(firstUser))
        firstUser = user;
    }
    if (firstUser)
      b.setInsertionPoint(firstUser);
    Value whole = wholeKernel(b, sum->getLoc(), liveSum->getResult(0),
                              sum->getResult(0).getType(), *crop);
    sum->getResult(0).replaceAllUsesWith(whole);
    sum->erase();
    grad.erase();
  }
}

} // namespace mlir::cleave
