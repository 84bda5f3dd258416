//===- GraphFolding.cpp - shape arithmetic folded before import -----------===//

#include "frontend/GraphFolding.h"
#include "frontend/ShapeArithmetic.h"
#include "frontend/TensorSize.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace cleave::frontend {

namespace {

/// Static shape of `name` from graph inputs, outputs and value_info.
const onnx::TypeProto *findType(const onnx::GraphProto &graph,
                                const std::string &name) {
  for (const auto *list : {&graph.input(), &graph.value_info(), &graph.output()})
    for (const auto &info : *list)
      if (info.name() == name)
        return &info.type();
  return nullptr;
}

std::optional<std::vector<int64_t>> staticShape(const onnx::TypeProto *type) {
  if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape())
    return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto &dim : type->tensor_type().shape().dim()) {
    if (!dim.has_dim_value())
      return std::nullopt;
    dims.push_back(dim.dim_value());
  }
  return dims;
}

/// The tensor a Constant node's attribute denotes (value, value_float,
/// value_int, value_floats, value_ints); nullopt for sparse and string ones.
std::optional<onnx::TensorProto> constantTensor(const onnx::AttributeProto &attr) {
  onnx::TensorProto tensor;
  const std::string &name = attr.name();
  if (name == "value")
    return attr.t();
  if (name == "value_float") {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_float_data(attr.f());
  } else if (name == "value_int") {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_int64_data(attr.i());
  } else if (name == "value_floats") {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_dims(attr.floats_size());
    *tensor.mutable_float_data() = attr.floats();
  } else if (name == "value_ints") {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_dims(attr.ints_size());
    *tensor.mutable_int64_data() = attr.ints();
  } else {
    return std::nullopt;
  }
  return tensor;
}

} // namespace

bool foldShapeArithmetic(onnx::GraphProto &graph,
                         std::set<std::string> &folded) {
  // Float initializers are parameters, never folded; float constants that
  // folding made (from Constant nodes) are.
  std::map<std::string, IntTensor> known;
  for (const auto &init : graph.initializer())
    if (auto t = readIntTensor(init))
      if (t->dataType != onnx::TensorProto::FLOAT || folded.count(init.name()))
        known[init.name()] = std::move(*t);
  std::set<std::string> graphOutputs;
  for (const auto &output : graph.output())
    graphOutputs.insert(output.name());

  bool changed = false;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (const auto &node : graph.node()) {
    std::optional<std::vector<IntTensor>> results;
    if (node.domain().empty() || node.domain() == "ai.onnx") {
      if (node.op_type() == "Shape" && node.input_size() == 1) {
        if (auto dims = staticShape(findType(graph, node.input(0)))) {
          int64_t rank = dims->size(), start = 0, end = rank;
          for (const auto &attr : node.attribute()) {
            if (attr.name() == "start")
              start = attr.i() < 0 ? attr.i() + rank : attr.i();
            if (attr.name() == "end")
              end = attr.i() < 0 ? attr.i() + rank : attr.i();
          }
          start = std::clamp<int64_t>(start, 0, rank);
          end = std::clamp<int64_t>(end, start, rank);
          IntTensor t{{end - start},
                      {dims->begin() + start, dims->begin() + end},
                      onnx::TensorProto::INT64};
          results = std::vector<IntTensor>{t};
        }
      } else if (node.op_type() == "Size" && node.input_size() == 1) {
        if (auto dims = staticShape(findType(graph, node.input(0))))
          if (std::optional<int64_t> n = checkedElementCount(*dims))
            results = std::vector<IntTensor>{IntTensor{{}, {*n}}};
      } else if (node.op_type() == "Constant" && node.attribute_size() == 1 &&
                 !graphOutputs.count(node.output(0))) {
        // Any tensor constant becomes an initializer, so that importers can
        // read constant inputs (a Dropout ratio, say) in one place.
        std::optional<onnx::TensorProto> constant =
            constantTensor(node.attribute(0));
        if (!constant) {
          *kept.Add() = node;
          continue;
        }
        onnx::TensorProto tensor = std::move(*constant);
        tensor.set_name(node.output(0));
        if (auto t = readIntTensor(tensor))
          known[node.output(0)] = std::move(*t);
        *graph.add_initializer() = std::move(tensor);
        folded.insert(node.output(0));
        changed = true;
        continue;
      } else {
        std::vector<const IntTensor *> inputs;
        bool any = false;
        for (const auto &name : node.input()) {
          auto it = known.find(name);
          inputs.push_back(it == known.end() ? nullptr : &it->second);
          any |= it != known.end();
        }
        if (any)
          results = evaluateShapeNode(node, inputs);
      }
    }
    // Graph outputs stay computed by nodes so they remain visible results.
    bool feedsOutput = llvm::any_of(node.output(), [&](const std::string &o) {
      return graphOutputs.count(o) > 0;
    });
    if (!results || results->size() != static_cast<size_t>(node.output_size()) ||
        feedsOutput) {
      *kept.Add() = node;
      continue;
    }
    for (int i = 0; i < node.output_size(); ++i) {
      *graph.add_initializer() = writeIntTensor((*results)[i], node.output(i));
      folded.insert(node.output(i));
      known[node.output(i)] = std::move((*results)[i]);
    }
    changed = true;
  }
  graph.mutable_node()->Swap(&kept);
  return changed;
}

bool completeShapes(onnx::GraphProto &graph) {
  bool changed = false;
  for (const auto &node : graph.node()) {
    if (node.op_type() != "Einsum" || node.output_size() != 1 ||
        !(node.domain().empty() || node.domain() == "ai.onnx"))
      continue;
    if (staticShape(findType(graph, node.output(0))))
      continue;
    std::vector<std::vector<int64_t>> inputs;
    int32_t elementType = 0;
    for (const auto &name : node.input()) {
      auto init = llvm::find_if(graph.initializer(), [&](const auto &t) {
        return t.name() == name;
      });
      if (init != graph.initializer().end()) {
        inputs.emplace_back(init->dims().begin(), init->dims().end());
        elementType = init->data_type();
        continue;
      }
      const onnx::TypeProto *type = findType(graph, name);
      auto dims = staticShape(type);
      if (!dims)
        break;
      inputs.push_back(*dims);
      elementType = type->tensor_type().elem_type();
    }
    std::string equation;
    for (const auto &attr : node.attribute())
      if (attr.name() == "equation")
        equation = attr.s();
    if (inputs.size() != static_cast<size_t>(node.input_size()))
      continue;
    std::optional<std::vector<int64_t>> dims =
        einsumResultShape(equation, inputs);
    if (!dims)
      continue;
    onnx::ValueInfoProto *info = nullptr;
    for (auto &existing : *graph.mutable_value_info())
      if (existing.name() == node.output(0))
        info = &existing;
    if (!info) {
      info = graph.add_value_info();
      info->set_name(node.output(0));
    }
    auto *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elementType);
    tensor->clear_shape();
    for (int64_t d : *dims)
      tensor->mutable_shape()->add_dim()->set_dim_value(d);
    changed = true;
  }
  return changed;
}

} // namespace cleave::frontend
