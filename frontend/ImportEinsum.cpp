//===- ImportEinsum.cpp - Einsum as transposes, reductions and matmuls ----===//
//
// An Einsum equation is lowered the way a BLAS-backed einsum evaluates it:
// labels no one needs any more are summed out, then operands are
// contracted pairwise from the left, each pair as one batched matmul
// (batch labels, then the left operand's free labels, then the contracted
// ones), and the result is transposed into the output order. Ellipses
// become fresh labels aligned from the right, broadcasting as numpy does.
// Repeated labels within one operand (diagonals and traces) are refused.
//
//===----------------------------------------------------------------------===//

#include "frontend/NodeImporter.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::cleave {

namespace {

/// A tensor with one label per dimension. Labels are chars: the equation's
/// letters, or characters from 0x80 up for ellipsis dimensions.
struct Labeled {
  Value value;
  std::string labels;
};

constexpr char kEllipsisBase = static_cast<char>(0x80);

/// Splits "ab,bc->ac" into its operand terms and its output (absent: the
/// implicit output).
struct ParsedEquation {
  SmallVector<std::string> inputs;
  std::optional<std::string> output;
};

FailureOr<ParsedEquation> parseEquation(NodeImporter &node,
                                        StringRef equation) {
  std::string text;
  for (char c : equation)
    if (c != ' ')
      text += c;
  ParsedEquation parsed;
  StringRef rest = text;
  auto [lhs, rhs] = rest.split("->");
  if (rest.contains("->"))
    parsed.output = rhs.str();
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  for (StringRef term : terms)
    parsed.inputs.push_back(term.str());
  auto valid = [](StringRef term) {
    std::string s = term.str();
    size_t dots = s.find("...");
    if (dots != std::string::npos)
      s.erase(dots, 3);
    return llvm::all_of(s, [](char c) { return llvm::isAlpha(c); });
  };
  for (StringRef term : parsed.inputs)
    if (!valid(term))
      return node.emitError() << "equation '" << equation
                              << "' has an invalid term '" << term << "'",
             failure();
  if (parsed.output && !valid(*parsed.output))
    return node.emitError() << "equation '" << equation
                            << "' has an invalid output '" << *parsed.output
                            << "'",
           failure();
  return parsed;
}

/// Replaces "..." in `term` by `count` ellipsis labels, the last ellipsis
/// dimension of every operand labelled alike (numpy alignment).
std::string expandEllipsis(StringRef term, int64_t count, int64_t maxCount) {
  size_t dots = term.find("...");
  if (dots == StringRef::npos)
    return term.str();
  std::string labels;
  for (int64_t i = maxCount - count; i < maxCount; ++i)
    labels += static_cast<char>(kEllipsisBase + i);
  return (term.take_front(dots) + labels + term.drop_front(dots + 3)).str();
}

/// Sums out the labels of `x` not in `keep`.
Labeled sumOut(TensorBuilder &t, Labeled x, StringRef keep) {
  SmallVector<int64_t> axes;
  std::string kept;
  for (auto [i, label] : llvm::enumerate(x.labels)) {
    if (keep.contains(label))
      kept += label;
    else
      axes.push_back(i);
  }
  if (axes.empty())
    return x;
  return {t.reduceSum(x.value, axes, false), kept};
}

/// Transposes `x` so its labels read `order` (a permutation of them).
Value permuteTo(TensorBuilder &t, const Labeled &x, StringRef order) {
  SmallVector<int64_t> perm;
  for (char label : order)
    perm.push_back(x.labels.find(label));
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return x.value;
  return t.transpose(x.value, perm);
}

/// Contracts `a` and `b`, keeping the labels in `keep`.
Labeled contract(TensorBuilder &t, Labeled a, Labeled b, StringRef keep) {
  std::string batch, left, right, summed;
  for (char label : a.labels) {
    bool inB = b.labels.find(label) != std::string::npos;
    bool kept = keep.contains(label);
    if (inB && kept)
      batch += label;
    else if (inB)
      summed += label;
    else
      left += label;
  }
  for (char label : b.labels)
    if (a.labels.find(label) == std::string::npos)
      right += label;
  auto sizeOf = [&](const Labeled &x, char label) {
    return TensorBuilder::typeOf(x.value).getDimSize(x.labels.find(label));
  };
  // A summed label of size 1 on one side (an ellipsis dimension
  // broadcasting): sum it out of the other side first, keeping size 1.
  for (char label : summed)
    for (Labeled *x : {&a, &b})
      if (sizeOf(*x, label) != 1 && sizeOf(x == &a ? b : a, label) == 1)
        x->value = t.reduceSum(x->value, {int64_t(x->labels.find(label))},
                               true);
  // Batch labels broadcast (a size-1 ellipsis dimension against a larger).
  SmallVector<int64_t> batchShape;
  for (char label : batch)
    batchShape.push_back(std::max(sizeOf(a, label), sizeOf(b, label)));
  auto product = [&](const Labeled &x, StringRef labels) {
    int64_t n = 1;
    for (char label : labels)
      n *= sizeOf(x, label);
    return n;
  };
  int64_t batchCount = 1;
  for (int64_t d : batchShape)
    batchCount *= d;
  auto operand = [&](const Labeled &x, StringRef middle, StringRef last) {
    Value v = permuteTo(t, x, (batch + middle + last).str());
    SmallVector<int64_t> full(batchShape);
    for (char label : (middle + last).str())
      full.push_back(sizeOf(x, label));
    v = t.broadcastTo(v, full);
    return t.reshape(v, {batchCount, product(x, middle), product(x, last)});
  };
  Value lhs = operand(a, left, summed);
  Value rhs = operand(b, summed, right);
  Value product3 = t.matmul(lhs, rhs);
  SmallVector<int64_t> shape(batchShape);
  for (char label : left)
    shape.push_back(sizeOf(a, label));
  for (char label : right)
    shape.push_back(sizeOf(b, label));
  return {t.reshape(product3, shape), batch + left + right};
}

LogicalResult importEinsum(NodeImporter &node) {
  FailureOr<RankedTensorType> type = node.outputType(0);
  if (failed(type))
    return failure();
  std::string equation = node.stringAttr("equation", "");
  FailureOr<ParsedEquation> parsed = parseEquation(node, equation);
  if (failed(parsed))
    return failure();
  if (parsed->inputs.size() != node.numInputs())
    return node.emitError() << "equation '" << equation << "' has "
                            << parsed->inputs.size() << " terms for "
                            << node.numInputs() << " inputs",
           failure();
  // Label every operand's dimensions, ellipses included.
  int64_t maxEllipsis = 0;
  SmallVector<int64_t> ellipsisCounts;
  for (auto [i, term] : llvm::enumerate(parsed->inputs)) {
    int64_t rank = TensorBuilder::typeOf(node.input(i)).getRank();
    int64_t letters = llvm::count_if(term, [](char c) { return llvm::isAlpha(c); });
    bool hasDots = StringRef(term).contains("...");
    int64_t count = rank - letters;
    if (count < 0 || (!hasDots && count != 0))
      return node.emitError() << "term '" << term << "' does not match input #"
                              << i << " of rank " << rank,
             failure();
    ellipsisCounts.push_back(count);
    maxEllipsis = std::max(maxEllipsis, count);
  }
  TensorBuilder t = node.tensors();
  SmallVector<Labeled> operands;
  for (auto [i, term] : llvm::enumerate(parsed->inputs)) {
    std::string labels =
        expandEllipsis(term, ellipsisCounts[i], maxEllipsis);
    for (auto [j, label] : llvm::enumerate(labels))
      if (labels.find(label) != j)
        return node.emitError()
                   << "label '" << label << "' repeats within term '" << term
                   << "' (diagonals and traces are not supported)",
               failure();
    operands.push_back({node.input(i), labels});
  }
  std::string output;
  if (parsed->output) {
    output = expandEllipsis(*parsed->output, maxEllipsis, maxEllipsis);
  } else {
    // Implicit output: ellipsis labels, then the letters used once, sorted.
    for (int64_t i = 0; i < maxEllipsis; ++i)
      output += static_cast<char>(kEllipsisBase + i);
    std::string once;
    for (char c = 'A'; c <= 'z'; ++c) {
      if (!llvm::isAlpha(c))
        continue;
      int64_t uses = 0;
      for (const Labeled &x : operands)
        uses += llvm::count(x.labels, c);
      if (uses == 1)
        once += c;
    }
    output += once;
  }
  for (auto [i, label] : llvm::enumerate(output))
    if (output.find(label) != i)
      return node.emitError() << "output label '" << label
                              << "' is given twice",
             failure();
  for (char label : output)
    if (llvm::none_of(operands, [&](const Labeled &x) {
          return x.labels.find(label) != std::string::npos;
        }))
      return node.emitError() << "output label '" << label
                              << "' appears in no input",
             failure();

  // Labels still needed after operand `i`: the output's and later ones'.
  auto neededAfter = [&](size_t i) {
    std::string needed = output;
    for (size_t j = i + 1; j < operands.size(); ++j)
      needed += operands[j].labels;
    return needed;
  };
  Labeled acc = sumOut(t, operands[0], neededAfter(0));
  for (size_t i = 1; i < operands.size(); ++i) {
    std::string needed = neededAfter(i);
    Labeled next = sumOut(t, operands[i], needed + acc.labels);
    acc = sumOut(t, acc, needed + next.labels);
    acc = contract(t, acc, next, needed);
  }
  acc = sumOut(t, acc, output);
  node.setOutput(0, t.reshape(permuteTo(t, acc, output), type->getShape()));
  return success();
}

} // namespace

void registerEinsumImporters(OpImportTable &table) {
  table["Einsum"] = importEinsum;
}

} // namespace mlir::cleave
