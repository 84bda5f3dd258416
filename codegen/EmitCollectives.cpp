//===- EmitCollectives.cpp - collectives, stage transfers -----------------===//
//
// The collectives the partitioner made explicit, over the communicator of
// their mesh axes (runtime/CollectiveKernels.h: MPI on the cpu target, NCCL
// on the cuda target), and the sends and receives between pipeline stages.
//
//===----------------------------------------------------------------------===//

#include "codegen/CollectiveBuffers.h"
#include "codegen/Emitter.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::formatv;

namespace mlir::cleave::codegen {

std::string Emitter::axisGroup(ArrayAttr axes) {
  std::string list;
  for (StringAttr axis : axes.getAsRange<StringAttr>())
    list += (list.empty() ? "" : ", ") +
            std::to_string(mesh.getAxisIndex(axis.getValue()));
  return formatv("AxisGroup{{{{{0}}, {1}}", list, axes.size()).str();
}

std::string Emitter::globalHandle(const std::string &base) {
  std::string handle = cppNames.unique(base);
  handleBase[handle] = base;
  globals << "static int64_t " << handle << ";\n";
  return handle;
}

LogicalResult Emitter::emitOperation(AllReduceOp allReduce) {
  Type element = tensorType(allReduce.getInputs()[0]).getElementType();
  std::string ins, outs, counts;
  for (auto [in, out] :
       llvm::zip(allReduce.getInputs(), allReduce.getResults())) {
    if (tensorType(in).getElementType() != element)
      return allReduce->emitOpError("mixes element types in one bucket");
    ins += (ins.empty() ? "" : ", ") + ref(in);
    outs += (outs.empty() ? "" : ", ") + ref(out);
    counts += (counts.empty() ? "" : ", ") + numElements(in);
  }
  std::string name = uniqueName(baseName(allReduce) + "_comm");
  body << formatv("  {{\n    const void *{0}_in[] = {{{1}};\n"
                  "    void *{0}_out[] = {{{2}};\n"
                  "    const int64_t {0}_count[] = {{{3}};\n",
                  name, ins, outs, counts);
  std::string arguments =
      formatv("{0}_in, {0}_out, {0}_count, {1}, {2}, {3}", name,
              allReduce.getInputs().size(), dtypeEnum(element),
              axisGroup(allReduce.getAxes()))
          .str();
  // Runs of small tensors are packed into a staging buffer of the op's own.
  if (traits.segmentedBuckets && collectiveStagingBytes(allReduce) > 0)
    arguments += ", &" + collectiveStagingRef(allReduce);
  if (traits.blockingAllReduceAtOnce && readAtOnce(allReduce)) {
    call(allReduce, "  allReduceBucket(" + arguments + ")");
    body << "  }\n";
    return success();
  }
  // Started here, finished before the first use of a result, so
  // the exchange overlaps the ops in between (the rest of the
  // backward pass, for gradient buckets).
  std::string handle = globalHandle(baseName(allReduce) + "_comm");
  call(allReduce, formatv("  {0} = startAllReduceBucket({1})",
                          handleRef(handle), arguments));
  body << "  }\n";
  pendingWaits[firstUser(allReduce)].push_back(handle);
  return success();
}

bool Emitter::readAtOnce(Operation *op) {
  Operation *user = firstUser(op);
  if (!user)
    return false;
  for (Operation *at = op->getNextNode(); at && at != user;
       at = at->getNextNode()) {
    auto reshape = dyn_cast<ReshapeOp>(at);
    bool makesNoCall =
        !runsOnStage(at, stage) || isa<ConstantOp>(at) ||
        fusion.fusedAway.contains(at) ||
        isInputRows(at) != plan.rowsOfInput.end() ||
        (reshape && plan.root(reshape.getResult()) != reshape.getResult());
    if (!makesNoCall)
      return false;
  }
  return true;
}

LogicalResult Emitter::emitOperation(AllGatherOp gather) {
  call(gather, formatv("allGatherDim({0}, {1}, {2}, {3}, {4}, {5})",
                       ref(gather.getInput()), shapeLiteral(gather.getInput()),
                       gather.getDim(), elementBytes(gather.getInput()),
                       ref(gather.getResult()), axisGroup(gather.getAxes())));
  return success();
}

LogicalResult Emitter::emitOperation(ReduceScatterOp scatter) {
  call(scatter,
       formatv("reduceScatterDim({0}, {1}, {2}, {3}, {4}, {5})",
               ref(scatter.getInput()), shapeLiteral(scatter.getInput()),
               scatter.getDim(),
               dtypeEnum(tensorType(scatter.getInput()).getElementType()),
               ref(scatter.getResult()), axisGroup(scatter.getAxes())));
  return success();
}

LogicalResult Emitter::emitOperation(AxisIndexOp index) {
  call(index, formatv("writeAxisIndex({0}, {1})", ref(index.getResult()),
                      axisGroup(index.getAxes())));
  return success();
}

LogicalResult Emitter::emitOperation(AllSliceOp slice) {
  call(slice, formatv("allSliceDim({0}, {1}, {2}, {3}, {4}, {5})",
                      ref(slice.getInput()), shapeLiteral(slice.getInput()),
                      slice.getDim(), elementBytes(slice.getInput()),
                      ref(slice.getResult()), axisGroup(slice.getAxes())));
  return success();
}

LogicalResult Emitter::emitOperation(SendRecvOp op) {
  std::string group =
      formatv("AxisGroup{{{{{0}}, 1}", mesh.getAxisIndex(op.getAxis()));
  Value value = op.getInput();
  std::string bytes =
      formatv("{0} * {1}", numElements(value), elementBytes(value)).str();
  // The cpu target overlaps hand-overs with compute: the sender sends the
  // tensor (or a copy, where the plan does not keep its buffer until the
  // send completes) and goes on; the receiver posts the receive here and
  // waits before the first use. (The cuda target's NCCL calls are
  // asynchronous on the communication stream already.)
  if (stage == op.getSourceAttr().getInt()) {
    std::string send =
        !traits.asyncHandOvers
            ? "sendRecv({0}, nullptr, {1}, {2}, kNoPeer, {3})"
        : sendsUncopied(op, plan, fusion)
            ? "sendAsyncUncopied({0}, {1}, {2}, {3})"
            : "sendAsync({0}, {1}, {2}, {3}, " + collectiveStagingRef(op) + ")";
    call(op, formatv(send.c_str(), ref(value), bytes, op.getDestAttr().getInt(),
                     group));
    return success();
  }
  declare(op.getResult(), nodeName(op.getLoc()).empty()
                              ? std::string("received")
                              : nodeName(op.getLoc()));
  if (!traits.asyncHandOvers) {
    call(op, formatv("sendRecv(nullptr, {0}, {1}, kNoPeer, {2}, {3})",
                     ref(op.getResult()), bytes, op.getSourceAttr().getInt(),
                     group));
    return success();
  }
  std::string handle = globalHandle(baseName(op) + "_recv");
  call(op, formatv("{0} = startReceive({1}, {2}, {3}, {4})", handleRef(handle),
                   ref(op.getResult()), bytes, op.getSourceAttr().getInt(),
                   group));
  pendingWaits[firstUser(op)].push_back(handle);
  return success();
}

} // namespace mlir::cleave::codegen
