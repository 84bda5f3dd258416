//===- Export.cpp - writing the trained model as ONNX ---------------------===//

#include "runtime/Export.h"

#include "runtime/DurableFile.h"

#include "onnx/onnx_pb.h"

#include <map>

namespace cleave::rt {

bool exportOnnx(const std::string &path, const Program &program,
                void *const *tensors, std::string &error) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(program.onnxModel,
                            static_cast<int>(program.onnxModelBytes))) {
    error = "the embedded ONNX model does not parse; recompile the program";
    return false;
  }
  std::map<std::string, int> persistent;
  for (int i = 0; i < program.numTensors; ++i)
    if (program.tensors[i].role == Role::Param ||
        program.tensors[i].role == Role::State)
      persistent[program.tensors[i].name] = i;
  auto updateInitializers = [&](onnx::GraphProto &graph) {
    for (onnx::TensorProto &init : *graph.mutable_initializer()) {
      auto it = persistent.find(init.name());
      if (it == persistent.end())
        continue;
      const TensorSpec &spec = program.tensors[it->second];
      int64_t bytes = spec.shape.numElements() * dtypeSize(spec.dtype);
      // Replace whichever field held the value by raw little-endian bytes.
      onnx::TensorProto fresh;
      fresh.set_name(init.name());
      fresh.set_data_type(init.data_type());
      *fresh.mutable_dims() = init.dims();
      fresh.set_raw_data(tensors[it->second], bytes);
      init = std::move(fresh);
    }
  };
  updateInitializers(*model.mutable_graph());
  // A training_info algorithm's state (momenta, step counts) lives in its
  // own initializers. Its initialization graph must not reset the trained
  // tensors when the model is compiled again: their bindings go (the ones
  // of values the step does not change, a learning rate, stay).
  for (onnx::TrainingInfoProto &info : *model.mutable_training_info()) {
    updateInitializers(*info.mutable_algorithm());
    auto *bindings = info.mutable_initialization_binding();
    for (int i = bindings->size() - 1; i >= 0; --i)
      if (persistent.count(bindings->Get(i).key()))
        bindings->DeleteSubrange(i, 1);
    if (bindings->empty())
      info.clear_initialization();
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    error = "cannot write '" + path +
            "': the model does not serialize (an ONNX file holds at most "
            "2 GiB)";
    return false;
  }
  // Beside `path`, checked, fsynced and renamed over it.
  return writeFileDurably(path, bytes.data(), bytes.size(), error);
}

} // namespace cleave::rt
