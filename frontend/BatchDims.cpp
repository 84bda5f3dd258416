//===- BatchDims.cpp - where the samples lie in each data input -----------===//

#include "frontend/BatchDims.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>
#include <vector>

using llvm::formatv;

namespace cleave::frontend {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The dims of `input` named `symbol`.
std::vector<int64_t> dimsNamed(const onnx::ValueInfoProto &input,
                               llvm::StringRef symbol) {
  std::vector<int64_t> dims;
  const auto &shape = input.type().tensor_type().shape();
  for (int i = 0; i < shape.dim_size(); ++i)
    if (shape.dim(i).has_dim_param() && shape.dim(i).dim_param() == symbol)
      dims.push_back(i);
  return dims;
}

std::string shapeText(const onnx::ValueInfoProto &input) {
  std::string text = "[";
  const auto &shape = input.type().tensor_type().shape();
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto &dim = shape.dim(i);
    text += i ? ", " : "";
    text += dim.has_dim_value()   ? std::to_string(dim.dim_value())
            : dim.has_dim_param() ? dim.dim_param()
                                  : std::string("?");
  }
  return text + "]";
}

} // namespace

llvm::Expected<std::map<std::string, int64_t>>
findBatchDims(const onnx::GraphProto &graph, llvm::StringRef batchSymbol) {
  std::set<std::string> initializers;
  for (const auto &init : graph.initializer())
    initializers.insert(init.name());
  std::vector<const onnx::ValueInfoProto *> inputs;
  for (const auto &input : graph.input())
    if (!initializers.count(input.name()) && input.type().has_tensor_type() &&
        input.type().tensor_type().shape().dim_size() > 0)
      inputs.push_back(&input);

  std::map<std::string, int64_t> batchDims;
  for (const onnx::ValueInfoProto *input : inputs)
    batchDims[input->name()] = 0;
  // Inputs without a dynamic dim take no part in the choice: a fixed
  // shape has no symbol to find (and cleave plan presents the weights it
  // does not read as such inputs).
  std::vector<const onnx::ValueInfoProto *> dynamic;
  for (const onnx::ValueInfoProto *input : inputs)
    if (llvm::any_of(input->type().tensor_type().shape().dim(),
                     [](const auto &dim) { return dim.has_dim_param(); }))
      dynamic.push_back(input);
  if (!batchSymbol.empty()) {
    if (dynamic.empty())
      return fail(formatv("--batch-symbol {0}: the model has no data input "
                          "with a dynamic dim",
                          batchSymbol));
    for (const onnx::ValueInfoProto *input : dynamic) {
      std::vector<int64_t> dims = dimsNamed(*input, batchSymbol);
      if (dims.size() != 1)
        return fail(formatv(
            "--batch-symbol {0}: data input '{1}' of shape {2} has {3} dims "
            "named '{0}', not one; every data input needs its batch dim "
            "named so (torch.onnx.export's dynamic_axes)",
            batchSymbol, input->name(), shapeText(*input), dims.size()));
      batchDims[input->name()] = dims[0];
    }
    return batchDims;
  }
  if (dynamic.empty())
    return batchDims;
  // Symbols that every such input has exactly once and that read as a batch.
  std::set<std::string> candidates;
  for (const auto &dim : dynamic[0]->type().tensor_type().shape().dim())
    if (dim.has_dim_param() &&
        llvm::StringRef(dim.dim_param()).contains_insensitive("batch"))
      candidates.insert(dim.dim_param());
  for (auto it = candidates.begin(); it != candidates.end();) {
    bool everywhere = llvm::all_of(dynamic, [&](const auto *input) {
      return dimsNamed(*input, *it).size() == 1;
    });
    it = everywhere ? std::next(it) : candidates.erase(it);
  }
  if (candidates.size() != 1)
    return batchDims;
  for (const onnx::ValueInfoProto *input : dynamic)
    batchDims[input->name()] = dimsNamed(*input, *candidates.begin())[0];
  return batchDims;
}

std::vector<int64_t> fromBatchFirst(int64_t batchDim, int64_t rank) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i < batchDim ? i + 1 : i == batchDim ? 0 : i);
  return perm;
}

} // namespace cleave::frontend
