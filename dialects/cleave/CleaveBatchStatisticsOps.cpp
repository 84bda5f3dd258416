//===- CleaveBatchStatisticsOps.cpp - a split BatchNorm's sums --------===//
//
// Checks of the per-channel sum ops of CleaveBatchStatisticsOps.td: an
// [N, C, ...] input, per-channel values of C elements, positive divisors.
//
//===----------------------------------------------------------------------===//

#include "dialects/cleave/CleaveOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The channels of `input` ([N, C, ...]), or failure if its rank is < 2.
FailureOr<int64_t> channelsOf(Operation *op, Value input) {
  auto type = cast<ShapedType>(input.getType());
  if (type.getRank() < 2)
    return op->emitOpError() << "expects an input of rank >= 2 ([N, C, ...]) "
                                "but got rank "
                             << type.getRank();
  return type.getDimSize(1);
}

/// Every value of `perChannel` is 1-d of `channels` elements of `input`'s
/// element type.
LogicalResult
verifyPerChannel(Operation *op, Value input, int64_t channels,
                 ArrayRef<std::pair<StringRef, Value>> perChannel) {
  Type element = cast<ShapedType>(input.getType()).getElementType();
  for (auto [name, value] : perChannel) {
    auto type = cast<ShapedType>(value.getType());
    if (type.getShape() != ArrayRef<int64_t>{channels})
      return op->emitOpError()
             << name << " has shape " << formatShape(type.getShape())
             << " but [" << channels << "] (one value per channel) was "
             << "expected";
    if (type.getElementType() != element)
      return op->emitOpError()
             << name << " has element type " << type.getElementType() << " but "
             << element << " was expected";
  }
  return success();
}

LogicalResult verifyAtLeastOne(Operation *op, StringRef name, int64_t value) {
  if (value >= 1)
    return success();
  return op->emitOpError() << name << " " << value << " must be >= 1";
}

/// Elements per channel of `input` ([N, C, ...]).
int64_t perChannel(Value input) {
  auto type = cast<ShapedType>(input.getType());
  int64_t channels = type.getDimSize(1);
  return channels ? type.getNumElements() / channels : 0;
}

} // namespace

LogicalResult BatchNormSumOp::verify() {
  FailureOr<int64_t> channels = channelsOf(*this, getInput());
  if (failed(channels) || failed(verifyPerChannel(*this, getInput(), *channels,
                                                  {{"result", getResult()}})))
    return failure();
  return verifyAtLeastOne(*this, "divisor", getDivisorAttr().getInt());
}

LogicalResult BatchNormSquaredDeviationSumOp::verify() {
  FailureOr<int64_t> channels = channelsOf(*this, getInput());
  if (failed(channels) ||
      failed(verifyPerChannel(*this, getInput(), *channels,
                              {{"mean", getMean()}, {"result", getResult()}})))
    return failure();
  return verifyAtLeastOne(*this, "divisor", getDivisorAttr().getInt());
}

LogicalResult BatchNormGradSumsOp::verify() {
  if (getOutputGrad().getType() != getInput().getType())
    return emitOpError("output_grad must have the input's type");
  FailureOr<int64_t> channels = channelsOf(*this, getInput());
  if (failed(channels))
    return failure();
  return verifyPerChannel(*this, getInput(), *channels,
                          {{"mean", getMean()},
                           {"sum_grad", getSumGrad()},
                           {"sum_grad_centered", getSumGradCentered()}});
}

LogicalResult BatchNormGradFromSumsOp::verify() {
  if (getOutputGrad().getType() != getInput().getType() ||
      getInputGrad().getType() != getInput().getType())
    return emitOpError("output_grad and input_grad must have the input's type");
  FailureOr<int64_t> channels = channelsOf(*this, getInput());
  if (failed(channels) ||
      failed(verifyPerChannel(*this, getInput(), *channels,
                              {{"scale", getScale()},
                               {"mean", getMean()},
                               {"variance", getVariance()},
                               {"sum_grad", getSumGrad()},
                               {"sum_grad_centered", getSumGradCentered()},
                               {"scale_grad", getScaleGrad()},
                               {"bias_grad", getBiasGrad()}})))
    return failure();
  float epsilon = getEpsilon().convertToFloat();
  if (!(epsilon >= 0) || std::isinf(epsilon))
    return emitOpError() << "epsilon " << epsilon << " must be finite and >= 0";
  int64_t count = getCountAttr().getInt();
  if (failed(verifyAtLeastOne(*this, "count", count)))
    return failure();
  if (count < perChannel(getInput()))
    return emitOpError() << "count " << count << " is less than the input's "
                         << perChannel(getInput()) << " elements per channel";
  return success();
}
