//===- DeadTapCollectives.cpp - dead kernel taps never sent ---------------===//

#include "passes/DeadTapCollectives.h"

#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/RuntimeShape.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::cleave {

namespace {

using ::cleave::rt::ConvCrop;

/// `type` with its kernel dims (2 and 3) those of `crop`.
RankedTensorType croppedType(Type type, const ConvCrop &crop) {
  auto ranked = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(ranked.getShape());
  shape[2] = crop.wShape.dims[2];
  shape[3] = crop.wShape.dims[3];
  return ranked.clone(shape);
}

DenseI64ArrayAttr croppedPads(OpBuilder &b, const ConvCrop &crop) {
  return b.getDenseI64ArrayAttr(ArrayRef<int64_t>(crop.pads, 4));
}

/// Where the live taps of a kernel lie in it (slice and slice_grad).
DenseI64ArrayAttr liveTapOffsets(OpBuilder &b, const ConvCrop &crop) {
  return b.getDenseI64ArrayAttr({0, 0, crop.lo[0], crop.lo[1]});
}

/// The earliest user of `value` in `at`'s block (the op holding it there).
Operation *firstUserInBlock(Value value, Operation *at) {
  Operation *first = nullptr;
  for (Operation *user : value.getUsers()) {
    while (user->getBlock() != at->getBlock())
      user = user->getParentOp();
    if (!first || user->isBeforeInBlock(first))
      first = user;
  }
  return first;
}

/// A sum over ranks (single-input all_reduce or reduce_scatter) of a
/// weight gradient with dead taps becomes the sum of its live taps.
void sumLiveTaps(Operation *sum) {
  auto grad = sum->getOperand(0).getDefiningOp<ConvGradWeightOp>();
  if (!grad || !grad.getWeightGrad().hasOneUse())
    return;
  std::optional<ConvCrop> crop = deadTapCrop(
      grad, grad.getInput(), grad.getWeightGrad(), grad.getOutputGrad());
  if (!crop)
    return;
  // Each op where the one it replaces was, so that the backward pass
  // keeps its order.
  OpBuilder b(grad);
  auto live = ConvGradWeightOp::create(
      b, grad.getLoc(), croppedType(grad.getType(), *crop),
      grad.getOutputGrad(), grad.getInput(), grad.getStridesAttr(),
      croppedPads(b, *crop), grad.getDilationsAttr(), grad.getGroupAttr());
  live->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
  b.setInsertionPoint(sum);
  Operation *liveSum;
  if (auto reduce = dyn_cast<AllReduceOp>(sum))
    liveSum = AllReduceOp::create(b, reduce.getLoc(), ValueRange{live},
                                  reduce.getAxesAttr());
  else {
    auto scatter = cast<ReduceScatterOp>(sum);
    liveSum = ReduceScatterOp::create(
        b, scatter.getLoc(), croppedType(scatter.getType(), *crop), live,
        scatter.getAxesAttr(), scatter.getDimAttr());
  }
  liveSum->setDiscardableAttrs(sum->getDiscardableAttrDictionary());
  // The zeros are put back where the sum is first read (the optimizer),
  // not at once: a read right after the sum would close its bucket.
  if (Operation *user = firstUserInBlock(sum->getResult(0), sum))
    b.setInsertionPoint(user);
  Value whole = SliceGradOp::create(
      b, sum->getLoc(), sum->getResult(0).getType(), liveSum->getResult(0),
      liveTapOffsets(b, *crop), b.getDenseI64ArrayAttr({1, 1, 1, 1}));
  sum->getResult(0).replaceAllUsesWith(whole);
  sum->erase();
  grad.erase();
}

/// The crop of convolution pass `user` if it reads `weight` as its kernel
/// and has dead taps.
std::optional<ConvCrop> cropOfWeightReader(Operation *user, Value weight) {
  if (llvm::count(user->getOperands(), weight) != 1)
    return std::nullopt;
  if (auto conv = dyn_cast<ConvOp>(user); conv && conv.getWeight() == weight)
    return deadTapCrop(conv, conv.getInput(), weight, conv.getResult());
  if (auto grad = dyn_cast<ConvGradInputOp>(user);
      grad && grad.getWeight() == weight)
    return deadTapCrop(grad, grad.getInputGrad(), weight, grad.getOutputGrad());
  return std::nullopt;
}

/// A gather of a kernel whose readers all skip the same dead taps moves
/// the live taps alone; the readers take the cropped kernel.
void gatherLiveTaps(AllGatherOp gather) {
  Value weight = gather.getResult();
  std::optional<ConvCrop> crop;
  for (Operation *user : weight.getUsers()) {
    std::optional<ConvCrop> own = cropOfWeightReader(user, weight);
    if (!own || (crop && !(*crop == *own)))
      return;
    crop = own;
  }
  if (!crop)
    return;
  OpBuilder b(gather);
  Value shard = gather.getInput();
  Value liveShard = SliceOp::create(
      b, gather.getLoc(), croppedType(shard.getType(), *crop), shard,
      liveTapOffsets(b, *crop), b.getDenseI64ArrayAttr({1, 1, 1, 1}));
  auto liveGather = AllGatherOp::create(
      b, gather.getLoc(), croppedType(gather.getType(), *crop), liveShard,
      gather.getAxesAttr(), gather.getDimAttr());
  liveGather->setDiscardableAttrs(gather->getDiscardableAttrDictionary());
  for (Operation *user : llvm::make_early_inc_range(weight.getUsers())) {
    user->replaceUsesOfWith(weight, liveGather.getResult());
    if (auto conv = dyn_cast<ConvOp>(user))
      conv.setPadsAttr(croppedPads(b, *crop));
    else
      cast<ConvGradInputOp>(user).setPadsAttr(croppedPads(b, *crop));
  }
  gather.erase();
}

} // namespace

void keepDeadTapsOutOfCollectives(func::FuncOp func) {
  SmallVector<Operation *> collectives;
  func.walk([&](Operation *op) {
    // A scatter or gather along a kernel dim would split the live taps.
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      if (reduce.getInputs().size() == 1)
        collectives.push_back(op);
    if (auto scatter = dyn_cast<ReduceScatterOp>(op))
      if (scatter.getDim() < 2)
        collectives.push_back(op);
    if (auto gather = dyn_cast<AllGatherOp>(op))
      if (gather.getDim() < 2 && gather.getType().getRank() == 4)
        collectives.push_back(op);
  });
  for (Operation *op : collectives) {
    if (auto gather = dyn_cast<AllGatherOp>(op))
      gatherLiveTaps(gather);
    else
      sumLiveTaps(op);
  }
}

} // namespace mlir::cleave
