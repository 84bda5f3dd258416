//===- Export.cpp - writing the trained model as ONNX ---------------------===//

#include "runtime/Export.h"

#include "onnx/onnx_pb.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <unistd.h>

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
  for (onnx::TensorProto &init : *model.mutable_graph()->mutable_initializer()) {
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
  std::string temporary = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary);
    if (!out || !model.SerializeToOstream(&out)) {
      error = "cannot write '" + temporary + "': " + std::strerror(errno);
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot rename '" + temporary + "' to '" + path +
            "': " + std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

} // namespace cleave::rt
