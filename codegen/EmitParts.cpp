//===- EmitParts.cpp - the step as calls of part functions ----------------===//
//
// g++'s time grows faster than the length of a function, and a pipelined
// step repeats every micro-batch's pass through a stage. So the step is
// emitted as functions of at most kMaxPartOps ops, cut where the
// micro-batch changes, and a part that prints like an earlier one reuses
// that one's function: m micro-batches compile one function per kind of
// pass, not m copies. Each stage's step is a loop over a table of the
// calls (runtime/Program.h's runParts).
//
// For two parts to print alike, nothing that differs between them may be
// in their text: a part reaches its buffers, the values it reads and the
// collective handles it starts or waits for through slot codes (an arena
// offset, a tensor index or an entry of the step's `refs`, resolved by
// resolveSlots), its trace rows through `rows`, and its own names come
// from a fresh CppNames.
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"
#include "runtime/Program.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

/// The most ops of one part function: g++'s time per op grows with the
/// length of a function, and a call (a table lookup, resolving the slots)
/// costs next to nothing. 16 built fastest of 16, 32, 64 and 256 (a
/// 2,000-node chain: 4.1, 4.4, 5.0, 10 s; the 4-layer GPT with 64
/// micro-batches: 2.5, 3.0, 3.2, 4.5 s).
static constexpr size_t kMaxPartOps = 16;

std::string Emitter::arenaExpression(Value value) {
  Value root = plan.root(value);
  if (std::string name = names.lookup(root); !name.empty())
    return name;
  auto offset = plan.arenaOffset.find(root);
  if (offset == plan.arenaOffset.end())
    return "CLEAVE_VALUE_WITHOUT_BUFFER"; // (does not compile: a bug here)
  return formatv("reinterpret_cast<{0} *>(ctx.arena + {1})", elementType(root),
                 offset->second)
      .str();
}

std::string Emitter::bindSlot(int64_t code, StringRef base,
                              const char *declaration) {
  std::string name = part->names.unique(base);
  std::string pointer = formatv("slots[{0}]", part->codes.size()).str();
  part->codes.push_back(code);
  part->bindings += formatv(declaration, name, pointer).str();
  return name;
}

int64_t Emitter::refCode(const std::string &expression) {
  auto [it, isNew] = refIndex.try_emplace(expression, refs.size());
  if (isNew)
    refs.push_back(expression);
  return ::cleave::rt::kRefCodes - static_cast<int64_t>(it->second);
}

std::string Emitter::ref(Value value) {
  if (!part) {
    std::string name = names.lookup(value);
    return name.empty() ? arenaExpression(value) : name;
  }
  if (auto it = part->local.find(value); it != part->local.end())
    return it->second;
  // A value from before the part, named after its node (or argument),
  // which is the same in every micro-batch's copy; scratch by its offset,
  // the rest through the step's refs. A view is its buffer's name.
  Value root = plan.root(value);
  if (root != value) {
    std::string name = ref(root);
    part->local[value] = name;
    return name;
  }
  auto offset = plan.arenaOffset.find(root);
  std::string outer = names.lookup(root);
  int64_t code;
  if (auto arg = dyn_cast<BlockArgument>(root))
    code = -1 - static_cast<int64_t>(arg.getArgNumber());
  else if (offset != plan.arenaOffset.end() && outer.empty())
    code = offset->second;
  else
    code = refCode(outer.empty() ? names.lookup(value) : outer);
  std::string base;
  if (auto result = dyn_cast<OpResult>(value))
    base = baseName(result);
  else
    base = outer.empty() ? std::string("input") : outer;
  std::string declaration =
      "  auto *{0} = static_cast<" + elementType(value) + " *>({1});\n";
  std::string name = bindSlot(code, base, declaration.c_str());
  part->local[value] = name;
  return name;
}

std::string Emitter::handleRef(const std::string &handle) {
  if (!part)
    return handle;
  if (auto it = part->handles.find(handle); it != part->handles.end())
    return it->second;
  std::string name =
      bindSlot(refCode("&" + handle), handleBase.lookup(handle),
               "  int64_t &{0} = *static_cast<int64_t *>({1});\n");
  part->handles[handle] = name;
  return name;
}

std::string Emitter::croppedWeightRef(Value weight) {
  Value root = plan.root(weight);
  if (!backward.croppedWeights.contains(root) &&
      !backward.refreshedWeights.contains(weight))
    return "";
  auto [it, inserted] = croppedWeightNames.try_emplace(root);
  if (inserted) {
    it->second = cppNames.unique("weightTaps");
    globals << "static CroppedWeight " << it->second << ";\n";
  }
  return globalRef(it->second, "weightTaps", "CroppedWeight");
}

std::string Emitter::collectiveStagingRef(Operation *op) {
  std::string global = cppNames.unique(baseName(op) + "_staging");
  globals << "static CollectiveBuffer " << global << ";\n";
  return globalRef(global, "staging", "CollectiveBuffer");
}

std::string Emitter::globalRef(const std::string &global, StringRef base,
                               StringRef type) {
  if (!part)
    return global;
  // Bound once per part, as a collective handle is (the names are unique
  // among both).
  auto [bound, isNew] = part->handles.try_emplace(global);
  if (isNew) {
    std::string declaration =
        ("  " + type + " &{0} = *static_cast<" + type + " *>({1});\n").str();
    bound->second = bindSlot(refCode("&" + global), base, declaration.c_str());
  }
  return bound->second;
}

std::string Emitter::rowRef(int row) {
  if (!part)
    return std::to_string(row);
  auto [it, inserted] = part->rowIndex.try_emplace(row, part->rows.size());
  if (inserted)
    part->rows.push_back(row);
  return formatv("rows[{0}]", it->second).str();
}

/// `static const TYPE name[] = {...};`, a dozen values a line.
template <typename T>
static std::string tableText(StringRef type, StringRef name,
                             const std::vector<T> &values) {
  std::string text = formatv("static const {0} {1}[] = {{", type, name).str();
  for (auto [i, v] : llvm::enumerate(values))
    text += (i % 12 ? " " : "\n   ") + std::to_string(v) + ",";
  return text + "\n};\n";
}

LogicalResult Emitter::emitPart(ArrayRef<Operation *> ops, int64_t microbatch,
                                StringRef what) {
  size_t start = bodyText.size();
  part.emplace();
  for (Operation *op : ops)
    if (failed(emitOp(op))) {
      part.reset();
      return failure();
    }
  std::string text = bodyText.substr(start);
  bodyText.resize(start);
  Part done = std::move(*part);
  part.reset();
  if (text.empty())
    return success();

  std::string definition =
      "(StepContext &ctx, void *const *refs, const int64_t *codes, const int "
      "*rows, int microbatch) {\n" +
      (done.codes.empty()
           ? std::string()
           : formatv("  void *slots[{0}];\n  resolveSlots(ctx, refs, codes, "
                     "{0}, slots);\n",
                     done.codes.size())
                 .str()) +
      done.bindings + text + "}\n";
  auto [function, isNew] = partFunctions.try_emplace(definition);
  if (isNew) {
    function->second = cppNames.unique("stepPart");
    partsText += "static void " + function->second + definition + "\n";
  }
  // The call: its function, where its codes and trace rows start (every
  // micro-batch's part passes the same rows), its micro-batch.
  size_t codes = stageCodes.size();
  llvm::append_range(stageCodes, done.codes);
  auto [rows, isNewSequence] =
      rowSequences.try_emplace(done.rows, stageRows.size());
  if (isNewSequence)
    llvm::append_range(stageRows, done.rows);
  partCalls.push_back(formatv("    {{{0}, {1}, {2}, {3}},  // {4}\n",
                              function->second, codes, rows->second,
                              microbatch, what));
  return success();
}

LogicalResult Emitter::emitParts(Block &block) {
  refIndex.clear();
  refs.clear();
  stageCodes.clear();
  stageRows.clear();
  rowSequences.clear();
  partCalls.clear();
  SmallVector<Operation *> run;
  int64_t runMicrobatch = -1;
  auto flush = [&]() {
    if (run.empty())
      return success();
    std::string what =
        (runMicrobatch >= 0 ? formatv("micro-batch {0}, ", runMicrobatch).str()
                            : std::string()) +
        "from " + baseName(run.front());
    LogicalResult result = emitPart(run, runMicrobatch, what);
    run.clear();
    runMicrobatch = -1;
    return result;
  };
  for (Operation &op : block.without_terminator()) {
    if (!runsOnStage(&op, stage))
      continue;
    // Constants are globals and rows of inputs pointers into them: the
    // step names them, parts read them through refs (a micro-batch's rows
    // differ only there).
    if (isa<ConstantOp>(op) || isInputRows(&op) != plan.rowsOfInput.end()) {
      if (failed(emitOp(&op)))
        return failure();
      continue;
    }
    // A part is one micro-batch's ops and the ops of none after them (the
    // sums of gradients that arrive with them).
    int64_t microbatch = StepPhases::microbatchOf(&op);
    if ((microbatch >= 0 && runMicrobatch >= 0 &&
         microbatch != runMicrobatch) ||
        run.size() >= kMaxPartOps)
      if (failed(flush()))
        return failure();
    if (microbatch >= 0)
      runMicrobatch = microbatch;
    run.push_back(&op);
  }
  if (failed(flush()))
    return failure();
  if (partCalls.empty())
    return success();

  // The tables of the calls, then the loop over them.
  std::string prefix = stage < 0 ? std::string("kStep")
                                 : formatv("kStage{0}", stage).str();
  std::string callsTable = cppNames.unique(prefix + "Parts");
  std::string codesTable = cppNames.unique(prefix + "Codes");
  std::string rowsTable = cppNames.unique(prefix + "TraceRows");
  partsText += "static const PartCall " + callsTable + "[] = {\n";
  for (const std::string &call : partCalls)
    partsText += call;
  partsText += "};\n" +
               tableText("int64_t", codesTable,
                         stageCodes.empty() ? std::vector<int64_t>{0}
                                            : stageCodes) +
               tableText("int", rowsTable,
                         stageRows.empty() ? std::vector<int>{0} : stageRows) +
               "\n";
  body << "  void *const refs[] = {";
  if (refs.empty())
    body << "nullptr";
  for (auto [k, expression] : llvm::enumerate(refs))
    body << (k ? ", " : "") << "(void *)(" << expression << ")";
  body << "};\n"
       << formatv("  runParts(ctx, refs, {0}, {1}, {2}, {3});\n", callsTable,
                  partCalls.size(), codesTable, rowsTable);
  // The stage's sends end with its step (they run on the communication
  // thread, past the last op that starts one).
  if (traits.asyncHandOvers &&
      llvm::any_of(block.getOps<SendRecvOp>(), [&](SendRecvOp op) {
        return op.getSourceAttr().getInt() == stage;
      }))
    body << "  finishSends();\n";
  return success();
}

} // namespace mlir::cleave::codegen
