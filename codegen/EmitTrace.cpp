//===- EmitTrace.cpp - the step's trace points ----------------------------===//
//
// Each op of the cpu target's step is bracketed by CLEAVE_TRACE_BEGIN/END
// (runtime/Trace.h) with its row in a table naming it: its ONNX node, its
// kind, its phase (codegen/StepPhases.h), stage and micro-batch, and for a
// send/recv the stage at the other end. A collective's END carries the
// bytes this rank sends in it, by runtime/CommVolume.h's formulas for the
// rank's own place in its group (the numbers --print-comm's counters
// count).
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"
#include "codegen/SourceText.h"

#include "llvm/Support/FormatVariadic.h"

#include "runtime/CommVolume.h"

#include <numeric>

using llvm::formatv;

namespace mlir::cleave::codegen {

int Emitter::traceRow(Operation *op, StringRef kind) {
  if (!phases)
    phases.emplace(func);
  std::string name = traceNodeName(op);
  std::string opKind =
      kind.empty() ? op->getName().stripDialect().str() : kind.str();
  bool collective =
      isa<AllReduceOp, AllGatherOp, ReduceScatterOp, SendRecvOp>(op);
  const char *phase =
      collective ? "collective" : stepPhaseName(phases->phaseOf(op));
  int peerStage = -1, peerAxis = -1;
  if (auto transfer = dyn_cast<SendRecvOp>(op)) {
    peerAxis = mesh.getAxisIndex(transfer.getAxis());
    peerStage = stage == transfer.getSourceAttr().getInt()
                    ? transfer.getDestAttr().getInt()
                    : transfer.getSourceAttr().getInt();
  }
  // In a part, the micro-batch is the part's (its code is every
  // micro-batch's): rows of copies of one op are one row.
  int64_t microbatch = StepPhases::microbatchOf(op);
  std::string row =
      formatv("  {{{0}, {1}, \"{2}\", {3}, {4}, {5}, {6}},",
              cppStringLiteral(name), cppStringLiteral(opKind), phase,
              stage < 0 ? 0 : stage,
              part && microbatch >= 0 ? std::string("kPartMicrobatch")
                                      : std::to_string(microbatch),
              peerStage, peerAxis)
          .str();
  auto [it, isNew] = traceRowIndex.try_emplace(row, traceRows.size());
  if (isNew)
    traceRows.push_back(row);
  return it->second;
}

std::string Emitter::traceBytes(Operation *op) {
  auto group = [&](Operation *op) {
    return axisGroup(op->getAttrOfType<ArrayAttr>("axes"));
  };
  if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
    SmallVector<int64_t> counts;
    for (Value input : allReduce.getInputs())
      counts.push_back(tensorType(input).getNumElements());
    int64_t bytes = std::stoll(elementBytes(allReduce.getInputs()[0]));
    std::string g = group(op);
    auto sent = [&](int64_t count) {
      return formatv("{3}({0}, {1}, groupSize({2}), groupRank({2}))", count,
                     bytes, g, traits.allReduceBytesSent)
          .str();
    };
    if (!traits.segmentedBuckets)
      return sent(std::accumulate(counts.begin(), counts.end(), int64_t{0}));
    // The cpu runtime's all-reduces of the bucket's segments.
    std::string sum;
    ::cleave::rt::forEachBucketSegment(
        counts.data(), static_cast<int>(counts.size()), bytes,
        [&](int first, int end) {
          sum += (sum.empty() ? "" : " + ") +
                 sent(std::accumulate(counts.begin() + first,
                                      counts.begin() + end, int64_t{0}));
        });
    return "(" + sum + ")";
  }
  if (auto gather = dyn_cast<AllGatherOp>(op)) {
    std::string g = group(op);
    return formatv("allGatherBytesSent({0} * {1}, groupSize({2}), "
                   "groupRank({2}))",
                   numElements(gather.getInput()),
                   elementBytes(gather.getInput()), g);
  }
  if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    std::string g = group(op);
    return formatv("reduceScatterBytesSent({0}, {1}, groupSize({2}), "
                   "groupRank({2}))",
                   numElements(scatter.getResult()),
                   elementBytes(scatter.getResult()), g);
  }
  if (auto transfer = dyn_cast<SendRecvOp>(op))
    return stage == transfer.getSourceAttr().getInt()
               ? formatv("{0} * {1}", numElements(transfer.getInput()),
                         elementBytes(transfer.getInput()))
                     .str()
               : "0";
  return "-1";
}

std::pair<std::string, int> Emitter::traceTable() const {
  if (traceRows.empty())
    return {"", 0};
  std::string text = "// The trace points' ops (--trace): node, kind, phase, "
                     "stage, micro-batch,\n// peer stage and axis of a "
                     "send/recv.\nstatic const TraceOp kTraceOps[] = {\n";
  for (const std::string &row : traceRows)
    text += row + "\n";
  return {text + "};\n\n", static_cast<int>(traceRows.size())};
}

} // namespace mlir::cleave::codegen
