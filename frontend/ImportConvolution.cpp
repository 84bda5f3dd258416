//===- ImportConvolution.cpp - convolutions and pooling -------------------===//

#include "frontend/NodeImporter.h"

#include "dialects/cleave/CleaveOps.h"

namespace mlir::cleave {

namespace {

/// The window attributes shared by Conv and the pools, with auto_pad
/// resolved into explicit pads.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

/// The ints attribute `name`, or `size` copies of `fallback` when absent.
SmallVector<int64_t> intsOr(NodeImporter &node, StringRef name, size_t size,
                            int64_t fallback) {
  std::optional<std::vector<int64_t>> values = node.intsAttr(name);
  return values ? SmallVector<int64_t>(values->begin(), values->end())
                : SmallVector<int64_t>(size, fallback);
}

FailureOr<Window> readWindow(NodeImporter &node, ArrayRef<int64_t> spatial,
                             ArrayRef<int64_t> kernel) {
  size_t k = spatial.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = intsOr(node, "strides", k, 1);
  w.dilations = intsOr(node, "dilations", k, 1);
  w.pads = intsOr(node, "pads", 2 * k, 0);
  if (w.strides.size() != k || w.dilations.size() != k ||
      w.pads.size() != 2 * k || w.kernel.size() != k)
    return node.emitError() << "kernel_shape, strides and dilations need " << k
                            << " entries and pads " << 2 * k
                            << " for an input with " << k
                            << " spatial dimensions",
           failure();
  std::string autoPad = node.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - spatial[i]);
      int64_t small = total / 2;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      w.pads[i + k] = total - w.pads[i];
    }
  } else if (autoPad != "NOTSET") {
    return node.emitError() << "auto_pad '" << autoPad
                            << "' is not one of NOTSET, SAME_UPPER, "
                               "SAME_LOWER, VALID",
           failure();
  }
  return w;
}

LogicalResult importConv(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  auto inputType = cast<RankedTensorType>(node.input(0).getType());
  auto weightType = cast<RankedTensorType>(node.input(1).getType());
  if (inputType.getRank() < 3 || weightType.getRank() != inputType.getRank())
    return node.emitError() << "expects an input [N, C, D...] and a weight of "
                               "the same rank >= 3";
  ArrayRef<int64_t> kernel = weightType.getShape().drop_front(2);
  if (auto declared = node.intsAttr("kernel_shape"))
    if (ArrayRef<int64_t>(*declared) != kernel)
      return node.emitError() << "kernel_shape attribute disagrees with the "
                                 "weight's spatial dimensions";
  FailureOr<Window> w =
      readWindow(node, inputType.getShape().drop_front(2), kernel);
  if (failed(w))
    return failure();
  OpBuilder &b = node.builder();
  auto op = node.create<ConvOp>(
      *type, node.input(0), node.input(1), node.input(2),
      b.getDenseI64ArrayAttr(w->strides), b.getDenseI64ArrayAttr(w->pads),
      b.getDenseI64ArrayAttr(w->dilations),
      b.getI64IntegerAttr(node.intAttr("group", 1)));
  node.setOutput(0, op.getResult());
  return success();
}

/// Reads the pooling window; kernel_shape is required.
FailureOr<Window> readPoolWindow(NodeImporter &node) {
  auto inputType = cast<RankedTensorType>(node.input(0).getType());
  if (inputType.getRank() < 3)
    return node.emitError() << "expects an input [N, C, D...] of rank >= 3",
           failure();
  std::optional<std::vector<int64_t>> kernel = node.intsAttr("kernel_shape");
  if (!kernel)
    return node.emitError() << "kernel_shape is required", failure();
  return readWindow(node, inputType.getShape().drop_front(2), *kernel);
}

LogicalResult importMaxPool(NodeImporter &node) {
  if (node.outputUsed(1))
    return node.emitError() << "the Indices output is not supported; export "
                               "the model without return_indices";
  FailureOr<RankedTensorType> type = node.outputType(0);
  FailureOr<Window> w = readPoolWindow(node);
  if (failed(type) || failed(w))
    return failure();
  OpBuilder &b = node.builder();
  auto op = node.create<MaxPoolOp>(
      *type, node.input(0), b.getDenseI64ArrayAttr(w->kernel),
      b.getDenseI64ArrayAttr(w->strides), b.getDenseI64ArrayAttr(w->pads),
      b.getBoolAttr(node.intAttr("ceil_mode", 0) != 0),
      b.getDenseI64ArrayAttr(w->dilations));
  node.setOutput(0, op.getResult());
  return success();
}

LogicalResult importAveragePool(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  FailureOr<Window> w = readPoolWindow(node);
  if (failed(type) || failed(w))
    return failure();
  OpBuilder &b = node.builder();
  auto op = node.create<AvgPoolOp>(
      *type, node.input(0), b.getDenseI64ArrayAttr(w->kernel),
      b.getDenseI64ArrayAttr(w->strides), b.getDenseI64ArrayAttr(w->pads),
      b.getBoolAttr(node.intAttr("ceil_mode", 0) != 0),
      b.getBoolAttr(node.intAttr("count_include_pad", 0) != 0));
  node.setOutput(0, op.getResult());
  return success();
}

/// ConvTranspose is the adjoint of Conv with the same weight and window
/// (ONNX's weight layout [C_in, C_out / group, K...] is that conv's), so it
/// imports as conv_grad_input of its input, whose result type carries the
/// output padding; a bias is added after.
LogicalResult importConvTranspose(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  auto inputType = cast<RankedTensorType>(node.input(0).getType());
  auto weightType = cast<RankedTensorType>(node.input(1).getType());
  int64_t rank = inputType.getRank();
  if (rank < 3 || weightType.getRank() != rank)
    return node.emitError() << "expects an input [N, C, D...] and a weight of "
                               "the same rank >= 3",
           failure();
  int64_t group = node.intAttr("group", 1);
  if (group < 1 || inputType.getDimSize(1) != weightType.getDimSize(0) ||
      inputType.getDimSize(1) % group != 0)
    return node.emitError() << "weight [" << weightType.getDimSize(0)
                            << ", ...] does not match the input's "
                            << inputType.getDimSize(1)
                            << " channels in " << group << " groups",
           failure();
  size_t k = rank - 2;
  SmallVector<int64_t> strides = intsOr(node, "strides", k, 1),
                       dilations = intsOr(node, "dilations", k, 1),
                       pads = intsOr(node, "pads", 2 * k, 0),
                       outputPadding = intsOr(node, "output_padding", k, 0);
  if (strides.size() != k || dilations.size() != k || pads.size() != 2 * k ||
      outputPadding.size() != k)
    return node.emitError() << "strides, dilations and output_padding need "
                            << k << " entries and pads " << 2 * k,
           failure();
  std::string autoPad = node.stringAttr("auto_pad", "NOTSET");
  if (!llvm::is_contained({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"},
                          autoPad))
    return node.emitError() << "auto_pad '" << autoPad
                            << "' is not one of NOTSET, SAME_UPPER, "
                               "SAME_LOWER, VALID",
           failure();
  if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return node.emitError() << "pads must not be negative", failure();
  if (node.hasInput(2) && TensorBuilder::typeOf(node.input(2)).getShape() !=
                              ArrayRef<int64_t>{type->getDimSize(1)})
    return node.emitError() << "bias must have shape ["
                            << type->getDimSize(1) << "]",
           failure();
  bool derivePads = node.hasAttr("output_shape") || autoPad == "SAME_UPPER" ||
                    autoPad == "SAME_LOWER";
  for (size_t i = 0; i < k; ++i) {
    int64_t in = inputType.getDimSize(2 + i), out = type->getDimSize(2 + i);
    int64_t extent = (weightType.getDimSize(2 + i) - 1) * dilations[i] + 1;
    if (strides[i] < 1 || dilations[i] < 1 || outputPadding[i] < 0 ||
        (!derivePads &&
         outputPadding[i] >= std::max(strides[i], dilations[i])))
      return node.emitError() << "strides and dilations must be positive and "
                                 "output_padding smaller than the stride or "
                                 "dilation (axis "
                              << i << ")",
             failure();
    if (autoPad == "VALID") {
      pads[i] = pads[i + k] = 0;
    } else if (derivePads) {
      // A negative total (an output_shape past the last tap) pads the
      // end with zeros, as output_padding does.
      int64_t total = std::max<int64_t>(
          0, strides[i] * (in - 1) + outputPadding[i] + extent - out);
      int64_t half = total / 2;
      pads[i] = autoPad == "SAME_UPPER" ? half : total - half;
      pads[i + k] = total - pads[i];
    }
    // The conv this is the adjoint of maps the output back to the input.
    int64_t span = out + pads[i] + pads[i + k] - extent;
    if (span < 0 || span / strides[i] + 1 != in)
      return node.emitError() << "output size " << out << " of axis " << i
                              << " does not follow from the input size "
                              << in << ", strides, pads and output_padding",
             failure();
  }
  OpBuilder &b = node.builder();
  TensorBuilder t = node.tensors();
  Value y = node.create<ConvGradInputOp>(
      *type, node.input(0), node.input(1), b.getDenseI64ArrayAttr(strides),
      b.getDenseI64ArrayAttr(pads), b.getDenseI64ArrayAttr(dilations),
      b.getI64IntegerAttr(group));
  if (node.hasInput(2)) {
    SmallVector<int64_t> biasShape(rank, 1);
    biasShape[1] = type->getDimSize(1);
    y = t.add(y, t.reshape(node.input(2), biasShape));
  }
  node.setOutput(0, y);
  return success();
}

/// GlobalAveragePool and GlobalMaxPool: a reduction over every spatial
/// dimension that keeps them as size 1.
template <typename ReduceOpTy>
LogicalResult importGlobalPool(NodeImporter &node) {
  Value x = node.input(0);
  int64_t rank = TensorBuilder::typeOf(x).getRank();
  if (rank < 3)
    return node.emitError() << "expects an input [N, C, D1, ...] of rank 3 "
                               "or more, got rank "
                            << rank,
           failure();
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  node.setOutput(0, node.tensors().reduce<ReduceOpTy>(x, axes, true));
  return success();
}

} // namespace

void registerConvolutionImporters(OpImportTable &table) {
  table["Conv"] = importConv;
  table["MaxPool"] = importMaxPool;
  table["AveragePool"] = importAveragePool;
  table["ConvTranspose"] = importConvTranspose;
  table["GlobalAveragePool"] = importGlobalPool<ReduceMeanOp>;
  table["GlobalMaxPool"] = importGlobalPool<ReduceMaxOp>;
}

} // namespace mlir::cleave
