//===- OpCost.cpp - floating-point work and memory traffic of an op -------===//

#include "planner/OpCost.h"

#include "codegen/MemoryPlan.h"
#include "dialects/cleave/CleaveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

double elements(Value value) {
  auto type = dyn_cast<ShapedType>(value.getType());
  return type && type.hasStaticShape()
             ? static_cast<double>(type.getNumElements())
             : 1.0;
}

double bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape()
             ? static_cast<double>(mlir::cleave::tensorBytes(type))
             : 0.0;
}

/// Elements of a convolution weight per output channel: the multiply-adds
/// of one output element.
double perOutputElement(Value weight) {
  auto type = cast<ShapedType>(weight.getType());
  return elements(weight) / std::max<int64_t>(type.getDimSize(0), 1);
}

} // namespace

bool isCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, BroadcastOp,
             SendRecvOp>(op);
}

OpCost costOf(Operation *op) {
  OpCost cost;
  if (isa<ConstantOp, ReshapeOp, AxisIndexOp, func::ReturnOp>(op) ||
      op->getNumResults() == 0) {
    cost.free = true;
    return cost;
  }
  for (Value operand : op->getOperands())
    if (!isa_and_nonnull<ConstantOp>(operand.getDefiningOp()))
      cost.bytes += bytesOf(operand);
  double resultElements = 0;
  for (Value result : op->getResults()) {
    cost.bytes += bytesOf(result);
    resultElements = std::max(resultElements, elements(result));
  }
  cost.flops = resultElements;
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    auto lhs = cast<ShapedType>(matmul.getLhs().getType());
    double k = lhs.getRank() ? lhs.getDimSize(lhs.getRank() - 1) : 1;
    cost.flops = 2 * elements(matmul.getResult()) * k;
    cost.matrix = true;
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    auto a = cast<ShapedType>(gemm.getA().getType());
    double k = a.getDimSize(gemm.getTransA() ? 0 : 1);
    cost.flops = 2 * elements(gemm.getResult()) * k;
    cost.matrix = true;
  } else if (auto conv = dyn_cast<ConvOp>(op)) {
    cost.flops =
        2 * elements(conv.getResult()) * perOutputElement(conv.getWeight());
    cost.matrix = true;
  } else if (auto grad = dyn_cast<ConvGradInputOp>(op)) {
    cost.flops =
        2 * elements(grad.getOutputGrad()) * perOutputElement(grad.getWeight());
    cost.matrix = true;
  } else if (auto grad = dyn_cast<ConvGradWeightOp>(op)) {
    cost.flops = 2 * elements(grad.getOutputGrad()) *
                 perOutputElement(grad.getWeightGrad());
    cost.matrix = true;
  }
  return cost;
}

} // namespace cleave::planner
