//===- EmitElementwise.cpp - elementwise ops, reductions ------------------===//
//
// Elementwise ops run their ElementwiseBodies.h functor in a broadcasting
// loop (runtime/Elementwise.h), or together in one fused loop (FusionPlan.h):
// a parallel loop on the host, one kernel on the GPU. Reductions call
// runtime/KernelsReduction.cpp.
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

/// The ElementwiseBodies.h functor computing `op` per element, or empty
/// when `op` is not elementwise.
std::string elementwiseBody(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([](AddOp) { return "body::Add{}"; })
      .Case([](SubOp) { return "body::Sub{}"; })
      .Case([](MulOp) { return "body::Mul{}"; })
      .Case([](DivOp) { return "body::Div{}"; })
      .Case([](PowOp) { return "body::Pow{}"; })
      .Case([](EqualOp) { return "body::Equal{}"; })
      .Case([](LessOp) { return "body::Less{}"; })
      .Case([](WhereOp) { return "body::Where{}"; })
      .Case([](SqrtOp) { return "body::Sqrt{}"; })
      .Case([](NegOp) { return "body::Neg{}"; })
      .Case([](ErfOp) { return "body::Erf{}"; })
      .Case([](TanhOp) { return "body::Tanh{}"; })
      .Case([](SigmoidOp) { return "body::Sigmoid{}"; })
      .Case([](ReluOp) { return "body::Relu{}"; })
      .Case([](ExpOp) { return "body::Exp{}"; })
      .Case([](LogOp) { return "body::Log{}"; })
      .Case([](CastOp cast) {
        return "body::Cast<" +
               cType(tensorType(cast.getResult()).getElementType()) + ">{}";
      })
      .Default([](Operation *) { return std::string(); });
}

LogicalResult Emitter::emitElementwise(Operation *op, const std::string &fn) {
  Value r = op->getResult(0);
  std::string args;
  for (Value v : op->getOperands())
    args += formatv("{0}, {1}, ", ref(v), shapeLiteral(v)).str();
  if (op->getNumOperands() == 1)
    call(op, formatv("mapUnary({0}, {1}, {2}, {3})", ref(op->getOperand(0)),
                     ref(r), numElements(r), fn));
  else
    call(op, formatv("{0}({1}{2}, {3}, {4})",
                     op->getNumOperands() == 2 ? "mapBinary" : "mapTernary",
                     args, ref(r), shapeLiteral(r), fn));
  return success();
}

void Emitter::emitFusedGroup(Operation *tail) {
  ArrayRef<Operation *> chain = fusion.groups[tail];
  Value out = tail->getResult(0);
  int64_t count = tensorType(out).getNumElements();
  body << "  // fused:";
  for (Operation *op : chain)
    body << " " << nodeName(op->getLoc());
  body << "\n";
  // One kernel on the GPU (the pointers captured by value), one parallel
  // loop on the host.
  if (cuda)
    body << formatv("  launch({0}, [=] __host__ __device__(int64_t i) {{\n",
                    count);
  else
    // (The runtime's grain, detail::kParallelGrain: a smaller loop stays on
    // one thread, and g++ need not outline a parallel region for it.) In
    // vector registers either way, exp and erf included (VectorMath.h).
    body << formatv("{0}\n  for (int64_t i = 0; i < {1}; ++i) {{\n",
                    count > 32768 ? "#pragma omp parallel for simd schedule(static)"
                                  : "#pragma omp simd",
                    count);
  llvm::DenseMap<Value, std::string> local;
  for (auto [index, op] : llvm::enumerate(chain)) {
    std::string args;
    for (Value operand : op->getOperands()) {
      if (!args.empty())
        args += ", ";
      if (auto it = local.find(operand); it != local.end())
        args += it->second;
      else if (tensorType(operand).getNumElements() == 1)
        args += ref(operand) + "[0]";
      else if (tensorType(operand).getElementType().isInteger(1))
        // As a byte: g++ vectorizes no select on a loaded bool
        // (loadElement, runtime/HostDevice.h).
        args += "cleave::loadElement(" + ref(operand) + ", i)";
      else
        args += ref(operand) + "[i]";
    }
    std::string call = elementwiseBody(op) + "(" + args + ")";
    if (op == tail) {
      body << formatv("    {0}[i] = {1};\n", ref(out), call);
    } else {
      std::string name = formatv("v{0}", index).str();
      local[op->getResult(0)] = name;
      body << formatv("    const auto {0} = {1};\n", name, call);
    }
  }
  body << (cuda ? "  });\n" : "  }\n");
}

LogicalResult Emitter::emitReduction(Operation *op, const char *kind,
                                     Value input, ArrayRef<int64_t> axes,
                                     Value result) {
  std::string axesName = window(op, axes, "axes");
  call(op, formatv("reduce(ReduceKind::{0}, {1}, {2}, {3}, {4}, {5})", kind,
                   ref(input), shapeLiteral(input), axesName, axes.size(),
                   ref(result)));
  return success();
}

LogicalResult Emitter::emitOperation(ReduceSumOp op) {
  return emitReduction(op, "Sum", op.getInput(), op.getAxes(), op.getResult());
}

LogicalResult Emitter::emitOperation(ReduceMeanOp op) {
  return emitReduction(op, "Mean", op.getInput(), op.getAxes(), op.getResult());
}

LogicalResult Emitter::emitOperation(ReduceMaxOp op) {
  return emitReduction(op, "Max", op.getInput(), op.getAxes(), op.getResult());
}

} // namespace mlir::cleave::codegen
