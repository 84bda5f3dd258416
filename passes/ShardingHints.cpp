//===- ShardingHints.cpp - the user's sharding hints ----------------------===//

#include "passes/ShardingHints.h"

#include "dialects/cleave/CleaveOps.h"
#include "passes/FunctionAttributes.h"
#include "passes/TransformerBlocks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::cleave;

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<MeshAttr> mlir::cleave::parseMesh(MLIRContext *context,
                                                 StringRef text,
                                                 StringRef name) {
  // The example in the message is written as the mesh was given.
  std::string example =
      (name + (name.starts_with("--") ? " " : "=") + "dp=2,tp=2").str();
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  SmallVector<StringRef> axes;
  text.split(axes, ',');
  constexpr int64_t kMaxRanks = int64_t(1) << 20;
  int64_t ranks = 1;
  for (StringRef axis : axes) {
    auto [axisName, sizeText] = axis.trim().split('=');
    int64_t size;
    if (axisName.trim().empty() || sizeText.trim().getAsInteger(10, size) ||
        size < 1)
      return fail(name + " '" + text +
                  "' is not a list of NAME=SIZE axes with sizes >= 1 (for "
                  "example " + example + ")");
    axisName = axisName.trim();
    // Names appear in hints ([dp,_]) and in the generated program.
    if ((!llvm::isAlpha(axisName.front()) && axisName.front() != '_') ||
        !llvm::all_of(axisName,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; }))
      return fail(name + " axis '" + axisName +
                  "' is not a name of letters, digits and '_' (for example "
                  "dp, tp, pp)");
    for (StringAttr seen : names)
      if (seen.getValue() == axisName)
        return fail(name + " '" + text + "' names axis '" + axisName +
                    "' twice");
    names.push_back(StringAttr::get(context, axisName));
    sizes.push_back(size);
    ranks *= size;
    if (ranks > kMaxRanks)
      return fail(name + " '" + text + "' has more than " +
                  llvm::Twine(kMaxRanks) + " ranks");
  }
  return MeshAttr::get(context, names, sizes);
}

llvm::Expected<ShardingHint>
mlir::cleave::parseShardingHint(StringRef text, StringRef origin) {
  auto bad = [&](const llvm::Twine &why) {
    return fail("sharding hint '" + text + "' (" + origin + "): " + why +
                "; expected GLOB=[d0,d1,...] with each dim '_', an axis "
                "or {axis,axis}, and an optional @PRIORITY");
  };
  auto [pattern, rest] = text.split('=');
  ShardingHint hint;
  hint.pattern = pattern.trim().str();
  hint.origin = origin.str();
  hint.modelLayout = true;
  if (hint.pattern.empty())
    return bad("no tensor name");
  rest = rest.trim();
  size_t close = rest.rfind(']');
  if (!rest.starts_with("[") || close == StringRef::npos)
    return bad("no [...] list of dimensions");
  StringRef priorityText = rest.substr(close + 1).trim();
  if (!priorityText.empty() &&
      (!priorityText.consume_front("@") ||
       priorityText.trim().getAsInteger(10, hint.priority)))
    return bad("'" + rest.substr(close + 1) + "' is not @PRIORITY");
  StringRef body = rest.substr(1, close - 1).trim();
  while (!body.empty()) {
    std::vector<std::string> &axes = hint.dims.emplace_back();
    StringRef dim;
    if (body.starts_with("{")) {
      size_t end = body.find('}');
      if (end == StringRef::npos)
        return bad("unclosed '{'");
      SmallVector<StringRef> names;
      body.substr(1, end - 1).split(names, ',', -1, false);
      for (StringRef name : names)
        axes.push_back(name.trim().str());
      body = body.substr(end + 1).trim();
    } else {
      std::tie(dim, body) = body.split(',');
      dim = dim.trim();
      body = body.trim();
      if (dim.empty())
        return bad("an empty dimension");
      if (dim != "_")
        axes.push_back(dim.str());
      continue;
    }
    if (!body.empty() && !body.consume_front(","))
      return bad("expected ',' after '}'");
    body = body.trim();
  }
  // A tensor is split over a mesh axis at most once.
  llvm::StringSet<> used;
  for (const std::vector<std::string> &axes : hint.dims)
    for (const std::string &axis : axes)
      if (!used.insert(axis).second)
        return bad("axis '" + axis + "' splits two dimensions");
  return hint;
}

std::string mlir::cleave::formatShardingDims(const ShardingHint &hint) {
  std::string text = "[";
  for (auto [index, axes] : llvm::enumerate(hint.dims)) {
    if (index)
      text += ",";
    if (axes.empty())
      text += "_";
    else if (axes.size() == 1)
      text += axes[0];
    else
      text += "{" + llvm::join(axes, ",") + "}";
  }
  return text + "]";
}

std::string mlir::cleave::formatShardingHint(const ShardingHint &hint) {
  std::string text = hint.pattern + "=" + formatShardingDims(hint);
  if (hint.priority != 0)
    text += "@" + std::to_string(hint.priority);
  return text;
}

namespace {

/// The names of a function's tensors, by argument.
SmallVector<std::pair<BlockArgument, StringRef>> namedArguments(
    func::FuncOp func) {
  SmallVector<std::pair<BlockArgument, StringRef>> named;
  for (BlockArgument arg : func.getArguments())
    for (StringRef attr :
         {CleaveDialect::kParamAttrName, CleaveDialect::kInputAttrName,
          CleaveDialect::kStateAttrName})
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        attr))
        named.push_back({arg, name.getValue()});
  return named;
}


/// The one name `pattern` matches when it has no wildcard (a literal, or
/// one escaped by escapeGlob); none for a real glob.
std::optional<std::string> literalGlob(StringRef pattern) {
  std::string literal;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      literal += pattern[++i];
      continue;
    }
    if (StringRef("*?[]{}\\").contains(c))
      return std::nullopt;
    literal += c;
  }
  return literal;
}

constexpr StringLiteral kStateSuffixes[] = {".momentum_buffer", ".exp_avg",
                                            ".exp_avg_sq"};

bool isOptimizerState(StringRef name) {
  return llvm::any_of(kStateSuffixes,
                      [&](StringRef suffix) { return name.ends_with(suffix); });
}

/// The parameter an optimizer state belongs to ("w.exp_avg" -> "w").
StringRef stateParameter(StringRef name) {
  for (StringRef suffix : kStateSuffixes)
    if (name.consume_back(suffix))
      break;
  return name;
}

} // namespace

std::string mlir::cleave::escapeGlob(StringRef name) {
  std::string escaped;
  for (char c : name) {
    if (StringRef("*?[]{}\\").contains(c))
      escaped += '\\';
    escaped += c;
  }
  return escaped;
}

StringRef mlir::cleave::strategyName(Strategy strategy) {
  switch (strategy) {
  case Strategy::None:
    return "none";
  case Strategy::DataParallel:
    return "dp";
  case Strategy::Zero1:
    return "zero1";
  case Strategy::Zero2:
    return "zero2";
  case Strategy::Zero3:
    return "zero3";
  case Strategy::Megatron:
    return "megatron";
  case Strategy::MegatronZero1:
    return "megatron+zero1";
  case Strategy::MegatronZero2:
    return "megatron+zero2";
  case Strategy::MegatronZero3:
    return "megatron+zero3";
  }
  return "auto";
}

namespace {

constexpr Strategy kStrategies[] = {
    Strategy::None,          Strategy::DataParallel,  Strategy::Zero1,
    Strategy::Zero2,         Strategy::Zero3,         Strategy::Megatron,
    Strategy::MegatronZero1, Strategy::MegatronZero2, Strategy::MegatronZero3};

} // namespace

std::optional<Strategy> mlir::cleave::parseStrategy(StringRef name) {
  for (Strategy strategy : kStrategies)
    if (strategyName(strategy) == name)
      return strategy;
  return std::nullopt;
}

int mlir::cleave::zeroStage(Strategy strategy) {
  switch (strategy) {
  case Strategy::Zero1:
  case Strategy::MegatronZero1:
    return 1;
  case Strategy::Zero2:
  case Strategy::MegatronZero2:
    return 2;
  case Strategy::Zero3:
  case Strategy::MegatronZero3:
    return 3;
  default:
    return 0;
  }
}

bool mlir::cleave::isMegatron(Strategy strategy) {
  return strategy == Strategy::Megatron ||
         strategy == Strategy::MegatronZero1 ||
         strategy == Strategy::MegatronZero2 ||
         strategy == Strategy::MegatronZero3;
}

llvm::Expected<std::vector<ShardingHint>>
mlir::cleave::strategyHints(Strategy strategy, func::FuncOp func,
                            MeshAttr mesh) {
  std::vector<ShardingHint> hints;
  if (strategy == Strategy::None)
    return hints;
  bool megatron = isMegatron(strategy);
  int zero = zeroStage(strategy);
  std::string preset = ("the '" + strategyName(strategy) + "' preset").str();
  int64_t dpIndex = mesh.getAxisIndex("dp");
  if (dpIndex < 0 && (!megatron || zero > 0))
    return fail(preset + " needs a mesh axis named 'dp' (for example " +
                (megatron ? "dp=2,tp=2" : "dp=4") + ")" +
                (megatron ? "; without one, use --strategy megatron" : ""));
  if (megatron && mesh.getAxisIndex("tp") < 0)
    return fail(preset + " needs a mesh axis named 'tp' (for example "
                         "dp=2,tp=2)" +
                (zero > 0 ? "; without one, use --strategy zero" +
                                std::to_string(zero)
                          : std::string()));
  int64_t dp = dpIndex >= 0 ? mesh.getAxisSizes()[dpIndex] : 1;
  std::string origin = "strategy " + strategyName(strategy).str();
  auto hintFor = [&](StringRef name, int64_t rank, int64_t splitDim,
                     StringRef axis = "dp") {
    ShardingHint hint;
    hint.pattern = escapeGlob(name);
    hint.dims.resize(rank);
    if (splitDim >= 0 && !(axis == "dp" && dpIndex < 0))
      hint.dims[splitDim] = {axis.str()};
    hint.origin = origin;
    hints.push_back(std::move(hint));
  };
  // A tensor Megatron splits over tp on `tpDim`, and ZeRO over dp too: dp
  // on the first other dimension that divides by dp. One without such a
  // dimension (a tp-split bias) stays whole over dp: splitting its tp
  // blocks further ({tp,dp}) loses to the split of its gradient, which
  // propagation takes from the tp-split compute, so the update would run
  // on whole tp blocks and gather the state (and, for ZeRO-3, the
  // parameter would end up unsplit over dp anyway).
  auto tensorAndZeroHint = [&](StringRef name, BlockArgument arg,
                               int64_t tpDim) {
    auto shape = cast<ShapedType>(arg.getType()).getShape();
    ShardingHint hint;
    hint.pattern = escapeGlob(name);
    hint.dims.resize(shape.size());
    hint.dims[tpDim] = {"tp"};
    for (auto [dim, size] : llvm::enumerate(shape))
      if (int64_t(dim) != tpDim && size % dp == 0) {
        hint.dims[dim].push_back("dp");
        break;
      }
    hint.origin = origin;
    hints.push_back(std::move(hint));
  };
  llvm::DenseMap<BlockArgument, std::pair<int64_t, StringRef>> tensorParallel;
  // By parameter name, Megatron's split: what its optimizer states follow.
  llvm::StringMap<int64_t> tensorParallelByName;
  if (megatron) {
    TensorParallelPlan plan = findTensorParallelLayers(func);
    if (plan.rowParallel.empty())
      return fail(preset + " found no transformer MLP or attention block (a "
                           "linear layer feeding another through "
                           "elementwise ops or attention heads); give "
                           "sharding hints instead");
    for (const LinearLayer &layer : plan.columnParallel) {
      tensorParallel[layer.weight] = {layer.outputDim, "tp"};
      if (layer.bias)
        tensorParallel[layer.bias] = {0, "tp"};
    }
    for (const LinearLayer &layer : plan.rowParallel)
      tensorParallel[layer.weight] = {1 - layer.outputDim, "tp"};
    // Attention splits by heads: a degree that does not divide them would
    // leave propagation a split it cannot make (Megatron-LM refuses it too).
    int64_t tp = mesh.getAxisSize("tp");
    for (auto [reshape, heads] : plan.headReshapes)
      if (heads % tp != 0) {
        std::string node = reshape->getName().getStringRef().str();
        if (auto name = dyn_cast<NameLoc>(reshape->getLoc()))
          node = ("ONNX node '" + name.getName().getValue() + "'").str();
        return fail(llvm::formatv(
            "{0} splits attention by heads over tp={1}, but {2} reshapes "
            "to {3} head{4}, which do not divide into {1}; use a tp degree "
            "that divides {3}, or another --strategy",
            preset, tp, node, heads, heads == 1 ? "" : "s")
                        .str());
      }
    // Split by vocabulary where the vocabulary divides: embedding rows
    // (each rank looks up its rows, and the lookups are summed) and the
    // head's output features (the logits are gathered for the loss).
    auto divides = [&](BlockArgument arg, int64_t dim) {
      return cast<ShapedType>(arg.getType()).getDimSize(dim) % tp == 0;
    };
    for (BlockArgument table : plan.vocabularyTables)
      if (divides(table, 0))
        tensorParallel[table] = {0, "tp"};
    if (plan.head && !tensorParallel.count(plan.head->weight) &&
        divides(plan.head->weight, plan.head->outputDim)) {
      tensorParallel[plan.head->weight] = {plan.head->outputDim, "tp"};
      if (plan.head->bias)
        tensorParallel[plan.head->bias] = {0, "tp"};
    }
  }
  for (auto [arg, name] : namedArguments(func))
    if (auto it = tensorParallel.find(arg); it != tensorParallel.end())
      tensorParallelByName[name] = it->second.first;
  // ZeRO splits each tensor along its first dimension that divides.
  auto zeroDim = [&](BlockArgument arg) -> int64_t {
    auto shape = cast<ShapedType>(arg.getType()).getShape();
    for (auto [dim, size] : llvm::enumerate(shape))
      if (size % dp == 0)
        return dim;
    return -1;
  };
  for (auto [arg, name] : namedArguments(func)) {
    int64_t rank = cast<ShapedType>(arg.getType()).getRank();
    bool isInput = func.getArgAttr(arg.getArgNumber(),
                                   CleaveDialect::kInputAttrName) != nullptr;
    bool isParam = func.getArgAttr(arg.getArgNumber(),
                                   CleaveDialect::kParamAttrName) != nullptr;
    if (auto it = tensorParallel.find(arg); it != tensorParallel.end()) {
      if (zero == 3)
        tensorAndZeroHint(name, arg, it->second.first);
      else
        hintFor(name, rank, it->second.first, it->second.second);
    } else if (megatron && isOptimizerState(name) &&
               tensorParallelByName.count(stateParameter(name))) {
      // States follow their parameter's tp split, ZeRO's dp split on top.
      if (zero > 0)
        tensorAndZeroHint(name, arg,
                          tensorParallelByName.lookup(stateParameter(name)));
    } else if (megatron && zero == 0 && isOptimizerState(name)) {
      // States follow their parameter through the optimizer op.
    } else if (isInput) {
      if (rank == 0 || cast<ShapedType>(arg.getType()).getDimSize(0) % dp)
        return fail(preset + " splits the batch over dp=" + Twine(dp) +
                    ", but input '" + name + "' has " +
                    (rank == 0 ? Twine("no batch dimension")
                               : "a batch of " +
                                     Twine(cast<ShapedType>(arg.getType())
                                               .getDimSize(0))) +
                    "; use a batch size divisible by " + Twine(dp));
      hintFor(name, rank, 0);
    } else if (zero > 0 && isOptimizerState(name)) {
      hintFor(name, rank, zeroDim(arg));
    } else if (zero == 3 && isParam) {
      hintFor(name, rank, zeroDim(arg));
    } else {
      hintFor(name, rank, -1);
    }
  }
  return hints;
}

ShardingHint mlir::cleave::inModelLayout(const ShardingHint &hint,
                                         ModuleOp module) {
  ShardingHint result = hint;
  result.modelLayout = true;
  int64_t batchDim =
      hint.modelLayout ? 0 : getModelBatchDim(module, hint.pattern);
  if (batchDim && batchDim < static_cast<int64_t>(hint.dims.size()))
    std::rotate(result.dims.begin(), result.dims.begin() + 1,
                result.dims.begin() + batchDim + 1);
  return result;
}

llvm::Error mlir::cleave::applyShardingHints(func::FuncOp func, MeshAttr mesh,
                                             ArrayRef<ShardingHint> hints) {
  MLIRContext *context = func.getContext();
  auto named = namedArguments(func);
  // A preset gives one literal hint per tensor: found by name, not by
  // matching every hint against every tensor (quadratic in the model).
  llvm::StringMap<SmallVector<unsigned, 1>> byName;
  for (auto [index, entry] : llvm::enumerate(named))
    byName[entry.second].push_back(index);
  // The strongest hint per named argument.
  SmallVector<const ShardingHint *> chosen(named.size(), nullptr);
  for (const ShardingHint &hint : hints) {
    SmallVector<unsigned, 1> matches;
    if (std::optional<std::string> literal = literalGlob(hint.pattern)) {
      if (auto it = byName.find(*literal); it != byName.end())
        matches = it->second;
    } else {
      auto glob = llvm::GlobPattern::create(hint.pattern);
      if (!glob)
        return fail("sharding hint '" + formatShardingHint(hint) + "' (" +
                    hint.origin + "): bad glob: " +
                    llvm::toString(glob.takeError()));
      for (auto [index, entry] : llvm::enumerate(named))
        if (glob->match(entry.second))
          matches.push_back(index);
    }
    if (matches.empty()) {
      std::string known;
      for (auto [arg, name] : named)
        known += (known.empty() ? "" : ", ") + name.str();
      return fail("sharding hint '" + formatShardingHint(hint) + "' (" +
                  hint.origin + ") names no tensor of the model (tensors: " +
                  known + ")");
    }
    for (unsigned index : matches) {
      const ShardingHint *&current = chosen[index];
      if (current && current->priority == hint.priority &&
          current->dims != hint.dims)
        return fail("conflicting sharding hints of equal priority " +
                    Twine(hint.priority) + " for '" + named[index].second +
                    "': '" + formatShardingHint(*current) + "' (" +
                    current->origin + ") and '" + formatShardingHint(hint) +
                    "' (" + hint.origin +
                    "); give one a lower priority with @N or remove one");
      if (!current || hint.priority < current->priority)
        current = &hint;
    }
  }
  FunctionAttributes attributes(func, FunctionAttributes::Arguments);
  for (auto [index, entry] : llvm::enumerate(named)) {
    const ShardingHint *hint = chosen[index];
    if (!hint)
      continue;
    auto [arg, name] = entry;
    // A user's hint on an input the function takes batch-first: its dims
    // in the function's order ([d_k, d_0, ..., d_(k-1), d_(k+1), ...]).
    std::vector<std::vector<std::string>> hintDims = hint->dims;
    int64_t batchDim = hint->modelLayout ? getModelBatchDim(func, name) : 0;
    if (batchDim && static_cast<int64_t>(hintDims.size()) ==
                        cast<ShapedType>(arg.getType()).getRank()) {
      auto moved = hintDims.begin() + batchDim;
      std::rotate(hintDims.begin(), moved, moved + 1);
    }
    SmallVector<Attribute> dims;
    for (const std::vector<std::string> &axes : hintDims) {
      SmallVector<Attribute> dim;
      for (const std::string &axis : axes)
        dim.push_back(StringAttr::get(context, axis));
      dims.push_back(ArrayAttr::get(context, dim));
    }
    auto empty = ArrayAttr::get(context, {});
    auto sharding = ShardingAttr::get(context, ArrayAttr::get(context, dims),
                                      empty, empty);
    if (std::optional<std::string> problem =
            sharding.checkAgainst(mesh, cast<ShapedType>(arg.getType())))
      return fail("sharding hint '" + formatShardingHint(*hint) + "' (" +
                  hint->origin + ") does not fit tensor '" + name +
                  "' of shape " +
                  llvm::join(llvm::map_range(
                                 cast<ShapedType>(arg.getType()).getShape(),
                                 [](int64_t d) { return std::to_string(d); }),
                             "x") +
                  (batchDim ? " (its batch dim " + Twine(batchDim) +
                                  " taken first, as the program takes it)"
                            : Twine()) +
                  ": " + *problem);
    attributes.set(arg.getArgNumber(), CleaveDialect::kShardingAttrName,
                   sharding);
    attributes.set(arg.getArgNumber(), "cleave.priority",
                   IntegerAttr::get(IntegerType::get(context, 64),
                                    hint->priority));
  }
  return llvm::Error::success();
}

llvm::Error mlir::cleave::splitBatchesOver(func::FuncOp func, MeshAttr mesh,
                                           StringRef axis) {
  MLIRContext *context = func.getContext();
  auto axisAttr = StringAttr::get(context, axis);
  FunctionAttributes attributes(func, FunctionAttributes::Arguments);
  for (auto [arg, name] : namedArguments(func)) {
    auto type = cast<ShapedType>(arg.getType());
    if (!attributes.get(arg.getArgNumber(), CleaveDialect::kInputAttrName) ||
        type.getRank() == 0)
      continue;
    auto current = dyn_cast_or_null<ShardingAttr>(
        attributes.get(arg.getArgNumber(), CleaveDialect::kShardingAttrName));
    SmallVector<SmallVector<StringAttr>> dims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      dims.push_back(current ? current.getDimAxes(d)
                             : SmallVector<StringAttr>());
    dims[0].push_back(axisAttr);
    int64_t parts = mesh.getGroupSize(dims[0]);
    int64_t micro = mesh.getGroupSize(axisAttr);
    if (type.getDimSize(0) % parts != 0)
      return fail("input '" + name + "' has a batch of " +
                  Twine(type.getDimSize(0)) + ", which does not divide into " +
                  (parts == micro ? Twine(micro) + " micro-batches"
                                  : Twine(parts / micro) + " ranks x " +
                                        Twine(micro) + " micro-batches") +
                  "; use a batch size divisible by " + Twine(parts));
    attributes.set(arg.getArgNumber(), CleaveDialect::kShardingAttrName,
                   ShardingAttr::get(context, dims,
                                     current ? current.getReplicatedAxes()
                                             : SmallVector<StringAttr>(),
                                     {}));
    if (!current)
      attributes.set(arg.getArgNumber(), "cleave.priority",
                     IntegerAttr::get(IntegerType::get(context, 64), 0));
  }
  return llvm::Error::success();
}

void mlir::cleave::gatherParametersForCompute(func::FuncOp func) {
  MLIRContext *context = func.getContext();
  auto dp = StringAttr::get(context, "dp");
  for (BlockArgument arg : func.getArguments()) {
    auto sharding = func.getArgAttrOfType<ShardingAttr>(
        arg.getArgNumber(), CleaveDialect::kShardingAttrName);
    if (!func.getArgAttr(arg.getArgNumber(), CleaveDialect::kParamAttrName) ||
        !sharding)
      continue;
    // The sharding compute reads: the stored one without dp.
    SmallVector<SmallVector<StringAttr>> dims;
    bool splitOverDp = false;
    for (int64_t d = 0, e = cast<ShapedType>(arg.getType()).getRank(); d < e;
         ++d) {
      SmallVector<StringAttr> &axes = dims.emplace_back(sharding.getDimAxes(d));
      splitOverDp |= llvm::is_contained(axes, dp);
      llvm::erase(axes, dp);
    }
    if (!splitOverDp)
      continue;
    auto gathered = ShardingAttr::get(context, dims, {}, {});
    for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
      Operation *user = use.getOwner();
      if (isa<SgdOp, AdamwOp, func::ReturnOp>(user))
        continue;
      OpBuilder b(user);
      auto reshard = ReshardOp::create(b, user->getLoc(), arg, gathered);
      use.set(reshard);
    }
  }
}
