//===- TensorTable.cpp - the program's table of named tensors -------------===//
//
// The driver allocates, loads, checkpoints and dumps tensors by this table:
// one row per argument (input, parameter, state, step counter), then per
// graph output, each with its .npy file name, element type, local shape,
// role, embedded initial value and, when split, its sharding and stage.
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"
#include "codegen/SourceText.h"
#include "runtime/Npy.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

LogicalResult Emitter::emitTable(EmittedProgram &program, std::string &table,
                                 std::string &argPointers, int &numTensors) {
  Block &block = func.getBody().front();
  llvm::raw_string_ostream tableOs(table);
  llvm::raw_string_ostream pointersOs(argPointers);
  // Parameters and state share checkpoint and dump directories, a file
  // each: two of one name would overwrite each other.
  llvm::StringMap<StringRef> persistentRoles;
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto attrName = [&](StringRef kind) {
      auto attr = func.getArgAttrOfType<StringAttr>(i, kind);
      return attr ? attr.getValue() : StringRef();
    };
    StringRef role, name;
    if (!(name = attrName(CleaveDialect::kInputAttrName)).empty())
      role = "Input";
    else if (!(name = attrName(CleaveDialect::kParamAttrName)).empty())
      role = "Param";
    else if (!(name = attrName(CleaveDialect::kStateAttrName)).empty())
      role = "State";
    else if (func.getArgAttr(i, CleaveDialect::kStepAttrName)) {
      role = "Step";
      name = "step";
    } else {
      return func.emitError() << "argument #" << i
                              << " is neither an input, a parameter, a "
                                 "state nor the step counter";
    }
    FailureOr<std::string> file = fileNameLiteral(name);
    if (failed(file))
      return failure();
    if (role == "Param" || role == "State") {
      auto [it, inserted] = persistentRoles.try_emplace(name, role);
      if (!inserted)
        return func.emitError()
               << "two tensors are named '" << name << "' (a "
               << (it->second == "Param" ? "parameter" : "training state")
               << " and a "
               << (role == "Param" ? "parameter" : "training state")
               << ", such as an optimizer state named after its parameter); "
                  "the program would mix them up: rename the parameter";
    }
    std::string element = cType(tensorType(arg).getElementType());
    std::string dtype = dtypeEnum(tensorType(arg).getElementType());
    if (dtype.empty())
      return func.emitError()
             << "argument '" << name << "' has element type "
             << tensorType(arg).getElementType() << ", which the "
             << traits.name << " target does not support";
    // Split tensors: the table holds the local block's shape and the
    // sharding; the embedded initial value is the whole tensor.
    std::string sharding;
    RankedTensorType globalType = tensorType(arg);
    if (auto attr = func.getArgAttrOfType<ShardingAttr>(
            i, CleaveDialect::kShardingAttrName);
        attr && mesh && !attr.isFullyReplicated()) {
      SmallVector<int64_t> shape(globalType.getShape());
      for (int64_t d = 0; d < globalType.getRank(); ++d)
        shape[d] *= mesh.getGroupSize(attr.getDimAxes(d));
      sharding = cppStringLiteral(attr.formatDims());
      globalType = RankedTensorType::get(shape, globalType.getElementType());
    }
    int64_t offset = -1;
    bool zeros = func.getArgAttr(i, CleaveDialect::kInitAttrName) != nullptr;
    if ((role == "Param" || role == "State") && !zeros) {
      offset = program.embeddedBytes;
      int64_t bytes = tensorBytes(globalType);
      program.embedded.push_back({name.str(), offset, bytes});
      program.embeddedBytes += (bytes + 63) / 64 * 64;
    }
    if (role == "Param" || role == "State")
      program.persistentBytes += tensorBytes(arg.getType());
    // Parameters and state of a pipeline stage live on its ranks only.
    std::string where;
    auto stage =
        func.getArgAttrOfType<IntegerAttr>(i, CleaveDialect::kStageAttrName);
    if (int64_t batchDim = role == "Input" ? getModelBatchDim(func, name) : 0)
      where =
          formatv(", {0}, {1}, {2}", sharding.empty() ? "nullptr" : sharding,
                  stage ? stage.getInt() : -1, batchDim);
    else if (stage)
      where = formatv(", {0}, {1}", sharding.empty() ? "nullptr" : sharding,
                      stage.getInt());
    else if (!sharding.empty())
      where = ", " + sharding;
    tableOs << formatv("    {{{0}, {1}, {2}, {3}, Role::{4}, {5}{6}},\n",
                       cppStringLiteral(name), *file, dtype, shapeLiteral(arg),
                       role, offset, where);
    std::string var = uniqueName(name);
    names[arg] = var;
    pointersOs << formatv(
        "  auto *{0} = static_cast<{1} *>(ctx.tensors[{2}]);\n", var, element,
        i);
  }

  // Graph outputs follow the arguments.
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  numTensors = block.getNumArguments();
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto output =
        func.getResultAttrOfType<StringAttr>(i, CleaveDialect::kOutputAttrName);
    if (!output)
      continue;
    FailureOr<std::string> file = fileNameLiteral(output.getValue());
    if (failed(file))
      return failure();
    std::string dtype = dtypeEnum(tensorType(value).getElementType());
    if (dtype.empty())
      return func.emitError()
             << "output '" << output.getValue() << "' has element type "
             << tensorType(value).getElementType() << ", which the "
             << traits.name << " target does not support";
    std::string where;
    if (auto at = func.getResultAttrOfType<IntegerAttr>(
            i, CleaveDialect::kStageAttrName);
        at && numStages > 1)
      where = formatv(", nullptr, {0}", at.getInt());
    tableOs << formatv("    {{{0}, {1}, {2}, {3}, Role::Output, -1{4}},\n",
                       cppStringLiteral(output.getValue()), *file, dtype,
                       shapeLiteral(value), where);
    ++numTensors;
  }
  return success();
}

FailureOr<std::string> Emitter::fileNameLiteral(StringRef name) {
  std::string file = ::cleave::rt::npyFileName(name.str());
  if (file.size() > 255)
    return func.emitError()
           << "tensor '" << cppCommentText(name.take_front(40))
           << "...' has a name of " << name.size()
           << " bytes; its .npy file in data, checkpoint and dump directories "
              "would exceed the 255 bytes file systems allow: rename it";
  // npyFileName is injective, so only one name can own a file; the same
  // name may appear twice (a graph output that is also an input).
  auto [it, inserted] = fileNames.try_emplace(file, name.str());
  if (!inserted && it->second != name)
    return func.emitError()
           << "tensors '" << cppCommentText(it->second) << "' and '"
           << cppCommentText(name) << "' would share the file '"
           << cppCommentText(file)
           << "' in data, checkpoint and dump directories: "
              "rename one";
  return cppStringLiteral(file);
}

std::pair<std::string, int> Emitter::indexChecks() {
  std::string rows;
  int count = 0;
  for (BlockArgument arg : func.getArguments()) {
    auto range = func.getArgAttrOfType<DictionaryAttr>(
        arg.getArgNumber(), CleaveDialect::kIndexRangeAttrName);
    if (!range)
      continue;
    auto field = [&](StringRef name) {
      auto value = range.getAs<IntegerAttr>(name);
      return value ? value.getInt() : 0;
    };
    auto use = range.getAs<StringAttr>("use");
    rows += formatv("    {{{0}, {1}, {2}, {3}, {4}, {5}},\n",
                    arg.getArgNumber(), field("low"), field("high"),
                    range.get("ignore") ? "true" : "false", field("ignore"),
                    cppStringLiteral(use ? use.getValue() : "an index"))
                .str();
    ++count;
  }
  if (!count)
    return {"", 0};
  return {"// Labels and indices the driver checks as it loads the data.\n"
          "static const IndexInputCheck kIndexChecks[] = {\n" +
              rows + "};\n\n",
          count};
}

} // namespace mlir::cleave::codegen
