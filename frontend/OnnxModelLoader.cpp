//===- OnnxModelLoader.cpp - read and prepare an ONNX model ---------------===//

#include "frontend/OnnxModelLoader.h"
#include "frontend/BatchDims.h"
#include "frontend/GraphFolding.h"
#include "frontend/GuardedSchemaRegistry.h"
#include "frontend/TensorSize.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <map>
#include <set>

using llvm::formatv;
using llvm::StringRef;

namespace cleave::frontend {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Bytes per element of the tensor types whose data can be loaded.
int64_t elementSize(int32_t type) {
  switch (type) {
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
    return 8;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return 2;
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
    return 1;
  default:
    return 0;
  }
}

/// Parses `bytes` (binary protobuf or ONNX text); `path` names them in
/// messages.
llvm::Error parseModel(StringRef bytes, StringRef path,
                       onnx::ModelProto &model) {
  // ONNX text starts with the model header `<ir_version: ...>`, possibly
  // after `#` comment lines; protobuf binary never starts with '<' or '#'.
  StringRef text = bytes.ltrim();
  while (text.starts_with("#"))
    text = text.drop_until([](char c) { return c == '\n'; }).ltrim();
  if (text.starts_with("<")) {
    onnx::Status status;
    // ONNX's parser converts numbers with std::stof/stoll, which throw on
    // out-of-range or malformed literals instead of returning a status.
    // The parser reads a NUL-terminated string.
    std::string terminated = bytes.str();
    try {
      status = onnx::OnnxParser::Parse(model, terminated.c_str());
    } catch (const std::exception &e) {
      return fail(formatv(
          "'{0}' is not valid ONNX text: a number literal is "
          "malformed or out of range (std::{1} failed); fix the literal",
          path, e.what()));
    }
    if (!status.IsOK())
      return fail(formatv("'{0}' is not valid ONNX text: {1}", path,
                          status.ErrorMessage()));
    return llvm::Error::success();
  }
  if (bytes.empty() || !model.ParseFromArray(bytes.data(), bytes.size()) ||
      !model.has_graph())
    return fail(formatv("'{0}' is not an ONNX model: the protobuf is truncated "
                        "or is not a ModelProto; export it again with "
                        "torch.onnx.export or onnx.save",
                        path));
  return llvm::Error::success();
}

/// Names every nameless node `<op_type>_<index>` by its position in its own
/// graph, before folding removes nodes, so messages and locations match
/// the file.
void nameNodes(onnx::GraphProto &graph) {
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto &node = *graph.mutable_node(i);
    if (node.name().empty())
      node.set_name(formatv("{0}_{1}", node.op_type(), i).str());
  }
}

llvm::Error checkOpsets(const onnx::ModelProto &model, StringRef path,
                        int64_t &opset) {
  opset = 0;
  for (const auto &import : model.opset_import()) {
    const std::string &domain = import.domain();
    if (domain.empty() || domain == "ai.onnx") {
      opset = import.version();
      if (opset > kMaxOpset || opset < kMinConvertibleOpset)
        return fail(formatv(
            "'{0}' uses opset {1} of the default ONNX domain; cleave supports "
            "opsets {2} to {3} (and converts {4} to {5} with ONNX's version "
            "converter): export with torch.onnx.export(..., opset_version=17)",
            path, opset, kMinOpset, kMaxOpset, kMinConvertibleOpset,
            kMinOpset - 1));
    } else if (domain == kTrainingDomain) {
      if (import.version() != 1)
        return fail(formatv("'{0}' imports domain '{1}' at version {2}; cleave "
                            "supports version 1: set that opset_import to 1",
                            path, domain, import.version()));
    } else {
      return fail(formatv(
          "'{0}' imports the unsupported operator domain '{1}' (version {2}); "
          "cleave supports the default ONNX domain and '{3}': export without "
          "custom or contrib operators",
          path, domain, import.version(), kTrainingDomain));
    }
  }
  if (opset == 0) {
    for (const auto &node : model.graph().node())
      if (node.domain().empty() || node.domain() == "ai.onnx")
        return fail(formatv("'{0}' uses operator '{1}' of the default ONNX "
                            "domain but does not import that domain; add "
                            "opset_import {{ domain: \"\", version: 17 }",
                            path, node.op_type()));
    opset = kMaxOpset;
  }
  return llvm::Error::success();
}

/// Runs ONNX's checker, whose message names the node or field at fault.
llvm::Error checkModel(const onnx::ModelProto &model, StringRef path) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return fail(formatv("'{0}' fails the ONNX checker: {1}", path, e.what()));
  }
  return llvm::Error::success();
}

/// Refuses a graph output that no input, initializer or node defines. ONNX's
/// checker lets such outputs through, and its version converter (1.12)
/// dereferences them.
llvm::Error checkOutputsDefined(const onnx::GraphProto &graph) {
  std::set<std::string> defined;
  for (const auto &input : graph.input())
    defined.insert(input.name());
  for (const auto &init : graph.initializer())
    defined.insert(init.name());
  for (const auto &node : graph.node())
    defined.insert(node.output().begin(), node.output().end());
  for (const auto &output : graph.output())
    if (!defined.count(output.name()))
      return fail(
          formatv("graph output '{0}' is produced by no node", output.name()));
  return llvm::Error::success();
}

/// Upgrades opsets 7-12 to 13 with ONNX's own version converter, which
/// expects a model that passed the checker.
llvm::Error upgradeOpset(onnx::ModelProto &model, StringRef path,
                         int64_t &opset) {
  if (opset >= kMinOpset)
    return llvm::Error::success();
  if (llvm::Error err = checkOutputsDefined(model.graph()))
    return err;
  try {
    model = onnx::version_conversion::ConvertVersion(model, kMinOpset);
  } catch (const std::exception &e) {
    return fail(formatv("'{0}' uses opset {1}, and ONNX's version converter "
                        "could not upgrade it to opset {2}: {3}; export with "
                        "torch.onnx.export(..., opset_version=17)",
                        path, opset, kMinOpset, e.what()));
  }
  opset = kMinOpset;
  // What the converter made is checked like any model.
  return checkModel(model, path);
}

/// Replaces every external-data initializer by its bytes, refusing any
/// location outside the model's directory. A model read from memory
/// (`fromFile` false) has no directory: its external data is refused.
llvm::Error loadExternalData(onnx::GraphProto &graph, StringRef path,
                             bool fromFile) {
  if (!fromFile) {
    for (const onnx::TensorProto &tensor : graph.initializer())
      if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
        return fail(formatv("initializer '{0}' has external data, but the "
                            "model '{1}' was given in memory, with no "
                            "directory to read it from; save the model with "
                            "its data inside",
                            tensor.name(), path));
    return llvm::Error::success();
  }
  llvm::SmallString<256> modelDir(path);
  llvm::sys::path::remove_filename(modelDir);
  if (modelDir.empty())
    modelDir = ".";
  llvm::SmallString<256> realModelDir;
  if (std::error_code ec = llvm::sys::fs::real_path(modelDir, realModelDir))
    return fail(formatv("cannot resolve the directory of '{0}': {1}", path,
                        ec.message()));
  for (onnx::TensorProto &tensor : *graph.mutable_initializer()) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &entry : tensor.external_data()) {
      if (entry.key() == "location") {
        location = entry.value();
        continue;
      }
      if (entry.key() != "offset" && entry.key() != "length")
        continue;
      int64_t value;
      if (StringRef(entry.value()).getAsInteger(10, value) || value < 0)
        return fail(formatv("initializer '{0}': external data {1} '{2}' is not "
                            "a non-negative integer",
                            tensor.name(), entry.key(), entry.value()));
      (entry.key() == "offset" ? offset : length) = value;
    }
    if (location.empty())
      return fail(formatv("initializer '{0}' has external data without a "
                          "location",
                          tensor.name()));
    if (llvm::sys::path::is_absolute(location))
      return fail(formatv("initializer '{0}' has external data at the "
                          "absolute path '{1}'; external data must be a "
                          "relative path inside the model's directory",
                          tensor.name(), location));
    // Refuse escapes lexically first (without revealing what exists outside
    // the directory), then again after resolving symbolic links.
    llvm::SmallString<256> dataPath(realModelDir);
    llvm::sys::path::append(dataPath, location);
    llvm::sys::path::remove_dots(dataPath, /*remove_dot_dot=*/true);
    auto escapes = [&](StringRef resolved) {
      return !resolved.starts_with((realModelDir + "/").str());
    };
    auto escapeError = [&] {
      return fail(formatv("initializer '{0}' has external data location "
                          "'{1}', which escapes the model's directory '{2}'; "
                          "move the data file next to the model",
                          tensor.name(), location, realModelDir));
    };
    if (escapes(dataPath))
      return escapeError();
    llvm::SmallString<256> realDataPath;
    if (std::error_code ec = llvm::sys::fs::real_path(dataPath, realDataPath))
      return fail(formatv("initializer '{0}': cannot open its external data "
                          "file '{1}': {2}; keep the data file next to the "
                          "model",
                          tensor.name(), location, ec.message()));
    if (escapes(realDataPath))
      return escapeError();
    auto buffer = llvm::MemoryBuffer::getFile(realDataPath, false, false);
    if (!buffer)
      return fail(formatv("initializer '{0}': cannot read '{1}': {2}",
                          tensor.name(), location,
                          buffer.getError().message()));
    std::optional<int64_t> elements =
        checkedElementCount(tensor.dims());
    if (!elements)
      return fail(formatv("initializer '{0}' has a negative dim or more than "
                          "2^48 elements; the model file is corrupt",
                          tensor.name()));
    int64_t expected = elementSize(tensor.data_type()) * *elements;
    if (length < 0)
      length = expected;
    int64_t fileSize = (*buffer)->getBufferSize();
    if (length != expected)
      return fail(formatv("initializer '{0}': external data length {1} does "
                          "not match the {2} bytes its type and shape need",
                          tensor.name(), length, expected));
    if (offset > fileSize || fileSize - offset < length)
      return fail(formatv("initializer '{0}': '{1}' has {2} bytes but the "
                          "tensor needs {3} at offset {4}; the data file is "
                          "truncated or belongs to another model",
                          tensor.name(), location, fileSize, length, offset));
    tensor.set_raw_data((*buffer)->getBufferStart() + offset, length);
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::DEFAULT);
  }
  return llvm::Error::success();
}

/// Entries in the typed field that holds `tensor`'s data when it has no
/// raw_data.
int64_t typedEntries(const onnx::TensorProto &tensor) {
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    return tensor.float_data_size();
  case onnx::TensorProto::DOUBLE:
    return tensor.double_data_size();
  case onnx::TensorProto::INT64:
    return tensor.int64_data_size();
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    return tensor.uint64_data_size();
  default: // the narrower types, one element per entry
    return tensor.int32_data_size();
  }
}

/// Refuses a numeric tensor whose data is not what its shape needs. ONNX's
/// shape inference reads such data out of bounds (1.12's ParseData copies
/// a raw_data shorter than one element into an empty vector).
llvm::Error checkTensorData(const onnx::TensorProto &tensor,
                            const llvm::Twine &what) {
  int64_t size = elementSize(tensor.data_type());
  if (size == 0) // strings and the types cleave cannot load
    return llvm::Error::success();
  std::optional<int64_t> elements = checkedElementCount(tensor.dims());
  if (!elements)
    return fail(what + " has a negative dim or more than 2^48 elements; the "
                       "model file is corrupt");
  if (tensor.has_raw_data()) {
    int64_t bytes = tensor.raw_data().size();
    if (bytes != *elements * size)
      return fail(what + formatv(" holds {0} bytes of data but its {1} "
                                 "elements need {2}; the model file is "
                                 "corrupt",
                                 bytes, *elements, *elements * size));
  } else if (int64_t entries = typedEntries(tensor); entries != *elements) {
    return fail(what + formatv(" holds {0} values but its shape needs {1}; "
                               "the model file is corrupt",
                               entries, *elements));
  }
  return llvm::Error::success();
}

/// Checks the data of every initializer and tensor attribute of `graph` and
/// its subgraphs.
llvm::Error checkGraphData(const onnx::GraphProto &graph) {
  for (const onnx::TensorProto &tensor : graph.initializer())
    if (llvm::Error err = checkTensorData(
            tensor, formatv("initializer '{0}'", tensor.name()).str()))
      return err;
  for (const onnx::NodeProto &node : graph.node())
    for (const onnx::AttributeProto &attr : node.attribute()) {
      std::string what =
          formatv("attribute '{0}' of node '{1}'", attr.name(), node.name())
              .str();
      if (attr.has_t())
        if (llvm::Error err = checkTensorData(attr.t(), what))
          return err;
      for (const onnx::TensorProto &tensor : attr.tensors())
        if (llvm::Error err = checkTensorData(tensor, what))
          return err;
      if (attr.has_g())
        if (llvm::Error err = checkGraphData(attr.g()))
          return err;
      for (const onnx::GraphProto &subgraph : attr.graphs())
        if (llvm::Error err = checkGraphData(subgraph))
          return err;
    }
  return llvm::Error::success();
}

/// Binds the symbolic dimensions of graph inputs (and matching outputs) from
/// the --input-shape flags.
llvm::Error bindDimensions(onnx::GraphProto &graph,
                           const std::vector<ShapeBinding> &bindings) {
  std::set<std::string> initializers;
  for (const auto &init : graph.initializer())
    initializers.insert(init.name());
  std::map<std::string, int64_t> symbols;
  std::map<std::string, const ShapeBinding *> wholeInputs;
  std::set<std::string> inputNames, symbolNames;
  for (const auto &input : graph.input()) {
    inputNames.insert(input.name());
    for (const auto &dim : input.type().tensor_type().shape().dim())
      if (dim.has_dim_param())
        symbolNames.insert(dim.dim_param());
  }
  std::set<std::string> boundNames;
  for (const ShapeBinding &binding : bindings) {
    if (!boundNames.insert(binding.name).second)
      return fail(formatv("--input-shape names '{0}' twice; give each name "
                          "once",
                          binding.name));
    if (inputNames.count(binding.name)) {
      wholeInputs[binding.name] = &binding;
    } else if (symbolNames.count(binding.name)) {
      if (binding.dims.size() != 1)
        return fail(formatv("--input-shape {0}: '{0}' is a symbolic dimension "
                            "and takes one size, not {1}",
                            binding.name, binding.dims.size()));
      symbols[binding.name] = binding.dims[0];
    } else {
      std::string known;
      for (const auto &n : inputNames)
        if (!initializers.count(n))
          known += (known.empty() ? "" : ", ") + n;
      for (const auto &n : symbolNames)
        known += (known.empty() ? "" : ", ") + n;
      return fail(formatv("--input-shape names '{0}', which is neither a graph "
                          "input nor a symbolic dimension of the model (known: "
                          "{1})",
                          binding.name, known.empty() ? "none" : known));
    }
  }
  for (auto &input : *graph.mutable_input()) {
    if (initializers.count(input.name()))
      continue;
    if (!input.type().has_tensor_type())
      return fail(formatv("graph input '{0}' is not a tensor; cleave supports "
                          "tensor inputs only",
                          input.name()));
    auto *shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (auto it = wholeInputs.find(input.name()); it != wholeInputs.end()) {
      const ShapeBinding &binding = *it->second;
      if (binding.dims.size() != static_cast<size_t>(shape->dim_size()))
        return fail(formatv("--input-shape {0}: gives {1} dims but input '{0}' "
                            "has rank {2}",
                            input.name(), binding.dims.size(),
                            shape->dim_size()));
      for (int i = 0; i < shape->dim_size(); ++i) {
        auto *dim = shape->mutable_dim(i);
        if (dim->has_dim_value() && dim->dim_value() != binding.dims[i])
          return fail(formatv("--input-shape {0}: dim {1} is fixed to {2} in "
                              "the model but the flag gives {3}",
                              input.name(), i, dim->dim_value(),
                              binding.dims[i]));
        if (dim->has_dim_param() && symbols.count(dim->dim_param()) &&
            symbols[dim->dim_param()] != binding.dims[i])
          return fail(formatv("--input-shape {0} sets dim {1} ('{2}') to {3} "
                              "but --input-shape {2} sets it to {4}",
                              input.name(), i, dim->dim_param(),
                              binding.dims[i], symbols[dim->dim_param()]));
        dim->set_dim_value(binding.dims[i]);
      }
    }
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto *dim = shape->mutable_dim(i);
      if (dim->has_dim_value())
        continue;
      if (dim->has_dim_param()) {
        auto it = symbols.find(dim->dim_param());
        if (it != symbols.end()) {
          dim->set_dim_value(it->second);
          continue;
        }
        return fail(formatv(
            "input '{0}' dimension {1} is the dynamic dim '{2}'; cleave needs "
            "static shapes: bind it with --input-shape {2}=<size> (or give "
            "the whole shape with --input-shape {0}=D0x...)",
            input.name(), i, dim->dim_param()));
      }
      return fail(formatv("input '{0}' dimension {1} has no size; bind it with "
                          "--input-shape {0}=D0x...",
                          input.name(), i));
    }
  }
  // Outputs and value_info carry the same symbols; let inference redo them.
  graph.clear_value_info();
  for (auto &output : *graph.mutable_output()) {
    auto *shape = output.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto &dim : *shape->mutable_dim())
      if (dim.has_dim_param()) {
        auto it = symbols.find(dim.dim_param());
        if (it != symbols.end())
          dim.set_dim_value(it->second);
        else
          dim.clear_dim_param();
      }
  }
  return llvm::Error::success();
}

llvm::Error inferShapes(onnx::ModelProto &model, StringRef what) {
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/true,
                                        /*strict_mode=*/1,
                                        /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, guardedSchemaRegistry(), options);
  } catch (const std::exception &e) {
    return fail(formatv("ONNX shape inference failed on {0}: {1}", what,
                        StringRef(e.what()).trim()));
  }
  return llvm::Error::success();
}

/// Builds the training graph of one TrainingInfoProto: the inference graph
/// followed by the algorithm graph, as the ONNX spec defines it.
onnx::GraphProto combineWithAlgorithm(const onnx::GraphProto &main,
                                      const onnx::GraphProto &algorithm) {
  onnx::GraphProto combined = main;
  combined.set_name(algorithm.name().empty() ? main.name() + "_training"
                                             : algorithm.name());
  combined.clear_output();
  for (const auto &input : algorithm.input())
    *combined.add_input() = input;
  for (const auto &init : algorithm.initializer())
    *combined.add_initializer() = init;
  for (const auto &node : algorithm.node())
    *combined.add_node() = node;
  for (const auto &output : algorithm.output())
    *combined.add_output() = output;
  for (const auto &info : algorithm.value_info())
    *combined.add_value_info() = info;
  return combined;
}

} // namespace

llvm::Expected<ShapeBinding> parseShapeBinding(StringRef text) {
  auto [name, dimsText] = text.split('=');
  if (name.empty() || dimsText.empty())
    return fail(formatv("--input-shape '{0}' is not NAME=DIMS (for example "
                        "batch=64 or x=64x784)",
                        text));
  ShapeBinding binding{name.str(), {}};
  llvm::SmallVector<StringRef> parts;
  std::string dims = dimsText.str();
  std::replace(dims.begin(), dims.end(), ',', 'x');
  StringRef(dims).split(parts, 'x');
  for (StringRef part : parts) {
    int64_t dim;
    if (part.getAsInteger(10, dim) || dim <= 0)
      return fail(formatv("--input-shape '{0}': '{1}' is not a positive size",
                          text, part));
    binding.dims.push_back(dim);
  }
  return binding;
}

namespace {

/// The initializer named `name` among the graph's and the algorithm's, or
/// null.
onnx::TensorProto *findInitializer(onnx::ModelProto &model,
                                   onnx::TrainingInfoProto &info,
                                   const std::string &name) {
  for (onnx::GraphProto *graph :
       {model.mutable_graph(), info.mutable_algorithm()})
    for (onnx::TensorProto &tensor : *graph->mutable_initializer())
      if (tensor.name() == name)
        return &tensor;
  return nullptr;
}

std::string describeTensor(const onnx::TensorProto &tensor) {
  std::string text = onnx::TensorProto_DataType_Name(
      static_cast<onnx::TensorProto_DataType>(tensor.data_type()));
  text += "[";
  for (int i = 0; i < tensor.dims_size(); ++i)
    text += (i ? "," : "") + std::to_string(tensor.dims(i));
  return text + "]";
}

/// Computes `info`'s initialization graph, if it has one, with `run` and
/// puts its outputs into the initializers initialization_binding names (of
/// the inference graph or the algorithm), as the ONNX spec has it happen
/// when training starts.
llvm::Error runInitialization(onnx::ModelProto &model,
                              onnx::TrainingInfoProto &info, int index,
                              const InitializationRunner &run) {
  const onnx::GraphProto &graph = info.initialization();
  if (graph.node_size() == 0 && graph.output_size() == 0) {
    if (info.initialization_binding_size() > 0)
      return fail(formatv("training_info[{0}] binds '{1}' in "
                          "initialization_binding but has no initialization "
                          "graph; add the graph or remove the bindings",
                          index, info.initialization_binding(0).key()));
    return llvm::Error::success();
  }
  // `cleave import` and `annotate` need no initial values.
  if (!run)
    return llvm::Error::success();
  if (graph.input_size() > 0)
    return fail(formatv("training_info[{0}] initialization graph has input "
                        "'{1}', but the ONNX spec gives it none; make it a "
                        "Constant or an initializer of that graph",
                        index, graph.input(0).name()));
  onnx::ModelProto initModel;
  initModel.set_ir_version(model.ir_version());
  *initModel.mutable_opset_import() = model.opset_import();
  *initModel.mutable_graph() = graph;
  if (initModel.graph().name().empty())
    initModel.mutable_graph()->set_name("initialization");
  llvm::Expected<TensorsByName> outputs = run(initModel);
  if (!outputs)
    return outputs.takeError();
  for (const onnx::StringStringEntryProto &entry :
       info.initialization_binding()) {
    onnx::TensorProto *target = findInitializer(model, info, entry.key());
    if (!target)
      return fail(formatv("training_info[{0}] initialization_binding key "
                          "'{1}' names no initializer of the model graph or "
                          "of the algorithm graph; each key must be an "
                          "initializer the initialization graph sets",
                          index, entry.key()));
    auto it = outputs->find(entry.value());
    if (it == outputs->end())
      return fail(formatv("training_info[{0}] initialization_binding of "
                          "'{1}' takes its value from '{2}', which is not an "
                          "output of the initialization graph; list it in "
                          "initialization.output",
                          index, entry.key(), entry.value()));
    onnx::TensorProto value = it->second;
    value.set_name(entry.key());
    if (value.data_type() != target->data_type() ||
        !std::equal(value.dims().begin(), value.dims().end(),
                    target->dims().begin(), target->dims().end()))
      return fail(formatv("training_info[{0}] initialization graph output "
                          "'{1}' is {2}, but the initializer '{3}' it is "
                          "bound to is {4}; make the two agree",
                          index, entry.value(), describeTensor(value),
                          entry.key(), describeTensor(*target)));
    *target = std::move(value);
  }
  info.clear_initialization();
  info.clear_initialization_binding();
  return llvm::Error::success();
}

/// Prepares the model `bytes`, read from the file `path` or, when not
/// `fromFile`, given in memory under that name.
llvm::Expected<LoadedModel> loadModel(StringRef bytes, StringRef path,
                                      bool fromFile,
                                      const LoadOptions &options) {
  LoadedModel loaded;
  onnx::ModelProto &model = loaded.model;
  if (llvm::Error err = parseModel(bytes, path, model))
    return std::move(err);
  if (llvm::Error err = checkOpsets(model, path, loaded.opset))
    return std::move(err);
  nameNodes(*model.mutable_graph());
  for (auto &info : *model.mutable_training_info()) {
    nameNodes(*info.mutable_algorithm());
    nameNodes(*info.mutable_initialization());
  }
  if (llvm::Error err =
          loadExternalData(*model.mutable_graph(), path, fromFile))
    return std::move(err);
  for (auto &info : *model.mutable_training_info())
    for (onnx::GraphProto *graph :
         {info.mutable_algorithm(), info.mutable_initialization()})
      if (llvm::Error err = loadExternalData(*graph, path, fromFile))
        return std::move(err);
  if (llvm::Error err = checkGraphData(model.graph()))
    return std::move(err);
  for (const auto &info : model.training_info())
    for (const onnx::GraphProto *graph :
         {&info.algorithm(), &info.initialization()})
      if (llvm::Error err = checkGraphData(*graph))
        return std::move(err);
  if (llvm::Error err = checkModel(model, path))
    return std::move(err);
  if (llvm::Error err = upgradeOpset(model, path, loaded.opset))
    return std::move(err);
  loaded.original = model;
  auto batchDims = findBatchDims(model.graph(), options.batchSymbol);
  if (!batchDims)
    return batchDims.takeError();
  loaded.batchDims = std::move(*batchDims);
  if (llvm::Error err =
          bindDimensions(*model.mutable_graph(), options.shapeBindings))
    return std::move(err);
  if (llvm::Error err = inferShapes(model, "the model graph"))
    return std::move(err);
  // Folding one level of shape arithmetic can make the next level's shapes
  // static (a Reshape whose target was computed), so alternate with shape
  // inference until nothing more folds. Each round folds at least one node
  // or gives one more node output its shape.
  while (foldShapeArithmetic(*model.mutable_graph(), loaded.foldedConstants) ||
         completeShapes(*model.mutable_graph()))
    if (llvm::Error err = inferShapes(model, "the model graph"))
      return std::move(err);

  // Each algorithm with the model is one graph, checked before any
  // initialization graph is compiled and run.
  std::set<std::string> modelNames;
  for (const auto &init : model.graph().initializer())
    modelNames.insert(init.name());
  for (const auto &input : model.graph().input())
    modelNames.insert(input.name());
  for (auto [index, info] : llvm::enumerate(model.training_info())) {
    for (const auto &init : info.algorithm().initializer())
      if (modelNames.count(init.name()))
        return fail(formatv("training_info[{0}]: the algorithm's initializer "
                            "'{1}' has the name of a model tensor; rename the "
                            "algorithm's",
                            index, init.name()));
    onnx::ModelProto combined = model;
    combined.clear_training_info();
    *combined.mutable_graph() =
        combineWithAlgorithm(model.graph(), info.algorithm());
    // ONNX's checker skips training_info: it checks the algorithm's nodes
    // (attributes, arities) here.
    try {
      onnx::checker::check_model(combined);
    } catch (const std::exception &e) {
      return fail(formatv("'{0}': the training algorithm '{1}' fails the ONNX "
                          "checker: {2}",
                          path, info.algorithm().name(),
                          StringRef(e.what()).trim()));
    }
  }

  for (auto [index, info] : llvm::enumerate(*model.mutable_training_info()))
    if (llvm::Error err =
            runInitialization(model, info, index, options.runInitialization))
      return std::move(err);
  for (const auto &info : model.training_info()) {
    onnx::ModelProto combined = model;
    combined.clear_training_info();
    *combined.mutable_graph() =
        combineWithAlgorithm(model.graph(), info.algorithm());
    if (llvm::Error err = inferShapes(
            combined, formatv("the training algorithm '{0}'",
                              info.algorithm().name())
                          .str()))
      return std::move(err);
    loaded.algorithms.push_back(combined.graph());
  }
  return loaded;
}

} // namespace

llvm::Expected<LoadedModel> loadOnnxModel(StringRef path,
                                          const LoadOptions &options) {
  // A device (/dev/zero) would be read until memory runs out.
  if (auto type = llvm::sys::fs::get_file_type(path);
      type == llvm::sys::fs::file_type::character_file ||
      type == llvm::sys::fs::file_type::block_file)
    return fail(
        formatv("'{0}' is a device, not a file; give the model's file", path));
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(
        formatv("cannot read '{0}': {1}", path, buffer.getError().message()));
  return loadModel((*buffer)->getBuffer(), path, /*fromFile=*/true, options);
}

llvm::Expected<LoadedModel> loadOnnxModel(llvm::MemoryBufferRef buffer,
                                          const LoadOptions &options) {
  return loadModel(buffer.getBuffer(), buffer.getBufferIdentifier(),
                   /*fromFile=*/false, options);
}

} // namespace cleave::frontend
