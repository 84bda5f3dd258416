//===- Emitter.cpp - the training step, one runtime call per op -----------===//
//
// One runtime call per op, in program order, on buffers laid out by the
// memory plan. Buffers are named after the ONNX node (or tensor) they come
// from, and every call carries its node name in a comment, so the source
// reads like the model. Both targets share this emitter (Emitter.h says
// where they differ).
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"
#include "codegen/SourceText.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using llvm::formatv;

namespace mlir::cleave::codegen {

/// The C++ element type of a tensor.
std::string cType(Type element) {
  if (element.isF32())
    return "float";
  if (element.isF64())
    return "double";
  if (element.isInteger(1))
    return "bool";
  if (element.isUnsignedInteger(8))
    return "uint8_t";
  if (auto integer = dyn_cast<IntegerType>(element))
    return formatv("int{0}_t", integer.getWidth()).str();
  return "";
}

std::string dtypeEnum(Type element) {
  if (element.isF32())
    return "DType::F32";
  if (element.isF64())
    return "DType::F64";
  if (element.isInteger(64))
    return "DType::I64";
  if (element.isInteger(32))
    return "DType::I32";
  if (element.isInteger(1))
    return "DType::Bool";
  return "";
}

std::string shapeLiteral(Value value) {
  std::string text = "Shape{";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(tensorType(value).getShape(), os);
  os << "}";
  return text;
}

std::string listLiteral(ArrayRef<int64_t> values) {
  std::string text = "{";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(values, os);
  os << "}";
  return text;
}

/// The ONNX node name in a location, if any, fit for a comment.
std::string nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return cppCommentText(name.getName());
  return "";
}

std::string floatLiteral(double value) {
  if (std::isinf(value))
    return value > 0 ? "INFINITY" : "-INFINITY";
  if (std::isnan(value))
    return "NAN";
  return formatv("{0:e9}", value).str();
}

Emitter::Emitter(func::FuncOp func, const EmitOptions &options)
    : func(func), options(options) {
  fusion = planFusion(
      func, [](Operation *op) { return !elementwiseBody(op).empty(); });
  if (traits.stridedMatmuls)
    planStridedMatmuls(func, fusion);
  if (traits.fusedBackwardSgd)
    planLiveTapUpdates(func, fusion);
  if (traits.asyncHandOvers)
    planUncopiedSends(func, fusion);
  // A dropout's stream is numbered in the program order of the step it
  // comes from: partitioning stamps the number (cleave.dropout_number) so
  // that micro-batch copies share it and schedules may reorder them.
  func.walk([&](DropoutOp op) {
    auto stamped =
        op->getAttrOfType<IntegerAttr>(CleaveDialect::kDropoutNumberAttrName);
    dropoutNumber.try_emplace(op, stamped ? stamped.getInt()
                                          : int64_t(dropoutNumber.size()));
  });
  func.walk([&](Operation *op) {
    if (isa<RandomUniformOp, RandomNormalOp>(op))
      randomNumber.try_emplace(op, randomNumber.size());
  });
}

std::string Emitter::baseName(Operation *op) {
  std::string base = nodeName(op->getLoc());
  if (base.empty())
    base = op->getName().stripDialect().str();
  return base;
}

std::string Emitter::baseName(OpResult result) {
  Operation *op = result.getOwner();
  return op->getNumResults() > 1
             ? baseName(op) + "_" + std::to_string(result.getResultNumber())
             : baseName(op);
}

std::string Emitter::array(StringRef base, ArrayRef<int64_t> values) {
  std::string name = uniqueName(base);
  body << formatv("  const int64_t {0}[] = {1};\n", name,
                  listLiteral(values.empty() ? ArrayRef<int64_t>{0} : values));
  return name;
}

void Emitter::call(Operation *op, const std::string &text) {
  std::string node = nodeName(op->getLoc());
  body << "  " << text << ";";
  if (!node.empty())
    body << "  // " << node;
  body << "\n";
}

void Emitter::finishCollectivesUsedBy(Operation *op) {
  for (const std::string &bucket : pendingWaits.lookup(op)) {
    auto row = waitTraceRow.find(bucket);
    if (row != waitTraceRow.end())
      body << "  CLEAVE_TRACE_BEGIN(" << rowRef(row->second) << ", "
           << traceMicrobatch() << ");\n";
    body << "  finishAllReduceBucket(" << handleRef(bucket) << ");\n";
    if (row != waitTraceRow.end())
      body << "  CLEAVE_TRACE_END(" << rowRef(row->second) << ", -1);\n";
  }
  pendingWaits.erase(op);
}

void Emitter::declare(Value value, StringRef base) {
  Value root = plan.root(value);
  if (root != value) {
    std::string rootName = ref(root);
    (part ? part->local : names)[value] = rootName;
    return;
  }
  int64_t offset = plan.arenaOffset.lookup(value);
  if (part) {
    std::string declaration = "  auto *{0} = static_cast<" +
                              elementType(value) + " *>({1});\n";
    part->local[value] =
        bindSlot(offset, base, declaration.c_str());
    return;
  }
  std::string name = uniqueName(base);
  names[value] = name;
  body << formatv("  auto *{0} = reinterpret_cast<{1} *>(ctx.arena + {2});\n",
                  name, elementType(value), offset);
}

/// These ops' runtime kernels compute in float32 only (data movement,
/// casts, elementwise ops and inference-mode Dropout, a copy, are generic
/// over the element type). Their first result and operand are the data.
static LogicalResult checkFloat32Kernel(Operation *op, const char *target) {
  auto dropout = dyn_cast<DropoutOp>(op);
  if (!(dropout && dropout.getTraining()) &&
      !isa<GemmOp, MatmulOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp, SoftmaxOp,
           LogSoftmaxOp, SoftmaxGradOp, LayerNormOp, LayerNormGradOp,
           BatchNormOp, BatchNormGradOp, BatchNormSumOp,
           BatchNormSquaredDeviationSumOp, BatchNormGradSumsOp,
           BatchNormGradFromSumsOp, ConvOp, ConvGradInputOp,
           ConvGradWeightOp, MaxPoolOp, MaxPoolGradOp, AvgPoolOp, AvgPoolGradOp,
           SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp, NllLossOp,
           NllLossGradOp, SliceGradOp, GatherGradOp, SgdOp, AdamwOp, MomentumOp,
           AdamOp, AdagradOp>(op))
    return success();
  SmallVector<Value> data(op->getResults().take_front(1));
  if (op->getNumOperands())
    data.push_back(op->getOperand(0));
  for (Value value : data)
    if (Type element = tensorType(value).getElementType(); !element.isF32())
      return op->emitOpError()
             << "computes in " << element << ", but the " << target
             << " target's kernel for it computes in float32 only; export "
                "the model in float32 (model.float() before "
                "torch.onnx.export), and cast integer tensors to float "
                "before such ops";
  return success();
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (!runsOnStage(op, stage))
    return success();
  finishCollectivesUsedBy(op);
  if (auto constant = dyn_cast<ConstantOp>(op))
    return emitConstant(constant);
  if (fusion.fusedAway.contains(op))
    return success();
  // Rows of an input are a pointer into it.
  if (auto rows = isInputRows(op); rows != plan.rowsOfInput.end()) {
    std::string view =
        formatv("({0} + {1})", ref(rows->second.first), rows->second.second);
    (part ? part->local : names)[op->getResult(0)] = view;
    return success();
  }
  // --trace: a slice around the op's calls; a view makes no call.
  auto reshape = dyn_cast<ReshapeOp>(op);
  if (reluInGemm.contains(op) || runsInAnotherCall(op) ||
      (reshape && plan.root(reshape.getResult()) != reshape.getResult()))
    return emitOpCalls(op);
  std::string row =
      rowRef(traceRow(op, fusion.groups.count(op) ? "fused loop" : ""));
  body << "  CLEAVE_TRACE_BEGIN(" << row << ", " << traceMicrobatch()
       << ");\n";
  LogicalResult result = emitOpCalls(op);
  body << "  CLEAVE_TRACE_END(" << row << ", " << traceBytes(op) << ");\n";
  // The wait for a started all-reduce is a slice of its own.
  if (auto allReduce = dyn_cast<AllReduceOp>(op))
    if (auto it = pendingWaits.find(firstUser(allReduce));
        succeeded(result) && it != pendingWaits.end() && !it->second.empty())
      waitTraceRow[it->second.back()] = traceRow(op, "all_reduce wait");
  return result;
}

bool Emitter::runsInAnotherCall(Operation *op) const {
  if (plan.gemmInUpdate.count(op) || backward.fusedUpdates.contains(op))
    return true;
  auto sgd = dyn_cast<SgdOp>(op);
  auto conv = sgd ? sgd.getGrad().getDefiningOp<ConvGradWeightOp>() : nullptr;
  return conv && backward.convWithUpdate.count(conv);
}

LogicalResult Emitter::emitOpCalls(Operation *op) {
  // A send declares no buffer; its receive declares one on its own stage.
  if (auto transfer = dyn_cast<SendRecvOp>(op))
    return emitOperation(transfer);
  for (OpResult result : op->getResults())
    declare(result, baseName(result));
  if (fusion.groups.count(op)) {
    emitFusedGroup(op);
    return success();
  }
  if (reluInGemm.contains(op)) {
    body << "  // " << baseName(op) << ": in the GEMM's epilogue\n";
    return success();
  }
  if (auto it = fusion.softmaxAt.find(op); it != fusion.softmaxAt.end())
    return emitFusedSoftmax(op, it->second);
  if (std::string fn = elementwiseBody(op); !fn.empty())
    return emitElementwise(op, fn);
  if (failed(checkFloat32Kernel(op, traits.name)))
    return failure();
  auto emit = [&](auto typed) { return emitOperation(typed); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // EmitElementwise.cpp
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(emit)
      // EmitLinalg.cpp
      .Case<GemmOp, MatmulOp>(emit)
      // EmitNormalization.cpp
      .Case<SoftmaxOp, LogSoftmaxOp, SoftmaxGradOp, LayerNormOp,
            LayerNormGradOp, BatchNormOp, BatchNormGradOp, BatchNormSumOp,
            BatchNormSquaredDeviationSumOp, BatchNormGradSumsOp,
            BatchNormGradFromSumsOp>(emit)
      // EmitDataMovement.cpp
      .Case<ReshapeOp, TransposeOp, BroadcastToOp, ConcatOp, SplitOp, SliceOp,
            SliceGradOp, GatherOp, GatherGradOp>(emit)
      // EmitConvolution.cpp
      .Case<ConvOp, ConvGradInputOp, ConvGradWeightOp, MaxPoolOp, MaxPoolGradOp,
            AvgPoolOp, AvgPoolGradOp>(emit)
      // EmitLoss.cpp
      .Case<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp, NllLossOp,
            NllLossGradOp>(emit)
      // EmitTraining.cpp
      .Case<DropoutOp, RandomUniformOp, RandomNormalOp, LrScheduleOp, SgdOp,
            AdamwOp, MomentumOp, AdamOp, AdagradOp>(emit)
      // EmitCollectives.cpp
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AxisIndexOp, AllSliceOp>(
          emit)
      .Default([&](Operation *) {
        return op->emitOpError()
               << "is not supported by the " << traits.name << " target yet";
      });
}

FailureOr<bool> Emitter::emitStep(const std::string &argPointers) {
  Block &block = func.getBody().front();
  plan = planMemory(func, fusion, stage);
  backward = traits.fusedBackwardSgd
                 ? planBackwardFusion(block, plan, fusion, stage)
                 : BackwardFusion();
  pendingWaits.clear();
  body << argPointers;
  if (failed(emitParts(block)))
    return failure();

  // Results: the loss is reported; updates land in their tensors; graph
  // outputs are copied to output tensors (for --dump-outputs).
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  finishCollectivesUsedBy(ret);
  // The results the parts computed get names in the step again.
  for (Value value : ret.getOperands()) {
    Operation *def = value.getDefiningOp();
    Value root = plan.root(value);
    if (!def || !isHeldOnStage(value, stage) || names.count(value) ||
        !plan.arenaOffset.count(root))
      continue;
    if (!names.count(root)) {
      std::string name = uniqueName(baseName(cast<OpResult>(root)));
      body << formatv("  auto *{0} = {1};\n", name, arenaExpression(root));
      names[root] = name;
    }
    names[value] = names.lookup(root);
  }
  bool haveLoss = false;
  int outputIndex = block.getNumArguments();
  // Parameters and states by name, for the updates that land in them.
  llvm::DenseMap<Attribute, BlockArgument> persistentArgs;
  for (BlockArgument candidate : block.getArguments())
    for (StringRef kind :
         {CleaveDialect::kParamAttrName, CleaveDialect::kStateAttrName})
      if (Attribute name = func.getArgAttr(candidate.getArgNumber(), kind))
        persistentArgs[name] = candidate;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    bool isOutput =
        func.getResultAttr(i, CleaveDialect::kOutputAttrName) != nullptr;
    // Each stage writes the results it computes.
    if (!isHeldOnStage(value, stage)) {
      outputIndex += isOutput;
      continue;
    }
    if (func.getResultAttr(i, CleaveDialect::kLossAttrName)) {
      body << formatv("  ctx.loss = static_cast<float>({0});\n", scalar(value));
      haveLoss = true;
    }
    if (auto output = func.getResultAttrOfType<StringAttr>(
            i, CleaveDialect::kOutputAttrName))
      body << formatv("  {0}({1}, {2}, static_cast<{3} *>(ctx.tensors[{4}]));"
                      "  // output {5}\n",
                      traits.copyFunction, ref(value), numElements(value),
                      elementType(value), outputIndex++,
                      cppCommentText(output.getValue()));
    auto target =
        func.getResultAttrOfType<StringAttr>(i, CleaveDialect::kUpdateAttrName);
    if (!target)
      continue;
    BlockArgument arg = persistentArgs.lookup(target);
    if (!arg)
      return func.emitError() << "result #" << i << " updates '"
                              << target.getValue() << "', which is no argument";
    if (plan.root(value) != arg)
      body << formatv("  {0}({1}, {2}, {3});  // update {4}\n",
                      traits.copyFunction, ref(value), numElements(value),
                      ref(arg), cppCommentText(target.getValue()));
  }
  // The weights' updates are written: the copies of their live taps that
  // served this step's convolutions are stale.
  for (BlockArgument weight : block.getArguments())
    if (auto it = croppedWeightNames.find(weight);
        it != croppedWeightNames.end() &&
        backward.refreshedWeights.contains(weight))
      body << formatv("  staleCroppedWeight({0});\n", it->second);

  return haveLoss;
}

} // namespace mlir::cleave::codegen
