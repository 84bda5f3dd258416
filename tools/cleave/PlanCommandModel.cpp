//===- PlanCommandModel.cpp - a model for planning, without its data ------===//

#include "tools/cleave/PlanCommandModel.h"
#include "frontend/BatchDims.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

namespace cleave::driver {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

bool isFloat(int32_t type) {
  return type == onnx::TensorProto::FLOAT ||
         type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::DOUBLE ||
         type == onnx::TensorProto::BFLOAT16;
}

} // namespace

llvm::Expected<PlanningModel>
readPlanningModel(llvm::StringRef path, int64_t globalBatch,
                  const std::vector<frontend::ShapeBinding> &bindings,
                  llvm::StringRef batchSymbol) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!file)
    return fail("cannot read the model '" + path +
                "': " + file.getError().message());
  PlanningModel result;
  onnx::ModelProto model;
  if (!model.ParseFromArray((*file)->getBufferStart(),
                            static_cast<int>((*file)->getBufferSize()))) {
    // ONNX text: the importer reads it (it cannot refer to external data).
    result.bytes = (*file)->getBuffer().str();
    return result;
  }
  onnx::GraphProto &graph = *model.mutable_graph();
  // (Before the external initializers below become inputs.)
  auto batchDims = frontend::findBatchDims(graph, batchSymbol);
  if (!batchDims)
    return batchDims.takeError();

  // External float initializers: their type and shape only.
  std::set<std::string> inputs;
  for (const auto &input : graph.input())
    inputs.insert(input.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (onnx::TensorProto &tensor : *graph.mutable_initializer()) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL ||
        !isFloat(tensor.data_type())) {
      kept.Add()->Swap(&tensor);
      continue;
    }
    result.shapeOnly.insert(tensor.name());
    if (inputs.count(tensor.name()))
      continue;
    onnx::ValueInfoProto *input = graph.add_input();
    input->set_name(tensor.name());
    auto *type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    for (int64_t dim : tensor.dims())
      type->mutable_shape()->add_dim()->set_dim_value(dim);
  }
  graph.mutable_initializer()->Swap(&kept);

  // The data inputs' batch: bound to --global-batch where symbolic.
  std::set<std::string> initializers;
  for (const auto &init : graph.initializer())
    initializers.insert(init.name());
  std::set<std::string> bound;
  for (const frontend::ShapeBinding &binding : bindings)
    bound.insert(binding.name);
  for (const auto &input : graph.input()) {
    if (initializers.count(input.name()) ||
        result.shapeOnly.count(input.name()))
      continue;
    const auto &shape = input.type().tensor_type().shape();
    if (bound.count(input.name()) || shape.dim_size() == 0)
      continue;
    const auto &dim = shape.dim(
        batchDims->count(input.name()) ? batchDims->at(input.name()) : 0);
    if (dim.has_dim_param() && !dim.dim_param().empty()) {
      for (const frontend::ShapeBinding &binding : bindings)
        if (binding.name == dim.dim_param() &&
            (binding.dims.size() != 1 || binding.dims[0] != globalBatch))
          return fail(llvm::formatv(
              "--input-shape binds the batch dim '{0}' of input '{1}' to "
              "{2}, but --global-batch is {3}; drop the binding (plan binds "
              "it to the global batch)",
              dim.dim_param(), input.name(),
              binding.dims.empty() ? 0 : binding.dims[0], globalBatch));
      if (!bound.count(dim.dim_param())) {
        result.batchBindings.push_back({dim.dim_param(), {globalBatch}});
        bound.insert(dim.dim_param());
      }
    } else if (dim.has_dim_value() && dim.dim_value() != globalBatch) {
      return fail(llvm::formatv(
          "the model's input '{0}' has a fixed batch of {1}, but "
          "--global-batch is {2}; give --global-batch {1} or export the "
          "model with a dynamic batch dim",
          input.name(), dim.dim_value(), globalBatch));
    }
  }
  if (!model.SerializeToString(&result.bytes))
    return fail("cannot re-serialize the model '" + path + "'");
  return result;
}

void restoreShapeOnlyParameters(mlir::ModuleOp module,
                                const std::set<std::string> &shapeOnly) {
  using mlir::cleave::CleaveDialect;
  module.walk([&](mlir::func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<mlir::StringAttr>(
          i, CleaveDialect::kInputAttrName);
      if (!name || !shapeOnly.count(name.getValue().str()))
        continue;
      func.removeArgAttr(i, CleaveDialect::kInputAttrName);
      func.setArgAttr(i, CleaveDialect::kParamAttrName, name);
    }
  });
}

} // namespace cleave::driver
