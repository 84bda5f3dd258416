//===- HintSources.h - where the user's sharding hints come from -*- C++ -*-===//
//
// The tool reads hints from three places, weakest first: the model's
// metadata (written by `cleave annotate`), a hints file (--shard-file,
// YAML or JSON) and --shard flags. Each hint remembers where it came
// from, so that cleave-apply-sharding-hints names the source in its
// messages.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_HINTSOURCES_H
#define CLEAVE_TOOLS_CLEAVE_HINTSOURCES_H

#include "passes/ShardingHints.h"

#include "llvm/Support/Error.h"

#include "llvm/ADT/StringMap.h"
#include <string>
#include <vector>

namespace cleave::driver {

/// The metadata key under which `cleave annotate` stores hints (one per
/// line).
inline constexpr const char *kHintsMetadataKey = "cleave.sharding_hints";

/// Reads a hints file: YAML or JSON (which LLVM's YAML parser also reads),
/// `{hints: [{tensor: GLOB, sharding: "[...]", priority: P}, ...]}`.
llvm::Expected<std::vector<mlir::cleave::ShardingHint>>
readHintsFile(llvm::StringRef path);

/// Parses the hints stored in model metadata (one hint per line).
llvm::Expected<std::vector<mlir::cleave::ShardingHint>>
parseHintLines(llvm::StringRef text, llvm::StringRef origin);

/// The user's hints, weakest first: the model's `metadata` (its
/// kHintsMetadataKey entry), the file `shardFile` (none if empty), then
/// each `--shard` text.
llvm::Expected<std::vector<mlir::cleave::ShardingHint>>
userHints(const llvm::StringMap<std::string> &metadata,
          llvm::StringRef shardFile, llvm::ArrayRef<std::string> shards);

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_HINTSOURCES_H
