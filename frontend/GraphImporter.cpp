//===- GraphImporter.cpp - one ONNX graph to one func ---------------------===//

#include "frontend/GraphImporter.h"
#include "frontend/BatchDims.h"
#include "frontend/TensorSize.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>

using onnx::TensorProto;

namespace mlir::cleave {

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

GraphImporter::GraphImporter(ModuleOp module, StringRef modelPath,
                             int64_t opset, StringRef modelFunction,
                             const OpImportTable &table)
    : builder_(module.getContext()), module_(module),
      modelPath_(modelPath.str()),
      fileLoc_(FileLineColLoc::get(module.getContext(), modelPath, 0, 0)),
      opset_(opset), modelFunction_(modelFunction.str()), table_(table) {}

Type GraphImporter::elementType(int32_t onnxType) {
  MLIRContext *ctx = builder_.getContext();
  switch (onnxType) {
  case TensorProto::FLOAT:
    return Float32Type::get(ctx);
  case TensorProto::DOUBLE:
    return Float64Type::get(ctx);
  case TensorProto::FLOAT16:
    return Float16Type::get(ctx);
  case TensorProto::BFLOAT16:
    return BFloat16Type::get(ctx);
  case TensorProto::INT64:
    return IntegerType::get(ctx, 64);
  case TensorProto::INT32:
    return IntegerType::get(ctx, 32);
  case TensorProto::INT16:
    return IntegerType::get(ctx, 16);
  case TensorProto::INT8:
    return IntegerType::get(ctx, 8);
  case TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case TensorProto::BOOL:
    return IntegerType::get(ctx, 1);
  default:
    return {};
  }
}

static StringRef onnxTypeName(int32_t onnxType) {
  if (TensorProto::DataType_IsValid(onnxType))
    return TensorProto::DataType_Name(
        static_cast<TensorProto::DataType>(onnxType));
  return "an unknown type";
}

/// The data bytes `tensor` holds in raw_data or its typed field, elements of
/// `width` bytes.
static int64_t dataBytes(const TensorProto &tensor, unsigned width) {
  if (tensor.has_raw_data())
    return tensor.raw_data().size();
  switch (tensor.data_type()) {
  case TensorProto::FLOAT:
    return int64_t{tensor.float_data_size()} * 4;
  case TensorProto::DOUBLE:
    return int64_t{tensor.double_data_size()} * 8;
  case TensorProto::INT64:
    return int64_t{tensor.int64_data_size()} * 8;
  default: // int32_data holds every narrower type, one element per entry
    return int64_t{tensor.int32_data_size()} * width;
  }
}

static unsigned elementWidth(Type element) {
  return element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8;
}

LogicalResult GraphImporter::checkTensor(const TensorProto &tensor,
                                         Location loc) {
  Type element = elementType(tensor.data_type());
  if (!element)
    return emitError(loc) << "tensor '" << tensor.name()
                          << "' has element type "
                          << onnxTypeName(tensor.data_type())
                          << ", which cleave does not support";
  std::optional<int64_t> elements =
      ::cleave::frontend::checkedElementCount(tensor.dims());
  if (!elements)
    return emitError(loc) << "tensor '" << tensor.name() << "' has shape ["
                          << llvm::make_range(tensor.dims().begin(),
                                              tensor.dims().end())
                          << "]: a negative dim, or more than 2^48 elements; "
                             "the model file is corrupt";
  int64_t count = *elements;
  unsigned width = elementWidth(element);
  int64_t bytes = dataBytes(tensor, width);
  if (bytes != count * width)
    return emitError(loc) << "tensor '" << tensor.name() << "' holds " << bytes
                          << " bytes of data but its " << count
                          << " elements need " << count * width
                          << "; the model file is corrupt";
  return success();
}

FailureOr<std::string> GraphImporter::tensorBytes(const TensorProto &tensor,
                                                  Location loc) {
  if (failed(checkTensor(tensor, loc)))
    return failure();
  if (tensor.has_raw_data())
    return tensor.raw_data();
  unsigned width = elementWidth(elementType(tensor.data_type()));
  std::string bytes;
  auto append = [&](auto value, unsigned size) {
    bytes.append(reinterpret_cast<const char *>(&value), size);
  };
  switch (tensor.data_type()) {
  case TensorProto::FLOAT:
    for (float v : tensor.float_data())
      append(v, 4);
    break;
  case TensorProto::DOUBLE:
    for (double v : tensor.double_data())
      append(v, 8);
    break;
  case TensorProto::INT64:
    for (int64_t v : tensor.int64_data())
      append(v, 8);
    break;
  default:
    for (int32_t v : tensor.int32_data())
      append(v, width);
    break;
  }
  return bytes;
}

FailureOr<DenseElementsAttr> GraphImporter::toAttr(const TensorProto &tensor,
                                                   Location loc) {
  FailureOr<std::string> bytes = tensorBytes(tensor, loc);
  if (failed(bytes))
    return failure();
  Type element = elementType(tensor.data_type());
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  auto type = RankedTensorType::get(shape, element);
  if (element.isInteger(1)) {
    SmallVector<bool> values;
    for (char c : *bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(bytes->data(), bytes->size()));
}

FailureOr<RankedTensorType> GraphImporter::typeOf(const std::string &name,
                                                  Location loc,
                                                  StringRef role) {
  auto it = types_.find(name);
  const onnx::TypeProto *type = it == types_.end() ? nullptr : it->second;
  if (!type || !type->has_tensor_type())
    return emitError(loc) << role << " '" << name
                          << "' has no tensor type after ONNX shape inference",
           failure();
  const auto &tensor = type->tensor_type();
  Type element = elementType(tensor.elem_type());
  if (!element)
    return emitError(loc) << role << " '" << name << "' has element type "
                          << onnxTypeName(tensor.elem_type())
                          << ", which cleave does not support",
           failure();
  if (!tensor.has_shape())
    return emitError(loc) << role << " '" << name
                          << "' has no static shape after ONNX shape "
                             "inference; bind dynamic dims with --input-shape",
           failure();
  SmallVector<int64_t> shape;
  for (const auto &dim : tensor.shape().dim()) {
    if (!dim.has_dim_value())
      return emitError(loc)
                 << role << " '" << name << "' has dynamic dim "
                 << (dim.has_dim_param() ? "'" + dim.dim_param() + "'"
                                         : std::string("?"))
                 << " after ONNX shape inference; cleave needs static shapes: "
                    "bind the model's dynamic dims with --input-shape",
             failure();
    // ONNX's inference passes negative sizes through (a Split with size
    // -1, a Reshape to a negative dim); no tensor has them.
    if (dim.dim_value() < 0)
      return emitError(loc) << role << " '" << name << "' has the negative "
                            << "dim " << dim.dim_value()
                            << " after ONNX shape inference; check the sizes "
                               "the node is given (split sizes, shapes)",
             failure();
    shape.push_back(dim.dim_value());
  }
  if (!::cleave::frontend::checkedElementCount(shape))
    return emitError(loc) << role << " '" << name << "' has shape ["
                          << llvm::make_range(shape.begin(), shape.end())
                          << "], more than 2^48 elements; check the sizes "
                             "given with --input-shape",
           failure();
  return RankedTensorType::get(shape, element);
}

const TensorProto *GraphImporter::constant(const std::string &name) const {
  auto it = constants_.find(name);
  return it == constants_.end() ? nullptr : it->second;
}

Value GraphImporter::lookup(const std::string &name, Location loc) {
  if (auto it = values_.find(name); it != values_.end())
    return it->second;
  const TensorProto *tensor = constant(name);
  if (!tensor)
    return {};
  // Materialize a constant initializer at its first use.
  FailureOr<DenseElementsAttr> attr = toAttr(*tensor, loc);
  if (failed(attr))
    return {};
  Value value = ConstantOp::create(
      builder_, NameLoc::get(builder_.getStringAttr(name), fileLoc_), *attr);
  values_[name] = value;
  return value;
}

FailureOr<func::FuncOp> GraphImporter::importGraph(
    const onnx::GraphProto &graph, StringRef name,
    llvm::function_ref<InitializerRole(const TensorProto &)> roleOf) {
  values_.clear();
  constants_.clear();
  types_.clear();
  used_.clear();
  for (const auto *list : {&graph.input(), &graph.value_info(), &graph.output()})
    for (const auto &info : *list)
      types_.emplace(info.name(), &info.type());
  for (const auto &node : graph.node())
    for (const auto &input : node.input())
      used_.insert(input);
  for (const auto &output : graph.output())
    used_.insert(output.name());

  // Arguments: data inputs first, then parameters and states.
  SmallVector<Type> argTypes;
  SmallVector<NamedAttribute> argAttrs;
  SmallVector<std::string> argNames;
  std::set<std::string> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  auto batchDimOf = [&](const std::string &name, RankedTensorType type) {
    auto it = batchDims_.find(name);
    return it != batchDims_.end() && it->second < type.getRank() ? it->second
                                                                 : 0;
  };
  for (const auto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue;
    FailureOr<RankedTensorType> type = typeOf(input.name(), fileLoc_, "input");
    if (failed(type))
      return failure();
    if (int64_t batchDim = batchDimOf(input.name(), *type)) {
      // Batch-first: [B, d0, ..., d(k-1), d(k+1), ...].
      SmallVector<int64_t> shape(type->getShape());
      shape.erase(shape.begin() + batchDim);
      shape.insert(shape.begin(), type->getDimSize(batchDim));
      type = RankedTensorType::get(shape, type->getElementType());
    }
    argTypes.push_back(*type);
    argAttrs.push_back(builder_.getNamedAttr(CleaveDialect::kInputAttrName,
                                             builder_.getStringAttr(input.name())));
    argNames.push_back(input.name());
  }
  size_t numInputs = argTypes.size();
  for (const auto &init : graph.initializer()) {
    InitializerRole role = roleOf(init);
    if (role == InitializerRole::Constant) {
      // Checked now, so that materializing it where it is first used (an
      // operand of that node) cannot fail.
      if (failed(checkTensor(init, fileLoc_)))
        return failure();
      constants_[init.name()] = &init;
      continue;
    }
    FailureOr<std::string> bytes = tensorBytes(init, fileLoc_);
    if (failed(bytes))
      return failure();
    initialValues_[init.name()] = std::move(*bytes);
    Type element = elementType(init.data_type());
    argTypes.push_back(RankedTensorType::get(
        SmallVector<int64_t>(init.dims().begin(), init.dims().end()), element));
    StringRef attrName = role == InitializerRole::Param
                             ? CleaveDialect::kParamAttrName
                             : CleaveDialect::kStateAttrName;
    argAttrs.push_back(
        builder_.getNamedAttr(attrName, builder_.getStringAttr(init.name())));
    argNames.push_back(init.name());
  }

  // Result types come from the graph outputs.
  SmallVector<Type> resultTypes;
  for (const auto &output : graph.output()) {
    FailureOr<RankedTensorType> type =
        typeOf(output.name(), fileLoc_, "graph output");
    if (failed(type))
      return failure();
    resultTypes.push_back(*type);
  }

  builder_.setInsertionPointToEnd(module_.getBody());
  // Located at the file alone: messages about the whole graph must not
  // read as if the graph's name were a node's.
  auto func =
      func::FuncOp::create(builder_, fileLoc_, name,
                           builder_.getFunctionType(argTypes, resultTypes));
  // In one edit: setting them one at a time is quadratic in the arguments.
  SmallVector<DictionaryAttr> argDictionaries;
  for (NamedAttribute attr : argAttrs)
    argDictionaries.push_back(builder_.getDictionaryAttr({attr}));
  func.setAllArgAttrs(argDictionaries);
  // Arguments are located at the ONNX tensor they come from.
  Block *body = new Block();
  func.getBody().push_back(body);
  for (auto [type, argName] : llvm::zip(argTypes, argNames))
    body->addArgument(type,
                      NameLoc::get(builder_.getStringAttr(argName), fileLoc_));
  for (auto [i, argName] : llvm::enumerate(argNames))
    values_[argName] = body->getArgument(i);
  builder_.setInsertionPointToStart(body);
  for (auto [i, argName] : llvm::enumerate(argNames)) {
    auto type = cast<RankedTensorType>(argTypes[i]);
    int64_t batchDim = i < numInputs ? batchDimOf(argName, type) : 0;
    if (!batchDim)
      continue;
    // Back to the graph's layout, for the nodes that read the input.
    std::vector<int64_t> perm =
        ::cleave::frontend::fromBatchFirst(batchDim, type.getRank());
    SmallVector<int64_t> shape;
    for (int64_t d : perm)
      shape.push_back(type.getDimSize(d));
    values_[argName] =
        TransposeOp::create(builder_, body->getArgument(i).getLoc(),
                            RankedTensorType::get(shape, type.getElementType()),
                            body->getArgument(i),
                            builder_.getDenseI64ArrayAttr(perm))
            .getResult();
  }

  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, index))) {
      func.erase();
      return failure();
    }

  SmallVector<Value> results;
  for (auto [i, output] : llvm::enumerate(graph.output())) {
    Value value = lookup(output.name(), fileLoc_);
    if (!value) {
      func.erase();
      return emitError(fileLoc_) << "graph output '" << output.name()
                                 << "' is produced by no node",
             failure();
    }
    results.push_back(value);
    func.setResultAttr(i, CleaveDialect::kOutputAttrName,
                       builder_.getStringAttr(output.name()));
  }
  func::ReturnOp::create(builder_, fileLoc_, results);
  return func;
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        size_t index) {
  std::string name = node.name().empty()
                         ? llvm::formatv("{0}_{1}", node.op_type(), index).str()
                         : node.name();
  Location loc = NameLoc::get(builder_.getStringAttr(name), fileLoc_);
  // Nodes in the training domain have their own table entries.
  std::string key = node.domain() == "ai.onnx.preview.training"
                        ? "training." + node.op_type()
                        : node.op_type();
  auto it = table_.find(key);
  if (it == table_.end()) {
    std::string supported;
    for (const std::string &op : supportedOnnxOperatorsOf(table_))
      supported += (supported.empty() ? "" : ", ") + op;
    return emitError(loc) << "node '" << name << "' uses operator '"
                          << node.op_type() << "'"
                          << (node.domain().empty()
                                  ? ""
                                  : " of domain '" + node.domain() + "'")
                          << " (opset " << opset_
                          << "), which cleave does not support; supported "
                             "operators: "
                          << supported;
  }
  NodeImporter importer(*this, node, name, loc);
  for (unsigned i = 0; i < importer.numInputs(); ++i)
    if (importer.hasInput(i) && !values_.count(node.input(i)) &&
        !constants_.count(node.input(i)))
      return emitError(loc) << "node '" << name << "' (" << node.op_type()
                            << ") reads '" << node.input(i)
                            << "', which no node, input or initializer "
                               "produces";
  return it->second(importer);
}

std::vector<std::string> supportedOnnxOperatorsOf(const OpImportTable &table) {
  std::vector<std::string> names;
  for (const auto &entry : table) {
    StringRef key = entry.getKey();
    names.push_back(key.consume_front("training.")
                        ? (std::string(kTrainingDomainPrefix) + key.str())
                        : key.str());
  }
  llvm::sort(names);
  return names;
}

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

NodeImporter::NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
                           StringRef name, Location loc)
    : graph_(graph), node_(node), name_(name.str()), loc_(loc) {}

OpBuilder &NodeImporter::builder() { return graph_.builder(); }
int64_t NodeImporter::opset() const { return graph_.opset(); }
StringRef NodeImporter::modelFunction() const { return graph_.modelFunction(); }

bool NodeImporter::hasInput(unsigned i) const {
  return i < numInputs() && !node_.input(i).empty();
}

Value NodeImporter::input(unsigned i) {
  return hasInput(i) ? graph_.lookup(node_.input(i), loc_) : Value();
}

FailureOr<std::vector<int64_t>> NodeImporter::constantInts(unsigned i) {
  const TensorProto *tensor =
      hasInput(i) ? graph_.constant(node_.input(i)) : nullptr;
  if (tensor && (tensor->data_type() == TensorProto::INT64 ||
                 tensor->data_type() == TensorProto::INT32)) {
    FailureOr<DenseElementsAttr> attr = graph_.toAttr(*tensor, loc_);
    if (failed(attr))
      return failure();
    std::vector<int64_t> values;
    for (const APInt &v : attr->getValues<APInt>())
      values.push_back(v.getSExtValue());
    return values;
  }
  return emitError() << "input #" << i << " ('"
                     << (hasInput(i) ? node_.input(i) : "") << "')"
                     << " must be a constant integer tensor computable at "
                        "compile time; bind dynamic dims with --input-shape",
         failure();
}

FailureOr<double> NodeImporter::constantScalar(unsigned i) {
  const TensorProto *tensor =
      hasInput(i) ? graph_.constant(node_.input(i)) : nullptr;
  if (tensor) {
    FailureOr<DenseElementsAttr> attr = graph_.toAttr(*tensor, loc_);
    if (failed(attr))
      return failure();
    if (attr->getNumElements() == 1) {
      Type element = attr->getElementType();
      if (isa<FloatType>(element))
        return (*attr->value_begin<APFloat>()).convertToDouble();
      if (element.isInteger(1))
        return *attr->value_begin<bool>() ? 1.0 : 0.0;
      return static_cast<double>((*attr->value_begin<APInt>()).getSExtValue());
    }
  }
  return emitError() << "input #" << i << " ('"
                     << (hasInput(i) ? node_.input(i) : "") << "')"
                     << " must be a constant scalar",
         failure();
}

FailureOr<DenseElementsAttr> NodeImporter::constantTensor(unsigned i) {
  const TensorProto *tensor =
      hasInput(i) ? graph_.constant(node_.input(i)) : nullptr;
  if (tensor)
    return graph_.toAttr(*tensor, loc_);
  return emitError() << "input #" << i << " ('"
                     << (hasInput(i) ? node_.input(i) : "") << "')"
                     << " must be a constant",
         failure();
}

FailureOr<DenseElementsAttr>
NodeImporter::tensorAttr(const TensorProto &tensor) {
  return graph_.toAttr(tensor, loc_);
}

bool NodeImporter::outputUsed(unsigned i) const {
  return i < numOutputs() && !node_.output(i).empty() &&
         graph_.isUsed(node_.output(i));
}

FailureOr<RankedTensorType> NodeImporter::outputType(unsigned i) {
  if (i >= numOutputs() || node_.output(i).empty())
    return emitError() << "output #" << i << " is not listed", failure();
  return graph_.typeOf(node_.output(i), loc_,
                       llvm::formatv("output of node '{0}'", name_).str());
}

void NodeImporter::setOutput(unsigned i, Value value) {
  if (i < numOutputs() && !node_.output(i).empty())
    graph_.bind(node_.output(i), value);
}

void NodeImporter::setOutputs(ValueRange values) {
  for (auto [i, value] : llvm::enumerate(values))
    setOutput(i, value);
}

const onnx::AttributeProto *NodeImporter::findAttr(StringRef name) const {
  for (const auto &attr : node_.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t NodeImporter::intAttr(StringRef name, int64_t fallback) const {
  const auto *attr = findAttr(name);
  return attr ? attr->i() : fallback;
}

float NodeImporter::floatAttr(StringRef name, float fallback) const {
  const auto *attr = findAttr(name);
  return attr ? attr->f() : fallback;
}

std::string NodeImporter::stringAttr(StringRef name, StringRef fallback) const {
  const auto *attr = findAttr(name);
  return attr ? attr->s() : fallback.str();
}

std::optional<std::vector<int64_t>>
NodeImporter::intsAttr(StringRef name) const {
  const auto *attr = findAttr(name);
  if (!attr)
    return std::nullopt;
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::vector<std::string> NodeImporter::stringsAttr(StringRef name) const {
  const auto *attr = findAttr(name);
  if (!attr)
    return {};
  return {attr->strings().begin(), attr->strings().end()};
}

FailureOr<int64_t> NodeImporter::normalizeAxis(int64_t axis, int64_t rank,
                                               StringRef what) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    return emitError() << what << " " << axis << " is out of range for rank "
                       << rank,
           failure();
  return normalized;
}

InFlightDiagnostic NodeImporter::emitError() {
  return mlir::emitError(loc_) << "node '" << name_ << "' ("
                               << node_.op_type() << "): ";
}

} // namespace mlir::cleave
