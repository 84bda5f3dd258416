//===- EmitDataMovement.cpp - constants, views, copies --------------------===//
//
// Constants become global arrays (device arrays on the cuda target); the
// other ops move data by runtime/KernelsDataMovement.cpp, generic over the
// element type. A reshape is a view: the memory plan gives it its input's
// buffer.
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

LogicalResult Emitter::emitConstant(ConstantOp op) {
  // Every pipeline stage's step reads the one global array.
  if (std::string name = names.lookup(op.getResult()); !name.empty()) {
    if (traits.deviceMemory)
      body << formatv("  const {0} *{1} = deviceAddress({1}_data);\n",
                      elementType(op.getResult()), name);
    return success();
  }
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitOpError("has a non-dense value the ")
           << traits.name << " target cannot emit";
  std::string base = nodeName(op.getLoc());
  std::string name = "k" + uniqueName(base.empty() ? "constant" : base);
  std::string type = elementType(op.getResult());
  int64_t count = attr.getNumElements();
  Type element = attr.getElementType();
  // Splats (folding makes them from broadcast constants): zero ones
  // zero-initialized, small ones listed, large non-zero ones (cpu) filled
  // during static initialization.
  constexpr int64_t kListedSplat = 4096;
  bool bigSplat = attr.isSplat() && count > kListedSplat;
  bool zeroSplat =
      attr.isSplat() &&
      (isa<FloatType>(element) ? attr.getSplatValue<APFloat>().isZero()
                               : attr.getSplatValue<APInt>().isZero());
  if (bigSplat && !zeroSplat) {
    if (traits.deviceMemory)
      return op.emitOpError("is a large non-zero splat, which the ")
             << traits.name << " target does not emit yet";
    std::string value =
        isa<FloatType>(element)
            ? floatLiteral(attr.getSplatValue<APFloat>().convertToDouble())
            : std::to_string(attr.getSplatValue<APInt>().getSExtValue());
    globals << formatv("// {0}\nstatic {1} {2}[{3}];\n"
                       "static const bool {2}_filled = (std::fill_n({2}, {3}, "
                       "{1}({4})), true);\n",
                       base, type, name, count, value);
    names[op.getResult()] = name;
    return success();
  }
  // Device code reads a constant from device memory: a __device__ array
  // whose address the step looks up.
  globals << formatv("// {0}\n{1} {2} {3}{4}[{5}] = {{", base,
                     traits.deviceMemory ? "__device__ const" : "static const",
                     type, name, traits.deviceMemory ? "_data" : "", count);
  if (traits.deviceMemory)
    body << formatv("  const {0} *{1} = deviceAddress({1}_data);\n", type,
                    name);
  if (bigSplat) {
    // zero-initialized
  } else if (isa<FloatType>(element)) {
    llvm::interleaveComma(attr.getValues<APFloat>(), globals,
                          [&](const APFloat &v) {
                            globals << floatLiteral(v.convertToDouble());
                          });
  } else if (element.isInteger(1)) {
    llvm::interleaveComma(attr.getValues<bool>(), globals,
                          [&](bool v) { globals << (v ? "true" : "false"); });
  } else {
    llvm::interleaveComma(attr.getValues<APInt>(), globals,
                          [&](const APInt &v) {
                            globals << v.getSExtValue();
                            if (element.isInteger(64))
                              globals << "LL";
                          });
  }
  globals << "};\n";
  names[op.getResult()] = name;
  return success();
}

LogicalResult Emitter::emitOperation(ReshapeOp reshape) {
  body << "  // " << baseName(reshape) << ": a view of its input\n";
  return success();
}

LogicalResult Emitter::emitOperation(TransposeOp transpose) {
  // The product it transposes writes it (planStridedMatmuls).
  if (Operation *matmul = fusion.matmulAt.lookup(transpose)) {
    emitStridedMatmul(cast<MatmulOp>(matmul), transpose);
    return success();
  }
  std::string perm = window(transpose, transpose.getPermutation(), "perm");
  call(transpose,
       formatv("transpose({0}, {1}, {2}, {3})", ref(transpose.getInput()),
               shapeLiteral(transpose.getInput()), perm,
               ref(transpose.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(BroadcastToOp broadcast) {
  call(broadcast,
       formatv("broadcastTo({0}, {1}, {2}, {3})", ref(broadcast.getInput()),
               shapeLiteral(broadcast.getInput()), ref(broadcast.getResult()),
               shapeLiteral(broadcast.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(ConcatOp concat) {
  std::string inputs = uniqueName(baseName(concat) + "_inputs");
  std::string shapes = uniqueName(baseName(concat) + "_shapes");
  body << formatv("  const {0} *{1}[] = {{", elementType(concat.getResult()),
                  inputs);
  llvm::interleaveComma(concat.getInputs(), body,
                        [&](Value v) { body << ref(v); });
  body << formatv("};\n  const Shape {0}[] = {{", shapes);
  llvm::interleaveComma(concat.getInputs(), body,
                        [&](Value v) { body << shapeLiteral(v); });
  body << "};\n";
  call(concat, formatv("concat({0}, {1}, {2}, {3}, {4})", inputs, shapes,
                       concat.getInputs().size(), concat.getAxis(),
                       ref(concat.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(SplitOp split) {
  std::string outs = uniqueName(baseName(split) + "_outputs");
  SmallVector<int64_t> sizes;
  body << formatv("  {0} *{1}[] = {{", elementType(split.getInput()), outs);
  llvm::interleaveComma(split.getResults(), body, [&](Value v) {
    body << ref(v);
    sizes.push_back(tensorType(v).getDimSize(split.getAxis()));
  });
  body << "};\n";
  std::string sizesName = window(split, sizes, "sizes");
  call(split, formatv("split({0}, {1}, {2}, {3}, {4}, {5})",
                      ref(split.getInput()), shapeLiteral(split.getInput()),
                      split.getAxis(), sizesName, sizes.size(), outs));
  return success();
}

LogicalResult Emitter::emitOperation(SliceOp slice) {
  std::string offsets = window(slice, slice.getOffsets(), "offsets");
  std::string strides = window(slice, slice.getStrides(), "strides");
  call(slice,
       formatv("slice({0}, {1}, {2}, {3}, {4}, {5})", ref(slice.getInput()),
               shapeLiteral(slice.getInput()), offsets, strides,
               ref(slice.getResult()), shapeLiteral(slice.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(SliceGradOp grad) {
  std::string offsets = window(grad, grad.getOffsets(), "offsets");
  std::string strides = window(grad, grad.getStrides(), "strides");
  call(grad,
       formatv("sliceGrad({0}, {1}, {2}, {3}, {4}, {5})",
               ref(grad.getOutputGrad()), shapeLiteral(grad.getOutputGrad()),
               offsets, strides, ref(grad.getInputGrad()),
               shapeLiteral(grad.getInputGrad())));
  return success();
}

LogicalResult Emitter::emitOperation(GatherOp gather) {
  call(gather,
       formatv("gather({0}, {1}, {2}, {3}, {4}, {5})", ref(gather.getData()),
               shapeLiteral(gather.getData()), ref(gather.getIndices()),
               numElements(gather.getIndices()), gather.getAxis(),
               ref(gather.getResult())));
  return success();
}

LogicalResult Emitter::emitOperation(GatherGradOp grad) {
  call(grad,
       formatv("gatherGrad({0}, {1}, {2}, {3}, {4}, {5})",
               ref(grad.getOutputGrad()), ref(grad.getIndices()),
               numElements(grad.getIndices()), grad.getAxis(),
               ref(grad.getDataGrad()), shapeLiteral(grad.getDataGrad())));
  return success();
}

} // namespace mlir::cleave::codegen
