//===- StepBound.cpp - a lower bound on any layout's step -----------------===//

#include "planner/StepBound.h"

#include "planner/OpCost.h"

#include "mlir/IR/BuiltinTypes.h"

namespace cleave::planner {

using namespace mlir;

double stepComputeBoundMs(func::FuncOp step, const Cluster &cluster,
                          Precision precision) {
  if (!step)
    return 0;
  // The cost model's rates (StepTimer::opSeconds): a matrix product at the
  // bf16 peak in bf16 (or with a 16-bit result), else at the fp32 peak,
  // times the best efficiency any product's shape reaches (a split changes
  // the shapes); an op also pays overheads and memory traffic, never less.
  double efficiency = cluster.bestMatrixEfficiency();
  double fp32 = cluster.peakTflopsFp32 * 1e12 * efficiency;
  double bf16 = std::max(cluster.peakTflopsBf16, cluster.peakTflopsFp32) *
                1e12 * efficiency;
  if (fp32 <= 0 || bf16 <= 0)
    return 0;
  double seconds = 0;
  step.walk([&](Operation *op) {
    if (op == step.getOperation() || isCollective(op))
      return;
    // Matrix products only: their 2 M N K survives any split (each rank
    // multiplies its blocks), where an elementwise op's count may not; a
    // convolution's live taps too (no split is spatial).
    OpCost cost = costOf(op, convRuntimeOf(cluster));
    if (cost.free || !cost.matrix || cost.flops <= 0)
      return;
    bool sixteenBit = false;
    if (op->getNumResults())
      if (auto type = dyn_cast<ShapedType>(op->getResult(0).getType()))
        sixteenBit = type.getElementType().isBF16() ||
                     type.getElementType().isF16();
    bool fast = precision == Precision::Bf16 || sixteenBit;
    // (A direct convolution does the multiply-adds its kernels do.)
    double flops = cost.flops * (cost.directConv ? cost.directConv->work : 1.0);
    seconds += flops / (fast ? bf16 : fp32);
  });
  return seconds * 1e3;
}

} // namespace cleave::planner
