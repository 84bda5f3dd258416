//===- HintSources.cpp - where the user's sharding hints come from --------===//

#include "tools/cleave/HintSources.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/YAMLTraits.h"

using llvm::SmallVector;
using llvm::StringRef;
using mlir::cleave::parseShardingHint;
using mlir::cleave::ShardingHint;

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// One entry of a hints file.
struct HintEntry {
  std::string tensor;
  std::string sharding;
  int64_t priority = 0;
};
struct HintsFile {
  std::vector<HintEntry> hints;
};

} // namespace

LLVM_YAML_IS_SEQUENCE_VECTOR(HintEntry)

namespace llvm::yaml {
template <> struct MappingTraits<HintEntry> {
  static void mapping(IO &io, HintEntry &entry) {
    io.mapRequired("tensor", entry.tensor);
    io.mapRequired("sharding", entry.sharding);
    io.mapOptional("priority", entry.priority, int64_t(0));
  }
};
template <> struct MappingTraits<HintsFile> {
  static void mapping(IO &io, HintsFile &file) {
    io.mapRequired("hints", file.hints);
  }
};
} // namespace llvm::yaml

namespace {

/// An upper bound on the nesting of the YAML (or JSON) text's nodes: block
/// levels (a line's indentation plus its compact "- " entries) plus flow
/// levels ([...] and {...} outside quoted strings and comments).
int64_t nestingBound(StringRef text) {
  int64_t flow = 0, deepestFlow = 0, deepestBlock = 0;
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (StringRef line : lines) {
    StringRef rest = line.ltrim(' ');
    int64_t block = line.size() - rest.size();
    while (rest.consume_front("- ") || rest.consume_front("? "))
      ++block, rest = rest.ltrim(' ');
    deepestBlock = std::max(deepestBlock, block);
    char quote = 0;
    for (char c : rest) {
      if (quote) {
        quote = c == quote ? 0 : quote;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#') {
        break;
      } else if (c == '[' || c == '{') {
        deepestFlow = std::max(deepestFlow, ++flow);
      } else if (c == ']' || c == '}') {
        flow = std::max<int64_t>(0, flow - 1);
      }
    }
  }
  return deepestBlock + deepestFlow;
}

} // namespace

llvm::Expected<std::vector<ShardingHint>>
cleave::driver::readHintsFile(StringRef path) {
  if (auto type = llvm::sys::fs::get_file_type(path);
      type == llvm::sys::fs::file_type::character_file ||
      type == llvm::sys::fs::file_type::block_file)
    return fail("the hints file '" + path +
                "' is a device, not a file; give a YAML or JSON file");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail("cannot read the hints file '" + path +
                "': " + buffer.getError().message());
  // LLVM's YAML parser recurses once per level: a hostile file would
  // overflow the stack. A hints file needs a few levels.
  constexpr int64_t kMaxNesting = 64;
  if (int64_t depth = nestingBound((*buffer)->getBuffer()); depth > kMaxNesting)
    return fail("the hints file '" + path + "' nests up to " +
                llvm::Twine(depth) +
                " levels deep (indentation, \"- \" entries and brackets); a "
                "hints file {hints: [{tensor: ..., sharding: ...}]} needs a "
                "few, at most " +
                llvm::Twine(kMaxNesting));
  HintsFile file;
  std::string diagnostics;
  // The buffer's name (the path) locates errors in messages.
  llvm::yaml::Input input((*buffer)->getMemBufferRef(), nullptr,
                          [](const llvm::SMDiagnostic &diag, void *context) {
                            llvm::raw_string_ostream os(
                                *static_cast<std::string *>(context));
                            diag.print(nullptr, os, false);
                          },
                          &diagnostics);
  input >> file;
  if (input.error())
    return fail("the hints file '" + path +
                "' is not a mapping {hints: [{tensor: GLOB, sharding: "
                "\"[...]\", priority: N}, ...]}: " +
                ((*buffer)->getBufferSize() == 0
                     ? StringRef("the file is empty")
                     : StringRef(diagnostics).trim()));
  std::vector<ShardingHint> hints;
  for (const HintEntry &entry : file.hints) {
    auto hint = parseShardingHint(entry.tensor + "=" + entry.sharding, path);
    if (!hint)
      return hint.takeError();
    hint->priority = entry.priority;
    hints.push_back(std::move(*hint));
  }
  return hints;
}

llvm::Expected<std::vector<ShardingHint>>
cleave::driver::parseHintLines(StringRef text, StringRef origin) {
  std::vector<ShardingHint> hints;
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, false);
  for (StringRef line : lines) {
    if (line.trim().empty())
      continue;
    auto hint = parseShardingHint(line.trim(), origin);
    if (!hint)
      return hint.takeError();
    hints.push_back(std::move(*hint));
  }
  return hints;
}

llvm::Expected<std::vector<ShardingHint>>
cleave::driver::userHints(const llvm::StringMap<std::string> &metadata,
                          StringRef shardFile,
                          llvm::ArrayRef<std::string> shards) {
  std::vector<ShardingHint> hints;
  if (auto it = metadata.find(kHintsMetadataKey); it != metadata.end()) {
    auto stored = parseHintLines(it->second, "the model's metadata");
    if (!stored)
      return stored.takeError();
    llvm::append_range(hints, std::move(*stored));
  }
  if (!shardFile.empty()) {
    auto fromFile = readHintsFile(shardFile);
    if (!fromFile)
      return fromFile.takeError();
    llvm::append_range(hints, std::move(*fromFile));
  }
  for (const std::string &text : shards) {
    auto hint = parseShardingHint(text, "--shard");
    if (!hint)
      return hint.takeError();
    hints.push_back(std::move(*hint));
  }
  return hints;
}
