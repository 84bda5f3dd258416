//===- ImportSpatial.cpp - Pad, Tile and Resize ---------------------------===//
//
// Data movement with a static pattern, written as cleave ops whose
// gradients exist: reflect and edge padding and nearest resizing are
// gathers with compile-time indices (their gradient a scatter-add),
// constant padding a concatenation with constants, Tile a broadcast
// between reshapes, and linear resizing one pair of gathers and weights per
// resized axis (bilinear and trilinear are separable).
//
//===----------------------------------------------------------------------===//

#include "frontend/NodeImporter.h"

#include <cmath>

namespace mlir::cleave {

namespace {

ArrayRef<int64_t> shapeOf(Value value) {
  return TensorBuilder::typeOf(value).getShape();
}

/// The pad amounts of every axis: `before[i]`, `after[i]` (negative crops).
struct PadAmounts {
  SmallVector<int64_t> before, after;
};

FailureOr<PadAmounts> readPads(NodeImporter &node, int64_t rank) {
  FailureOr<std::vector<int64_t>> pads = node.constantInts(1);
  if (failed(pads))
    return failure();
  SmallVector<int64_t> axes;
  if (node.hasInput(3)) {
    FailureOr<std::vector<int64_t>> given = node.constantInts(3);
    if (failed(given))
      return failure();
    for (int64_t axis : *given) {
      FailureOr<int64_t> normalized = node.normalizeAxis(axis, rank);
      if (failed(normalized))
        return failure();
      axes.push_back(*normalized);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  if (pads->size() != 2 * axes.size())
    return node.emitError() << "has " << pads->size() << " pads for "
                            << axes.size() << " axes (expected "
                            << 2 * axes.size() << ")",
           failure();
  PadAmounts amounts{SmallVector<int64_t>(rank, 0),
                     SmallVector<int64_t>(rank, 0)};
  for (auto [i, axis] : llvm::enumerate(axes)) {
    amounts.before[axis] = (*pads)[i];
    amounts.after[axis] = (*pads)[i + axes.size()];
  }
  return amounts;
}

/// Index of output position `i` (relative to the unpadded start) in an axis
/// of size `n`, for reflect or edge padding.
int64_t sourceIndex(int64_t i, int64_t n, bool reflect) {
  if (!reflect)
    return std::clamp<int64_t>(i, 0, n - 1);
  if (n == 1)
    return 0;
  int64_t period = 2 * (n - 1);
  i = ((i % period) + period) % period;
  return i < n ? i : period - i;
}

LogicalResult importPad(NodeImporter &node) {
  TensorBuilder t = node.tensors();
  Value x = node.input(0);
  int64_t rank = shapeOf(x).size();
  std::string mode = node.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return node.emitError() << "mode '" << mode
                            << "' is not supported (constant, reflect and "
                               "edge are)",
           failure();
  FailureOr<PadAmounts> pads = readPads(node, rank);
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(pads) || failed(type))
    return failure();
  // ONNX's inference computed the output from the same pads: a size that
  // disagrees (or overflowed there) is refused before any index is made.
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t before = pads->before[axis], after = pads->after[axis], size;
    if (__builtin_add_overflow(shapeOf(x)[axis], before, &size) ||
        __builtin_add_overflow(size, after, &size) ||
        size != type->getDimSize(axis))
      return node.emitError() << "pads " << before << " and " << after
                              << " of axis " << axis
                              << " do not give the output size "
                              << type->getDimSize(axis),
             failure();
  }
  double fill = 0.0;
  if (mode == "constant" && node.hasInput(2)) {
    FailureOr<double> value = node.constantScalar(2);
    if (failed(value))
      return failure();
    fill = *value;
  }
  Value y = x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t before = pads->before[axis], after = pads->after[axis];
    int64_t n = shapeOf(y)[axis];
    // Crops first: a negative pad removes elements.
    int64_t start = std::max<int64_t>(0, -before);
    int64_t kept = n - start - std::max<int64_t>(0, -after);
    if (kept < 0 || (kept == 0 && mode != "constant"))
      return node.emitError() << "pads " << before << " and " << after
                              << " leave nothing of axis " << axis
                              << " (size " << n << ")",
             failure();
    y = t.sliceAxis(y, axis, start, kept);
    before = std::max<int64_t>(0, before);
    after = std::max<int64_t>(0, after);
    if (before == 0 && after == 0)
      continue;
    if (mode == "reflect" && (before >= kept || after >= kept))
      return node.emitError() << "reflect pads " << before << " and " << after
                              << " of axis " << axis
                              << " must be smaller than its size " << kept,
             failure();
    if (mode == "constant") {
      SmallVector<Value> pieces;
      SmallVector<int64_t> shape(shapeOf(y));
      auto type = [&](int64_t size) {
        shape[axis] = size;
        return RankedTensorType::get(shape, t.elementTypeOf(y));
      };
      if (before)
        pieces.push_back(t.splat(type(before), fill));
      pieces.push_back(y);
      if (after)
        pieces.push_back(t.splat(type(after), fill));
      y = t.concat(pieces, axis);
      continue;
    }
    SmallVector<int64_t> indices;
    for (int64_t i = -before; i < kept + after; ++i)
      indices.push_back(sourceIndex(i, kept, mode == "reflect"));
    y = t.gather(y, indices, axis);
  }
  node.setOutput(0, y);
  return success();
}

/// Tile: x reshaped to [1, d0, 1, d1, ...], broadcast to [r0, d0, r1, d1,
/// ...] and reshaped to [r0 * d0, ...].
LogicalResult importTile(NodeImporter &node) {
  FailureOr<std::vector<int64_t>> repeats = node.constantInts(1);
  if (failed(repeats))
    return failure();
  Value x = node.input(0);
  ArrayRef<int64_t> shape = shapeOf(x);
  if (repeats->size() != shape.size())
    return node.emitError() << "has " << repeats->size()
                            << " repeats for an input of rank "
                            << shape.size(),
           failure();
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  SmallVector<int64_t> split, broadcast, result;
  for (auto [dim, repeat] : llvm::zip(shape, *repeats)) {
    int64_t size;
    if (repeat < 0 || __builtin_mul_overflow(repeat, dim, &size) ||
        size != type->getDimSize(result.size()))
      return node.emitError() << "repeat " << repeat << " of a dimension of "
                              << dim << " does not give the output's",
             failure();
    split.append({1, dim});
    broadcast.append({repeat, dim});
    result.push_back(size);
  }
  TensorBuilder t = node.tensors();
  node.setOutput(0, t.reshape(t.broadcastTo(t.reshape(x, split), broadcast),
                              result));
  return success();
}

/// Where output position `o` of a resized axis samples the input
/// (coordinate_transformation_mode).
FailureOr<double> inputCoordinate(NodeImporter &node, StringRef mode,
                                  int64_t o, int64_t in, int64_t out,
                                  double scale) {
  if (mode == "half_pixel")
    return (o + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners")
    return out > 1 ? o * double(in - 1) / double(out - 1) : 0.0;
  if (mode == "asymmetric")
    return o / scale;
  if (mode == "half_pixel_symmetric") {
    double adjustment = out / (scale * in);
    double center = in / 2.0;
    double offset = center * (1 - adjustment);
    return offset + (o + 0.5) / scale - 0.5;
  }
  return node.emitError() << "coordinate_transformation_mode '" << mode
                          << "' is not supported",
         failure();
}

int64_t nearestIndex(StringRef mode, double x) {
  double floor = std::floor(x);
  if (mode == "floor")
    return floor;
  if (mode == "ceil")
    return std::ceil(x);
  if (x - floor == 0.5)
    return mode == "round_prefer_ceil" ? floor + 1 : floor;
  return std::round(x);
}

LogicalResult importResize(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  Value x = node.input(0);
  ArrayRef<int64_t> in = shapeOf(x), out = type->getShape();
  int64_t rank = in.size();
  std::string mode = node.stringAttr("mode", "nearest");
  std::string transform =
      node.stringAttr("coordinate_transformation_mode", "half_pixel");
  std::string nearest = node.stringAttr("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear")
    return node.emitError() << "mode '" << mode
                            << "' is not supported (nearest and linear are)",
           failure();
  if (node.opset() < 11)
    return node.emitError() << "Resize before opset 11 (scales as input 1, "
                               "asymmetric coordinates) is not supported: "
                               "export with opset 11 or later",
           failure();
  if (!llvm::is_contained({"round_prefer_floor", "round_prefer_ceil",
                           "floor", "ceil"},
                          nearest))
    return node.emitError() << "nearest_mode '" << nearest
                            << "' is not one of round_prefer_floor, "
                               "round_prefer_ceil, floor, ceil",
           failure();
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel",
                           "align_corners", "asymmetric",
                           "half_pixel_symmetric"},
                          transform))
    return node.emitError() << "coordinate_transformation_mode '" << transform
                            << "' is not supported (half_pixel, "
                               "pytorch_half_pixel, align_corners, "
                               "asymmetric and half_pixel_symmetric are)",
           failure();
  if (node.intAttr("antialias", 0) || node.intAttr("exclude_outside", 0))
    return node.emitError() << "antialias and exclude_outside are not "
                               "supported",
           failure();
  if (node.hasAttr("axes") ||
      node.stringAttr("keep_aspect_ratio_policy", "stretch") != "stretch")
    return node.emitError() << "axes and keep_aspect_ratio_policy are not "
                               "supported",
           failure();
  if (!TensorBuilder::elementTypeOf(x).isF32())
    return node.emitError() << "expects a float32 input", failure();
  // Scales (input 2) when given, else out / in.
  SmallVector<double> scales;
  if (node.hasInput(2)) {
    FailureOr<DenseElementsAttr> given = node.constantTensor(2);
    if (failed(given))
      return failure();
    if (!isa<FloatType>(given->getElementType()))
      return node.emitError() << "scales must be float", failure();
    for (APFloat v : given->getValues<APFloat>())
      scales.push_back(v.convertToDouble());
  }
  if (scales.empty())
    for (int64_t i = 0; i < rank; ++i)
      scales.push_back(double(out[i]) / double(in[i]));
  if (static_cast<int64_t>(scales.size()) != rank)
    return node.emitError() << "has " << scales.size()
                            << " scales for an input of rank " << rank,
           failure();
  for (double scale : scales)
    if (!(scale > 0) || !std::isfinite(scale))
      return node.emitError() << "scale " << scale
                              << " must be finite and positive",
             failure();

  TensorBuilder t = node.tensors();
  Value y = x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    if (in[axis] == out[axis] && scales[axis] == 1.0)
      continue;
    SmallVector<int64_t> lower, upper;
    SmallVector<float> weights;
    for (int64_t o = 0; o < out[axis]; ++o) {
      FailureOr<double> coordinate = inputCoordinate(
          node, transform, o, in[axis], out[axis], scales[axis]);
      if (failed(coordinate))
        return failure();
      if (mode == "nearest") {
        lower.push_back(std::clamp<int64_t>(
            nearestIndex(nearest, *coordinate), 0, in[axis] - 1));
        continue;
      }
      double floor = std::floor(*coordinate);
      lower.push_back(std::clamp<int64_t>(floor, 0, in[axis] - 1));
      upper.push_back(std::clamp<int64_t>(floor + 1, 0, in[axis] - 1));
      weights.push_back(*coordinate - floor);
    }
    if (mode == "nearest") {
      y = t.gather(y, lower, axis);
      continue;
    }
    // y = a + (b - a) * w, with w broadcast along the axis.
    SmallVector<int64_t> weightShape(rank, 1);
    weightShape[axis] = out[axis];
    auto weightType =
        RankedTensorType::get(weightShape, t.elementTypeOf(y));
    Value w = ConstantOp::create(
        t.b, t.loc,
        DenseElementsAttr::get(weightType, ArrayRef<float>(weights)));
    Value a = t.gather(y, lower, axis), b = t.gather(y, upper, axis);
    y = t.add(a, t.mul(t.sub(b, a), w));
  }
  node.setOutput(0, t.reshape(y, out));
  return success();
}

} // namespace

void registerSpatialImporters(OpImportTable &table) {
  table["Pad"] = importPad;
  table["Tile"] = importTile;
  table["Resize"] = importResize;
}

} // namespace mlir::cleave
