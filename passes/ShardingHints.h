//===- ShardingHints.h - the user's sharding hints --------------*- C++ -*-===//
//
// Hints say how named tensors (parameters, data inputs, optimizer states)
// are split over the mesh. They come four ways with one meaning: the
// `--shard` flag, a hints file (YAML or JSON), the ONNX model's metadata
// (written by `cleave annotate`), and the `--strategy` presets. Every hint
// is text `GLOB=[dim0,dim1,...]` with an optional `@PRIORITY` (lower is
// stronger, default 0), where each dim is `_` (replicated), an axis name,
// or `{a,b}` (split over a then b).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_SHARDINGHINTS_H
#define CLEAVE_PASSES_SHARDINGHINTS_H

#include "dialects/cleave/CleaveAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::cleave {

struct ShardingHint {
  /// A glob over tensor names (llvm::GlobPattern syntax).
  std::string pattern;
  /// Per dimension, the mesh axes (empty: replicated).
  std::vector<std::vector<std::string>> dims;
  int64_t priority = 0;
  /// Where the hint came from, for messages ("--shard", "hints.yaml").
  std::string origin;
};

/// The metadata key under which `cleave annotate` stores hints (one per
/// line).
inline constexpr const char *kHintsMetadataKey = "cleave.sharding_hints";

/// Parses `dp=2,tp=2`.
llvm::Expected<MeshAttr> parseMesh(MLIRContext *context, StringRef text);

/// Parses one hint `GLOB=[...]@P`.
llvm::Expected<ShardingHint> parseShardingHint(StringRef text,
                                               StringRef origin);
/// Formats a hint back into that syntax.
std::string formatShardingHint(const ShardingHint &hint);
/// The hint's sharding alone, "[dp,_]" (as hints files write it).
std::string formatShardingDims(const ShardingHint &hint);

/// Reads a hints file: YAML or JSON (which LLVM's YAML parser also reads),
/// `{hints: [{tensor: GLOB, sharding: "[...]", priority: P}, ...]}`.
llvm::Expected<std::vector<ShardingHint>> readHintsFile(StringRef path);

/// Parses the hints stored in model metadata (one hint per line).
llvm::Expected<std::vector<ShardingHint>> parseHintLines(StringRef text,
                                                         StringRef origin);

/// The distribution strategies `--strategy` offers.
enum class Strategy { None, DataParallel, Zero1, Zero2, Zero3, Megatron };

/// Hints a strategy implies for `func` on `mesh`: the batch split over the
/// axis `dp` (required, except for Megatron where it is optional), and for
/// Megatron the transformer's linear layer pairs split over the axis `tp`
/// (column- then row-parallel, see TransformerBlocks.h).
/// ZeRO-3 also makes parameters whole before every compute use (reshards
/// the partitioner turns into all-gathers).
llvm::Expected<std::vector<ShardingHint>>
strategyHints(Strategy strategy, func::FuncOp func, MeshAttr mesh);

/// Sets `cleave.sharding` and `cleave.priority` on the arguments the hints
/// name: per argument the strongest matching hint wins. Fails, with a
/// message naming hint and tensor, on a hint that names no tensor, an
/// unknown axis, a rank mismatch, a dimension that does not divide, or two
/// different hints of equal priority for one tensor.
llvm::Error applyShardingHints(func::FuncOp func, MeshAttr mesh,
                               ArrayRef<ShardingHint> hints);

/// For micro-batches: splits the batch (dimension 0) of every data input
/// over `axis` as well, innermost (after any axes a hint gave it). Fails,
/// naming the input, when the batch does not divide.
llvm::Error splitBatchesOver(func::FuncOp func, MeshAttr mesh, StringRef axis);

/// For ZeRO-3: feeds every use of a split parameter other than its
/// optimizer update through a reshard to whole, one per use, so each
/// gathered copy lives only as long as that use.
void gatherParametersForCompute(func::FuncOp func);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_SHARDINGHINTS_H
