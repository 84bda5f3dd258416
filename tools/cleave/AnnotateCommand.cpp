//===- AnnotateCommand.cpp - `cleave annotate` ----------------------------===//
//
// Stores sharding hints inside an ONNX model (its metadata_props), so that
// the hints travel with the model and `cleave compile` applies them.
//
//===----------------------------------------------------------------------===//

#include "tools/cleave/Commands.h"
#include "tools/cleave/HintSources.h"
#include "tools/cleave/OutputFile.h"

#include "passes/ShardingHints.h"

#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "mlir/Support/FileUtilities.h"

namespace cleave::driver {

namespace {

namespace cl = llvm::cl;
using mlir::cleave::ShardingHint;

/// Suffixes of the optimizer states `cleave compile` adds per parameter,
/// which hints may name before they exist.
constexpr const char *kStateSuffixes[] = {"", ".momentum_buffer", ".exp_avg",
                                          ".exp_avg_sq"};

class AnnotateCommand : public Command {
public:
  AnnotateCommand()
      : sub_("annotate", "Store sharding hints in an ONNX model's metadata"),
        model_(cl::Positional, cl::desc("<model.onnx>"), cl::sub(sub_)),
        shard_("shard",
               cl::desc("Sharding hint GLOB=[d0,d1,...][@PRIORITY]; "
                        "repeatable"),
               cl::value_desc("HINT"), cl::sub(sub_)),
        shardFile_("shard-file", cl::desc("YAML or JSON file of hints"),
                   cl::value_desc("FILE"), cl::sub(sub_)),
        replace_("replace",
                 cl::desc("Drop the hints the model already holds"),
                 cl::sub(sub_)),
        output_("o", cl::desc("Output model"), cl::value_desc("file"),
                cl::Required, cl::sub(sub_)) {}

  cl::SubCommand &subCommand() override { return sub_; }
  int run(mlir::MLIRContext &context) override;

private:
  cl::SubCommand sub_;
  cl::opt<std::string> model_;
  cl::list<std::string> shard_;
  cl::opt<std::string> shardFile_;
  cl::opt<bool> replace_;
  cl::opt<std::string> output_;
};

int fail(const llvm::Twine &message) {
  llvm::errs() << "cleave annotate: error: " << message << "\n";
  return 1;
}

int AnnotateCommand::run(mlir::MLIRContext &) {
  if (model_.empty())
    return fail("no model given; usage: cleave annotate MODEL.onnx --shard "
                "'GLOB=[...]' -o OUT.onnx");
  if (auto type = llvm::sys::fs::get_file_type(model_);
      type == llvm::sys::fs::file_type::character_file ||
      type == llvm::sys::fs::file_type::block_file)
    return fail("'" + model_ +
                "' is a device, not a file; give the model's "
                "file");
  auto buffer = llvm::MemoryBuffer::getFile(model_);
  if (!buffer)
    return fail("cannot read '" + model_ + "': " + buffer.getError().message());
  onnx::ModelProto model;
  if (!model.ParseFromArray((*buffer)->getBufferStart(),
                            (*buffer)->getBufferSize()))
    return fail("'" + model_ +
                "' is not a binary ONNX model; annotate writes protobuf "
                "models (save ONNX text as one with onnx.save(onnx.parser."
                "parse_model(text), 'model.onnx'))");

  std::vector<ShardingHint> hints;
  if (!shardFile_.empty()) {
    auto fromFile = readHintsFile(shardFile_);
    if (!fromFile)
      return fail(llvm::toString(fromFile.takeError()));
    hints = std::move(*fromFile);
  }
  for (const std::string &text : shard_) {
    auto hint = mlir::cleave::parseShardingHint(text, "--shard");
    if (!hint)
      return fail(llvm::toString(hint.takeError()));
    hints.push_back(std::move(*hint));
  }
  if (hints.empty())
    return fail("no hints given: use --shard or --shard-file");

  // Every hint must name a tensor the compiled program will have; one that
  // names a tensor exactly has a dimension per dimension of it (-1: rank
  // unknown here).
  std::vector<std::pair<std::string, int>> tensors;
  for (const auto &init : model.graph().initializer())
    tensors.emplace_back(init.name(), init.dims_size());
  for (const auto &input : model.graph().input())
    tensors.emplace_back(input.name(),
                         input.type().tensor_type().has_shape()
                             ? input.type().tensor_type().shape().dim_size()
                             : -1);
  for (const ShardingHint &hint : hints) {
    std::string text = mlir::cleave::formatShardingHint(hint);
    auto glob = llvm::GlobPattern::create(hint.pattern);
    if (!glob)
      return fail("hint '" + text +
                  "': bad glob: " + llvm::toString(glob.takeError()));
    bool matched = false;
    for (const auto &[name, rank] : tensors)
      for (const char *suffix : kStateSuffixes) {
        if (!glob->match(name + suffix))
          continue;
        matched = true;
        // A glob may also match tensors a stronger hint covers; compile
        // checks the hint each tensor gets.
        if (hint.pattern == name + suffix && rank >= 0 &&
            static_cast<size_t>(rank) != hint.dims.size())
          return fail("hint '" + text + "' gives " +
                      llvm::Twine(hint.dims.size()) + " dimensions, but '" +
                      name + suffix + "' has rank " + llvm::Twine(rank));
      }
    if (!matched)
      return fail("hint '" + text + "' names no initializer or input of '" +
                  model_ + "'");
  }

  std::string lines;
  auto *props = model.mutable_metadata_props();
  for (int i = 0; i < props->size(); ++i)
    if (props->Get(i).key() == kHintsMetadataKey) {
      if (!replace_)
        lines = props->Get(i).value();
      props->DeleteSubrange(i, 1);
      break;
    }
  for (const ShardingHint &hint : hints)
    lines += (lines.empty() || lines.back() == '\n' ? "" : "\n") +
             mlir::cleave::formatShardingHint(hint) + "\n";
  auto *prop = model.add_metadata_props();
  prop->set_key(kHintsMetadataKey);
  prop->set_value(lines);

  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return fail("cannot serialize the annotated model");
  return writeOutputFile(output_, bytes, "annotate") ? 0 : 1;
}

} // namespace

std::unique_ptr<Command> makeAnnotateCommand() {
  return std::make_unique<AnnotateCommand>();
}

} // namespace cleave::driver
