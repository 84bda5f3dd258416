//===- IndexInputRanges.cpp - ranges of label and index inputs ------------===//

#include "frontend/IndexInputRanges.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace mlir::cleave {

namespace {

/// The values an index operand may hold, and what reads it.
struct IndexRange {
  int64_t low, high;
  std::optional<int64_t> ignore;
  std::string use;
};

std::string nodeOf(Operation *op) {
  std::string node;
  op->getLoc()->walk([&](Location loc) {
    if (auto name = dyn_cast<NameLoc>(loc); name && node.empty())
      node = name.getName().str();
    return WalkResult::advance();
  });
  return node;
}

int64_t dimOf(Value value, int64_t dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}

/// The range `user` requires of its operand `operand`, if it reads it as
/// labels or indices.
std::optional<IndexRange> rangeRequiredBy(Operation *user, Value operand) {
  auto labels = [&](Value scores, std::optional<uint64_t> ignore) {
    IndexRange range{0, dimOf(scores, 1), std::nullopt,
                     "the class labels of node '" + nodeOf(user) + "'"};
    if (ignore)
      range.ignore = static_cast<int64_t>(*ignore);
    return range;
  };
  if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(user);
      loss && loss.getLabels() == operand)
    return labels(loss.getScores(), loss.getIgnoreIndex());
  if (auto loss = dyn_cast<NllLossOp>(user);
      loss && loss.getTarget() == operand)
    return labels(loss.getInput(), loss.getIgnoreIndex());
  if (auto gather = dyn_cast<GatherOp>(user);
      gather && gather.getIndices() == operand) {
    int64_t size = dimOf(gather.getData(), gather.getAxis());
    return IndexRange{-size, size, std::nullopt,
                      "the indices of node '" + nodeOf(user) + "'"};
  }
  return std::nullopt;
}

/// Whether `op` passes every element of its operands to its results (a
/// slice or split passes some elements to some readers: the values a reader
/// requires would not bind the others).
bool passesAllValues(Operation *op) {
  return isa<ReshapeOp, TransposeOp, ConcatOp>(op);
}

} // namespace

void annotateIndexInputRanges(func::FuncOp func) {
  Builder builder(func.getContext());
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.getElementType().isInteger() ||
        !func.getArgAttr(arg.getArgNumber(), CleaveDialect::kInputAttrName))
      continue;
    // Every value holding the input's elements, and what reads them.
    llvm::SetVector<Value> values;
    values.insert(arg);
    std::optional<IndexRange> range;
    for (size_t i = 0; i < values.size(); ++i)
      for (OpOperand &use : values[i].getUses()) {
        Operation *user = use.getOwner();
        if (passesAllValues(user)) {
          values.insert(user->result_begin(), user->result_end());
          continue;
        }
        std::optional<IndexRange> required = rangeRequiredBy(user, use.get());
        if (!required)
          continue;
        // Several readers: the values must suit them all (an ignore index
        // only when all share it).
        if (!range) {
          range = required;
          continue;
        }
        range->low = std::max(range->low, required->low);
        range->high = std::min(range->high, required->high);
        if (range->ignore != required->ignore)
          range->ignore.reset();
        range->use += " and " + required->use;
      }
    if (!range)
      continue;
    SmallVector<NamedAttribute> fields = {
        builder.getNamedAttr("low", builder.getI64IntegerAttr(range->low)),
        builder.getNamedAttr("high", builder.getI64IntegerAttr(range->high)),
        builder.getNamedAttr("use", builder.getStringAttr(range->use))};
    if (range->ignore)
      fields.push_back(builder.getNamedAttr(
          "ignore", builder.getI64IntegerAttr(*range->ignore)));
    func.setArgAttr(arg.getArgNumber(), CleaveDialect::kIndexRangeAttrName,
                    builder.getDictionaryAttr(fields));
  }
}

} // namespace mlir::cleave
