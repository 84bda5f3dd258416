//===- FusedUpdates.cpp - updates run inside another op's call ------------===//

#include "planner/FusedUpdates.h"

#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/RuntimeShape.h"

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// Elements of `small` per element of `whole`.
double shareOf(Value small, Value whole) {
  return double(cast<ShapedType>(small.getType()).getNumElements()) /
         double(cast<ShapedType>(whole.getType()).getNumElements());
}

/// The share of the kernel's taps that `conv`'s runtime computes
/// (rt::cropDeadTaps).
double liveTapsOf(ConvGradWeightOp conv) {
  std::optional<rt::ConvCrop> crop = deadTapCrop(
      conv, conv.getInput(), conv.getWeightGrad(), conv.getOutputGrad());
  return crop ? double(crop->wShape.numElements()) /
                    double(cast<ShapedType>(conv.getWeightGrad().getType())
                               .getNumElements())
              : 1.0;
}

/// The share of an SGD update's traffic (costOf: the parameter, its
/// gradient and momentum buffer read, the parameter and buffer written)
/// left when its gradient is read at the live taps alone, `live` of the
/// kernel: sgdLiveTaps reads and writes the live taps alone; with momentum
/// or weight decay sgdUpdateLiveTaps steps every tap (FusionPlan.h).
double liveTapUpdateShare(SgdOp sgd, double live) {
  if (changesLiveTapsAlone(sgd))
    return live;
  return sgd.getMomentumBuffer() ? (4 + live) / 5 : (2 + live) / 3;
}

} // namespace

llvm::DenseMap<Operation *, FusedUpdate>
fusedUpdates(const MemoryPlan &plan, const FusionPlan &fusion,
             const BackwardFusion *backward) {
  // An SGD update costs reading the parameter and its gradient and writing
  // the parameter: three passes over it (costOf).
  llvm::DenseMap<Operation *, FusedUpdate> shares;
  // The GEMM, called where the update stands, adds its product to the
  // parameter: one more read of it.
  for (auto [gemm, sgd] : plan.gemmInUpdate) {
    shares[gemm] = {1, false};
    shares[sgd] = {1.0 / 3.0, true};
  }
  if (!backward)
    return shares;
  // The input gradient's pass over the weight writes it too.
  for (Operation *sgd : backward->fusedUpdates)
    shares[sgd] = {0, false};
  // The weight gradient's call reads and writes the live taps it updates;
  // the gradient stays in its buffer.
  for (auto [conv, sgd] : backward->convWithUpdate)
    shares[sgd] = {liveTapsOf(cast<ConvGradWeightOp>(conv)) * 2.0 / 3.0, false};
  // The slice_grad writes nothing; the update reads the live taps'
  // gradient alone (liveTapUpdateShare).
  for (auto [slice, sgd] : fusion.liveTapUpdates) {
    auto update = cast<SgdOp>(sgd);
    shares[slice] = {0, false};
    shares[sgd] = {liveTapUpdateShare(update, shareOf(slice->getOperand(0),
                                                      update.getParam())),
                   true};
  }
  return shares;
}

FusedUpdate updateBeforePartitioning(SgdOp sgd, bool dataParallel, bool cpu) {
  FusedUpdate whole{1, true};
  Value grad = sgd.getGrad();
  if (!grad.hasOneUse() || grad.getType() != sgd.getParam().getType())
    return whole;
  if (auto conv = grad.getDefiningOp<ConvGradWeightOp>(); conv && cpu) {
    double live = liveTapsOf(conv);
    if (dataParallel)
      return live < 1 ? FusedUpdate{liveTapUpdateShare(sgd, live), true}
                      : whole;
    if (changesLiveTapsAlone(sgd))
      return {live * 2.0 / 3.0, false};
    return whole;
  }
  if (!changesLiveTapsAlone(sgd))
    return whole;
  auto gemm = grad.getDefiningOp<GemmOp>();
  if (!gemm || gemm.getC() || sgd.getLrFactor() || dataParallel)
    return whole;
  // dw = dy^T x beside dx = dy w: one pass over w on the cpu target
  // (runtime linearBackwardSgd).
  auto unit = [](GemmOp g) { return g.getAlpha().isExactlyValue(1.0); };
  bool withInputGradient =
      cpu && gemm.getTransA() && !gemm.getTransB() && unit(gemm) &&
      llvm::any_of(gemm.getA().getUsers(), [&](Operation *user) {
        auto dx = dyn_cast<GemmOp>(user);
        return dx && dx != gemm && dx.getB() == sgd.getParam() &&
               !dx.getTransA() && !dx.getTransB() && !dx.getC() && unit(dx);
      });
  return withInputGradient ? FusedUpdate{0, false}
                           : FusedUpdate{1.0 / 3.0, true};
}

} // namespace cleave::planner
