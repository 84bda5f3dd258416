//===- ShardingHints.h - the user's sharding hints --------------*- C++ -*-===//
//
// Hints say how named tensors (parameters, data inputs, optimizer states)
// are split over the mesh. They come four ways with one meaning: the
// `--shard` flag, a hints file (YAML or JSON), the ONNX model's metadata
// (written by `cleave annotate`; the tool reads these, see
// tools/cleave/HintSources.h), and the strategy presets. Every hint is
// text `GLOB=[dim0,dim1,...]` with an optional `@PRIORITY` (lower is
// stronger, default 0), where each dim is `_` (replicated), an axis name,
// or `{a,b}` (split over a then b). cleave-apply-sharding-hints applies
// them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_SHARDINGHINTS_H
#define CLEAVE_PASSES_SHARDINGHINTS_H

#include "dialects/cleave/CleaveAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Error.h"

#include <optional>
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
  /// Whether `dims` follow the ONNX model's layout (a user's hint) rather
  /// than the function's, which takes a data input whose batch is not dim
  /// 0 batch-first (CleaveDialect::kBatchDimsAttrName).
  bool modelLayout = false;
};

/// Parses `dp=2,tp=2`; messages call the text `name` (the flag or option
/// it came from).
llvm::Expected<MeshAttr> parseMesh(MLIRContext *context, StringRef text,
                                   StringRef name = "--mesh");

/// Parses one hint `GLOB=[...]@P`.
llvm::Expected<ShardingHint> parseShardingHint(StringRef text,
                                               StringRef origin);
/// Formats a hint back into that syntax.
std::string formatShardingHint(const ShardingHint &hint);

/// A glob that matches exactly `name` (its glob characters escaped).
std::string escapeGlob(llvm::StringRef name);
/// The hint's sharding alone, "[dp,_]" (as hints files write it).
std::string formatShardingDims(const ShardingHint &hint);

/// `hint` with its dims in the ONNX model's layout, as a user would write
/// it: a function-layout hint (a preset's) on a data input that `module`
/// takes batch-first gets its first dim moved back to the batch dim.
ShardingHint inModelLayout(const ShardingHint &hint, ModuleOp module);

/// The distribution strategies `--strategy` offers. MegatronZeroN is
/// Megatron's tensor parallelism over `tp` with ZeRO stage N over `dp`
/// inside it (Megatron-LM's distributed optimizer is stage 1).
enum class Strategy {
  None,
  DataParallel,
  Zero1,
  Zero2,
  Zero3,
  Megatron,
  MegatronZero1,
  MegatronZero2,
  MegatronZero3
};

/// The preset's name as `--strategy` spells it ("dp", "zero1",
/// "megatron+zero1", ...).
StringRef strategyName(Strategy strategy);
/// The preset of that name; none for an unknown name.
std::optional<Strategy> parseStrategy(StringRef name);

/// The ZeRO stage a preset applies over `dp`: 0 (none), 1 (optimizer
/// states split), 2 (+ gradients reduce-scattered) or 3 (+ parameters
/// split, gathered per use).
int zeroStage(Strategy strategy);
/// Whether the preset splits the transformer's layers over `tp`.
bool isMegatron(Strategy strategy);
/// Whether partial gradients that must become split are reduce-scattered
/// (every preset but ZeRO-1's, which all-reduces them and keeps a slice).
inline bool reduceScattersGradients(Strategy strategy) {
  return zeroStage(strategy) != 1;
}

/// Hints a strategy implies for `func` on `mesh`: the batch split over the
/// axis `dp` (required, except for Megatron without ZeRO where it is
/// optional), and for Megatron the transformer's linear layer pairs split
/// over the axis `tp` (column- then row-parallel, see TransformerBlocks.h).
/// ZeRO splits optimizer states (stage 3: parameters too) over `dp` along
/// their first dimension that divides by dp and that `tp` does not split
/// (a tensor split over `tp` with no such dimension stays whole over dp).
/// ZeRO-3 also gathers parameters over `dp` before every compute use (see
/// gatherParametersForCompute).
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

/// The name of the mesh axis whose coordinates are micro-batches while a
/// step is partitioned (cleave-unroll-microbatches then runs them in turn).
inline constexpr const char *kMicroBatchAxis = "microbatch";

/// What cleave-apply-sharding-hints applies, parsed.
struct ShardingLayout {
  /// The devices (null: the module's `cleave.mesh`).
  MeshAttr mesh;
  Strategy strategy = Strategy::None;
  /// In order of increasing strength at equal priority.
  std::vector<ShardingHint> hints;
  /// Above 1: the axis kMicroBatchAxis of this size joins the mesh.
  int64_t microbatches = 1;
};

/// cleave-apply-sharding-hints for a parsed layout (hints keep their
/// origins for messages).
std::unique_ptr<Pass> createApplyShardingHintsPass(ShardingLayout layout);

/// For ZeRO-3: feeds every use of a parameter split over `dp` other than
/// its optimizer update through a reshard that gathers it over `dp` (and
/// keeps any other split, such as Megatron's over `tp`), one per use, so
/// each gathered copy lives only as long as that use.
void gatherParametersForCompute(func::FuncOp func);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_SHARDINGHINTS_H
