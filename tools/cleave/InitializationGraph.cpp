//===- InitializationGraph.cpp - training_info initialization -------------===//

#include "tools/cleave/InitializationGraph.h"

#include "runtime/Npy.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <fstream>

namespace cleave::driver {
namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Runs `args` (args[0] the program) with stdout and stderr in `log`;
/// returns the exit status (-1 when it could not run) and sets `output` to
/// what it printed.
int runLogged(llvm::ArrayRef<llvm::StringRef> args, llvm::StringRef log,
              std::string &output) {
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log, log};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(args[0], args, std::nullopt, redirects, 0,
                                     0, &error);
  output = error;
  if (auto text = llvm::MemoryBuffer::getFile(log))
    output += (*text)->getBuffer().rtrim().str();
  return rc;
}

/// The ONNX element type of a .npy kind, or UNDEFINED.
onnx::TensorProto_DataType dataTypeOf(const std::string &kind) {
  if (kind == "f4")
    return onnx::TensorProto_DataType_FLOAT;
  if (kind == "f8")
    return onnx::TensorProto_DataType_DOUBLE;
  if (kind == "i8")
    return onnx::TensorProto_DataType_INT64;
  if (kind == "i4")
    return onnx::TensorProto_DataType_INT32;
  if (kind == "b1")
    return onnx::TensorProto_DataType_BOOL;
  return onnx::TensorProto_DataType_UNDEFINED;
}

} // namespace

llvm::Expected<frontend::TensorsByName>
runInitializationGraph(const onnx::ModelProto &model) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("cleave-initialization", dir))
    return fail("cannot create a directory for the training_info "
                "initialization graph: " +
                ec.message());
  struct RemoveDir {
    llvm::SmallString<128> &dir;
    ~RemoveDir() { llvm::sys::fs::remove_directories(dir); }
  } removeDir{dir};
  auto at = [&](llvm::StringRef name) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    return std::string(path);
  };
  std::string modelPath = at("initialization.onnx"),
              program = at("initialization"), outputs = at("outputs");
  {
    std::ofstream file(modelPath, std::ios::binary);
    if (!model.SerializeToOstream(&file))
      return fail("cannot write the training_info initialization graph to " +
                  modelPath);
  }

  // This cleave compiles the graph for the cpu, inference only, and the
  // program computes it once on made-up inputs (it has none).
  static int anchor;
  std::string self = llvm::sys::fs::getMainExecutable("cleave", &anchor);
  std::string output;
  // A log each: a redirected file is not truncated when it is opened.
  if (runLogged({self, "compile", modelPath, "--inference", "-o", program},
                at("compile.log"), output) != 0)
    return fail("the training_info initialization graph cannot be "
                "compiled:\n" +
                output);
  if (runLogged({program, "--synthetic", "--steps", "1", "--quiet",
                 "--dump-outputs", outputs},
                at("run.log"), output) != 0)
    return fail("the training_info initialization graph failed to run:\n" +
                output);

  frontend::TensorsByName tensors;
  for (const onnx::ValueInfoProto &info : model.graph().output()) {
    rt::NpyArray array;
    std::string error;
    if (!rt::readNpy(at("outputs/" + rt::npyFileName(info.name())), array,
                     error))
      return fail("the training_info initialization graph's output '" +
                  info.name() + "' could not be read back: " + error);
    onnx::TensorProto tensor;
    tensor.set_name(info.name());
    tensor.set_data_type(dataTypeOf(array.kind));
    for (int64_t dim : array.shape)
      tensor.add_dims(dim);
    tensor.set_raw_data(array.data.data(), array.data.size());
    tensors[info.name()] = std::move(tensor);
  }
  return tensors;
}

} // namespace cleave::driver
