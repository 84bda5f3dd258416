//===- ModelWithoutValues.cpp - an ONNX model less some tensors' data -----===//

#include "frontend/ModelWithoutValues.h"

#include "onnx/onnx_pb.h"

namespace mlir::cleave {

std::optional<std::string>
modelWithoutValues(llvm::StringRef serializedModel,
                   const llvm::StringSet<> &names) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(serializedModel.data(),
                            static_cast<int>(serializedModel.size())))
    return std::nullopt;
  auto strip = [&](onnx::GraphProto &graph) {
    for (onnx::TensorProto &init : *graph.mutable_initializer()) {
      if (!names.contains(init.name()))
        continue;
      onnx::TensorProto shell;
      shell.set_name(init.name());
      shell.set_data_type(init.data_type());
      *shell.mutable_dims() = init.dims();
      init = std::move(shell);
    }
  };
  strip(*model.mutable_graph());
  for (onnx::TrainingInfoProto &info : *model.mutable_training_info())
    strip(*info.mutable_algorithm());
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return std::nullopt;
  return bytes;
}

} // namespace mlir::cleave
