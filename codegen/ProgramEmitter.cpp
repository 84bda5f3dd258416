//===- ProgramEmitter.cpp - training step to C++ or CUDA C++ --------------===//
//
// One runtime call per op, in program order, on buffers laid out by the
// memory plan. Buffers are named after the ONNX node (or tensor) they come
// from, and every call carries its node name in a comment, so the source
// reads like the model. The cuda target's runtime has the cpu target's
// functions and arguments (runtime/cuda/CudaKernels.h), so both targets
// share this emitter; they differ where the host touches tensor memory
// (constants, copies, scalars) and in fused loops, which become kernels.
//
//===----------------------------------------------------------------------===//

#include "codegen/ProgramEmitter.h"
#include "codegen/MemoryPlan.h"

#include "dialects/cleave/CleaveOps.h"
#include "codegen/SourceText.h"
#include "runtime/Npy.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using llvm::formatv;

namespace mlir::cleave {

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

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

/// The ElementwiseBodies.h functor computing `op` per element, or empty
/// when `op` is not elementwise.
std::string elementwiseBody(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([](AddOp) { return "body::Add{}"; })
      .Case([](SubOp) { return "body::Sub{}"; })
      .Case([](MulOp) { return "body::Mul{}"; })
      .Case([](DivOp) { return "body::Div{}"; })
      .Case([](PowOp) { return "body::Pow{}"; })
      .Case([](EqualOp) { return "body::Equal{}"; })
      .Case([](LessOp) { return "body::Less{}"; })
      .Case([](WhereOp) { return "body::Where{}"; })
      .Case([](SqrtOp) { return "body::Sqrt{}"; })
      .Case([](NegOp) { return "body::Neg{}"; })
      .Case([](ErfOp) { return "body::Erf{}"; })
      .Case([](TanhOp) { return "body::Tanh{}"; })
      .Case([](SigmoidOp) { return "body::Sigmoid{}"; })
      .Case([](ReluOp) { return "body::Relu{}"; })
      .Case([](ExpOp) { return "body::Exp{}"; })
      .Case([](LogOp) { return "body::Log{}"; })
      .Case([](CastOp cast) {
        return "body::Cast<" +
               cType(tensorType(cast.getResult()).getElementType()) + ">{}";
      })
      .Default([](Operation *) { return std::string(); });
}

/// Whether `op` can join a fused loop: elementwise, and every operand has
/// the result's shape or a single element (no other broadcasting).
bool isFusible(Operation *op) {
  if (op->getNumResults() != 1 || elementwiseBody(op).empty())
    return false;
  ArrayRef<int64_t> shape = tensorType(op->getResult(0)).getShape();
  return llvm::all_of(op->getOperands(), [&](Value v) {
    return tensorType(v).getShape() == shape ||
           tensorType(v).getNumElements() == 1;
  });
}

/// The first op in the block that reads a result of `op`, if any.
Operation *firstUser(Operation *op) {
  Operation *first = nullptr;
  for (Operation *user : op->getUsers())
    if (!first || user->isBeforeInBlock(first))
      first = user;
  return first;
}

class Emitter {
public:
  Emitter(func::FuncOp func, const EmitOptions &options)
      : func(func), options(options) {
    planFusion(func.getBody().front());
    func.walk([&](DropoutOp op) {
      dropoutNumber.try_emplace(op, dropoutNumber.size());
    });
    func.walk([&](Operation *op) {
      if (isa<RandomUniformOp, RandomNormalOp>(op))
        randomNumber.try_emplace(op, randomNumber.size());
    });
    for (auto &[tail, chain] : fusedGroups)
      for (Operation *op : chain)
        executedAt[op] = tail;
    // All-reduces run asynchronously up to the first use of a result.
    func.walk([&](AllReduceOp op) {
      if (Operation *finish = firstUser(op))
        executedAt[op] = finish;
    });
    // Names the generated code already uses: runtime functions and types,
    // and the C++ keywords an ONNX name could spell.
    for (const char *name : {"gemm",
                             "linearBackwardSgd",
                             "matmul",
                             "broadcastTo",
                             "transpose",
                             "concat",
                             "split",
                             "slice",
                             "sliceGrad",
                             "gather",
                             "gatherGrad",
                             "reduce",
                             "softmax",
                             "softmaxGrad",
                             "layerNorm",
                             "layerNormGrad",
                             "batchNorm",
                             "batchNormGrad",
                             "conv",
                             "convGradInput",
                             "convGradWeight",
                             "maxPool",
                             "maxPoolGrad",
                             "avgPool",
                             "avgPoolGrad",
                             "softmaxCrossEntropy",
                             "softmaxCrossEntropyGrad",
                             "nllLoss",
                             "nllLossGrad",
                             "dropout",
                             "sgdUpdate",
                             "adamwUpdate",
                             "onnxMomentumUpdate",
                             "onnxAdamUpdate",
                             "onnxAdagradUpdate",
                             "lrScheduleFactor",
                             "mapUnary",
                             "mapBinary",
                             "mapTernary",
                             "body",
                             "ctx",
                             "std",
                             "cleave",
                             "Shape",
                             "DType",
                             "Role",
                             "Schedule",
                             "Reduction",
                             "ReduceKind",
                             "main",
                             "program",
                             "kTensors",
                             "trainStep",
                             "launch",
                             "copyN",
                             "fillN",
                             "readScalar",
                             "gemmBias",
                             "GemmEpilogue",
                             "randomUniform",
                             "randomNormal",
                             "writeScalar",
                             "deviceAddress",
                             "synchronize",
                             "cuda",
                             "startAllReduceBucket",
                             "finishAllReduceBucket",
                             "allGatherDim",
                             "reduceScatterDim",
                             "allSliceDim",
                             "writeAxisIndex",
                             "auto",
                             "bool",
                             "break",
                             "case",
                             "char",
                             "class",
                             "const",
                             "default",
                             "delete",
                             "do",
                             "double",
                             "else",
                             "enum",
                             "float",
                             "for",
                             "if",
                             "int",
                             "long",
                             "new",
                             "operator",
                             "private",
                             "public",
                             "return",
                             "short",
                             "signed",
                             "sizeof",
                             "static",
                             "struct",
                             "switch",
                             "template",
                             "this",
                             "union",
                             "unsigned",
                             "void",
                             "while",
                             "asm",
                             "namespace",
                             "using",
                             "true",
                             "false"})
      usedNames.insert(name);
  }

  FailureOr<EmittedProgram> run();

private:
  LogicalResult emitOp(Operation *op);
  /// Waits for the started collectives whose results `op` reads.
  void finishCollectivesUsedBy(Operation *op) {
    for (const std::string &bucket : pendingWaits.lookup(op))
      body << "  finishAllReduceBucket(" << bucket << ");\n";
    pendingWaits.erase(op);
  }
  LogicalResult emitConstant(ConstantOp op);
  /// The send on the source stage, the receive on the destination stage.
  LogicalResult emitSendRecv(SendRecvOp op);
  /// Tensor `name`'s .npy file name (runtime/Npy.h), as a C literal;
  /// fails unless it fits a file system and no other tensor has it.
  FailureOr<std::string> fileNameLiteral(StringRef name);
  /// The file names given so far, to the tensor names they came from.
  llvm::StringMap<std::string> fileNames;
  /// The table of integer inputs whose values the driver checks on
  /// loading (cleave.index_range), and the count of its rows.
  std::pair<std::string, int> indexChecks();
  /// The tensor table (one row per argument, then per graph output) and
  /// the lines that bind the arguments' pointers.
  LogicalResult emitTable(EmittedProgram &program, std::string &table,
                          std::string &argPointers, int &numTensors);
  /// The body of the step of `stage` (-1: the whole step); whether it
  /// reports the loss.
  FailureOr<bool> emitStep(const std::string &argPointers);
  /// Groups chains of fusible elementwise ops whose intermediate values have
  /// one use each (the next op of the chain) into one loop.
  void planFusion(Block &block);
  /// Emits the fused loop of the group ending at `tail`.
  void emitFusedGroup(Operation *tail);
  /// Pairs each input-gradient GEMM dx = dy w with the plain-SGD update of
  /// w that a GEMM of the same dy computes (plan.gemmInUpdate), where no op
  /// between them reads w: both then run at the first, in one pass over w.
  void planBackwardFusion(Block &block);

  /// The expression naming `value`'s buffer, typed.
  std::string ref(Value value) { return names.lookup(value); }
  std::string elementType(Value value) {
    return cType(tensorType(value).getElementType());
  }
  std::string elementBytes(Value value) {
    Type element = tensorType(value).getElementType();
    return std::to_string(
        element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8);
  }
  /// The runtime's AxisGroup literal for mesh axes `axes`.
  std::string axisGroup(ArrayAttr axes) {
    std::string list;
    for (StringAttr axis : axes.getAsRange<StringAttr>())
      list += (list.empty() ? "" : ", ") +
              std::to_string(mesh.getAxisIndex(axis.getValue()));
    return formatv("AxisGroup{{{{{0}}, {1}}", list, axes.size()).str();
  }
  std::string numElements(Value value) {
    return std::to_string(tensorType(value).getNumElements());
  }
  /// Declares the variable of an op result (unless it is an alias).
  void declare(Value value, StringRef base);
  std::string uniqueName(StringRef base) {
    std::string name = cppIdentifier(base);
    std::string candidate = name;
    for (int i = 1; !usedNames.insert(candidate).second; ++i)
      candidate = name + "_" + std::to_string(i);
    return candidate;
  }
  /// A `const int64_t name[] = {...};` declaration; returns the name.
  std::string array(StringRef base, ArrayRef<int64_t> values) {
    std::string name = uniqueName(base);
    body << formatv(
        "  const int64_t {0}[] = {1};\n", name,
        listLiteral(values.empty() ? ArrayRef<int64_t>{0} : values));
    return name;
  }
  void call(Operation *op, const std::string &text) {
    std::string node = nodeName(op->getLoc());
    body << "  " << text << ";";
    if (!node.empty())
      body << "  // " << node;
    body << "\n";
  }

  /// The runtime's `gemm` call for `gemm`'s operands and shape, with the
  /// given scale texts, writing `out`.
  std::string gemmCall(GemmOp gemm, const std::string &alpha,
                       const std::string &beta, const std::string &out) {
    ArrayRef<int64_t> a = tensorType(gemm.getA()).getShape();
    ArrayRef<int64_t> r = tensorType(gemm.getResult()).getShape();
    return formatv("gemm({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9})",
                   gemm.getTransA(), gemm.getTransB(), r[0], r[1],
                   gemm.getTransA() ? a[0] : a[1], alpha, ref(gemm.getA()),
                   ref(gemm.getB()), beta, out)
        .str();
  }

  /// "cpu" or "cuda", for messages.
  const char *targetName() const { return cuda ? "cuda" : "cpu"; }
  /// The function copying n elements between tensors of the target.
  const char *copyFunction() const { return cuda ? "copyN" : "std::copy_n"; }
  /// The host expression reading element 0 of `value` (the loss, a
  /// learning rate, a step counter): on the GPU, a copy that waits.
  std::string scalar(Value value) {
    return cuda ? "readScalar(" + ref(value) + ")" : ref(value) + "[0]";
  }

  func::FuncOp func;
  const EmitOptions &options;
  bool cuda = options.target == Target::Cuda;
  /// The mesh of a distributed program, else null.
  MeshAttr mesh = getModuleMesh(func);
  MemoryPlan plan;
  llvm::DenseMap<Value, std::string> names;
  llvm::StringSet<> usedNames;
  std::string globalsText, bodyText;
  llvm::raw_string_ostream globals{globalsText}, body{bodyText};
  /// Each dropout's number in program order (whatever stage emits it).
  llvm::DenseMap<Operation *, int64_t> dropoutNumber;
  /// Each random op's number in program order.
  llvm::DenseMap<Operation *, int64_t> randomNumber;
  /// Fused chains by their last op; ops folded into a later op's loop.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> fusedGroups;
  llvm::DenseSet<Operation *> fusedAway;
  /// ReLUs that the GEMM before them applies (cuda: cuBLASLt's RELU_BIAS
  /// epilogue).
  llvm::DenseSet<Operation *> reluInGemm;
  /// Input-gradient GEMMs that also apply their weight's plain-SGD update
  /// (cpu: linearBackwardSgd), with that update.
  llvm::DenseMap<Operation *, SgdOp> updateWithInputGradient;
  /// Those updates, which emit nothing where they stand.
  llvm::DenseSet<Operation *> fusedUpdates;
  /// Started all-reduce buckets, by the op that first reads them.
  llvm::DenseMap<Operation *, SmallVector<std::string>> pendingWaits;
  /// Ops whose operands stay live up to a later op (MemoryPlan.h).
  llvm::DenseMap<Operation *, Operation *> executedAt;
  /// Pipeline stages (cleave-pipeline-stages): the mesh axis, the number
  /// of stages (1 when the step is not split) and the stage being emitted
  /// (-1 when not split).
  int64_t pipelineAxis = -1;
  int64_t numStages = 1;
  int64_t stage = -1;
};

void Emitter::planFusion(Block &block) {
  for (Operation &first : block.without_terminator()) {
    if (fusedAway.contains(&first) || fusedGroups.count(&first) ||
        !isFusible(&first))
      continue;
    SmallVector<Operation *> chain{&first};
    while (true) {
      Value value = chain.back()->getResult(0);
      if (!value.hasOneUse())
        break;
      Operation *user = *value.user_begin();
      // A chain is linear: an op joins at most one group.
      if (!isFusible(user) || user->getBlock() != &block ||
          fusedAway.contains(user) || fusedGroups.count(user) ||
          tensorType(user->getResult(0)).getShape() !=
              tensorType(value).getShape() ||
          tensorType(value).getNumElements() == 1)
        break;
      chain.push_back(user);
    }
    if (chain.size() < 2)
      continue;
    for (Operation *op : ArrayRef<Operation *>(chain).drop_back())
      fusedAway.insert(op);
    fusedGroups[chain.back()] = chain;
  }
}

void Emitter::planBackwardFusion(Block &block) {
  fusedUpdates.clear();
  updateWithInputGradient.clear();
  if (cuda)
    return;
  // Where each op runs: a fused op in its group's loop, an all-reduce up to
  // its first reader, a gradient GEMM at its update.
  auto runsAt = [&](Operation *op) {
    if (Operation *at = executedAt.lookup(op))
      return at;
    if (Operation *at = plan.gemmInUpdate.lookup(op))
      return at;
    return op;
  };
  for (auto [updateGemmOp, sgdOp] : plan.gemmInUpdate) {
    auto update = cast<GemmOp>(updateGemmOp);
    auto sgd = cast<SgdOp>(sgdOp);
    Value w = sgd.getParam();
    // The update's gradient dw = dy^T x, unscaled.
    if (!update.getTransA() || update.getTransB() ||
        !update.getAlpha().isExactlyValue(1.0))
      continue;
    Value dy = update.getA();
    for (Operation *user : dy.getUsers()) {
      auto dx = dyn_cast<GemmOp>(user);
      // dx in a buffer of its own (not itself a parameter's update).
      if (!dx || dx == update || dx.getB() != w || dx.getTransA() ||
          dx.getTransB() || dx.getC() ||
          !dx.getAlpha().isExactlyValue(1.0) || !runsOnStage(dx, stage) ||
          dx->getBlock() != sgd->getBlock() || !dx->isBeforeInBlock(sgd) ||
          updateWithInputGradient.count(dx) || fusedUpdates.contains(sgd) ||
          plan.root(dx.getResult()) != dx.getResult())
        continue;
      // The update's x must be complete by then (it runs early), in a
      // buffer.
      Operation *xDef = update.getB().getDefiningOp();
      if (xDef && (xDef->getBlock() != dx->getBlock() ||
                   !runsAt(xDef)->isBeforeInBlock(dx) ||
                   fusedAway.contains(xDef)))
        continue;
      // Nothing that runs from the input gradient to the update may read w
      // (or a view of it), which is updated early.
      bool readsW = false;
      for (Operation &op : block.without_terminator()) {
        Operation *at = runsAt(&op);
        if (&op == dx.getOperation() || &op == sgd.getOperation() ||
            !runsOnStage(&op, stage) || !dx->isBeforeInBlock(at) ||
            !at->isBeforeInBlock(sgd))
          continue;
        for (Value operand : op.getOperands())
          readsW |= plan.root(operand) == plan.root(w);
      }
      if (!readsW) {
        updateWithInputGradient[dx] = sgd;
        fusedUpdates.insert(sgd);
      }
    }
  }
}

void Emitter::emitFusedGroup(Operation *tail) {
  ArrayRef<Operation *> chain = fusedGroups[tail];
  Value out = tail->getResult(0);
  int64_t count = tensorType(out).getNumElements();
  body << "  // fused:";
  for (Operation *op : chain)
    body << " " << nodeName(op->getLoc());
  body << "\n";
  // One kernel on the GPU (the pointers captured by value), one parallel
  // loop on the host.
  if (cuda)
    body << formatv("  launch({0}, [=] __host__ __device__(int64_t i) {{\n",
                    count);
  else
    body << formatv("#pragma omp parallel for schedule(static) if ({0} > "
                    "32768)\n  for (int64_t i = 0; i < {0}; ++i) {{\n",
                    count);
  llvm::DenseMap<Value, std::string> local;
  for (auto [index, op] : llvm::enumerate(chain)) {
    std::string args;
    for (Value operand : op->getOperands()) {
      if (!args.empty())
        args += ", ";
      if (auto it = local.find(operand); it != local.end())
        args += it->second;
      else
        args += ref(operand) +
                (tensorType(operand).getNumElements() == 1 ? "[0]" : "[i]");
    }
    std::string call = elementwiseBody(op) + "(" + args + ")";
    if (op == tail) {
      body << formatv("    {0}[i] = {1};\n", ref(out), call);
    } else {
      std::string name = formatv("v{0}", index).str();
      local[op->getResult(0)] = name;
      body << formatv("    const auto {0} = {1};\n", name, call);
    }
  }
  body << (cuda ? "  });\n" : "  }\n");
}

void Emitter::declare(Value value, StringRef base) {
  Value root = plan.root(value);
  if (root != value) {
    names[value] = names.lookup(root);
    return;
  }
  std::string name = uniqueName(base);
  names[value] = name;
  body << formatv("  auto *{0} = reinterpret_cast<{1} *>(ctx.arena + {2});\n",
                  name, elementType(value), plan.arenaOffset.lookup(value));
}

LogicalResult Emitter::emitConstant(ConstantOp op) {
  // Every pipeline stage's step reads the one global array.
  if (std::string name = ref(op.getResult()); !name.empty()) {
    if (cuda)
      body << formatv("  const {0} *{1} = deviceAddress({1}_data);\n",
                      elementType(op.getResult()), name);
    return success();
  }
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitOpError("has a non-dense value the ")
           << targetName() << " target cannot emit";
  std::string base = nodeName(op.getLoc());
  std::string name = "k" + uniqueName(base.empty() ? "constant" : base);
  std::string type = elementType(op.getResult());
  int64_t count = attr.getNumElements();
  Type element = attr.getElementType();
  // Splats (folding makes them from broadcast constants): zero ones
  // zero-initialized, small ones listed, large non-zero ones (cpu) filled
  // during static initialization.
  constexpr int64_t kListedSplat = 4096;
  bool bigSplat = attr.isSplat() && count > kListedSplat;
  bool zeroSplat = attr.isSplat() && (isa<FloatType>(element)
                                          ? attr.getSplatValue<APFloat>().isZero()
                                          : attr.getSplatValue<APInt>().isZero());
  if (bigSplat && !zeroSplat) {
    if (cuda)
      return op.emitOpError("is a large non-zero splat, which the ")
             << targetName() << " target does not emit yet";
    std::string value =
        isa<FloatType>(element)
            ? floatLiteral(attr.getSplatValue<APFloat>().convertToDouble())
            : std::to_string(attr.getSplatValue<APInt>().getSExtValue());
    globals << formatv("// {0}\nstatic {1} {2}[{3}];\n"
                       "static const bool {2}_filled = (std::fill_n({2}, {3}, "
                       "{1}({4})), true);\n",
                       base, type, name, count, value);
    names[op.getResult()] = name;
    return success();
  }
  // Device code reads a constant from device memory: a __device__ array
  // whose address the step looks up.
  globals << formatv("// {0}\n{1} {2} {3}{4}[{5}] = {{", base,
                     cuda ? "__device__ const" : "static const", type, name,
                     cuda ? "_data" : "", count);
  if (cuda)
    body << formatv("  const {0} *{1} = deviceAddress({1}_data);\n", type,
                    name);
  if (bigSplat) {
    // zero-initialized
  } else if (isa<FloatType>(element)) {
    llvm::interleaveComma(attr.getValues<APFloat>(), globals,
                          [&](const APFloat &v) {
                            globals << floatLiteral(v.convertToDouble());
                          });
  } else if (element.isInteger(1)) {
    llvm::interleaveComma(attr.getValues<bool>(), globals,
                          [&](bool v) { globals << (v ? "true" : "false"); });
  } else {
    llvm::interleaveComma(attr.getValues<APInt>(), globals,
                          [&](const APInt &v) {
                            globals << v.getSExtValue();
                            if (element.isInteger(64))
                              globals << "LL";
                          });
  }
  globals << "};\n";
  names[op.getResult()] = name;
  return success();
}

LogicalResult Emitter::emitSendRecv(SendRecvOp op) {
  std::string group =
      formatv("AxisGroup{{{{{0}}, 1}", mesh.getAxisIndex(op.getAxis()));
  Value value = op.getInput();
  std::string bytes =
      formatv("{0} * {1}", numElements(value), elementBytes(value)).str();
  if (stage == op.getSourceAttr().getInt()) {
    call(op, formatv("sendRecv({0}, nullptr, {1}, {2}, kNoPeer, {3})",
                     ref(value), bytes, op.getDestAttr().getInt(), group));
    return success();
  }
  declare(op.getResult(), nodeName(op.getLoc()).empty()
                              ? std::string("received")
                              : nodeName(op.getLoc()));
  call(op,
       formatv("sendRecv(nullptr, {0}, {1}, kNoPeer, {2}, {3})",
               ref(op.getResult()), bytes, op.getSourceAttr().getInt(), group));
  return success();
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (!runsOnStage(op, stage))
    return success();
  finishCollectivesUsedBy(op);
  if (auto constant = dyn_cast<ConstantOp>(op))
    return emitConstant(constant);
  if (fusedAway.contains(op))
    return success();
  if (auto transfer = dyn_cast<SendRecvOp>(op))
    return emitSendRecv(transfer);
  std::string base = nodeName(op->getLoc());
  if (base.empty())
    base = op->getName().stripDialect().str();
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    declare(result,
            op->getNumResults() > 1 ? base + "_" + std::to_string(i) : base);
  if (fusedGroups.count(op)) {
    emitFusedGroup(op);
    return success();
  }
  if (reluInGemm.contains(op)) {
    body << "  // " << base << ": in the GEMM's epilogue\n";
    return success();
  }
  auto t = [&](Value v) { return ref(v); };
  auto s = [&](Value v) { return shapeLiteral(v); };
  auto n = [&](Value v) { return numElements(v); };
  // Elementwise ops: one broadcasting loop over their shared body.
  if (std::string fn = elementwiseBody(op); !fn.empty()) {
    Value r = op->getResult(0);
    std::string args;
    for (Value v : op->getOperands())
      args += formatv("{0}, {1}, ", t(v), s(v)).str();
    if (op->getNumOperands() == 1)
      call(op, formatv("mapUnary({0}, {1}, {2}, {3})", t(op->getOperand(0)),
                       t(r), n(r), fn));
    else
      call(op, formatv("{0}({1}{2}, {3}, {4})",
                       op->getNumOperands() == 2 ? "mapBinary" : "mapTernary",
                       args, t(r), s(r), fn));
    return success();
  }
  auto window = [&](ArrayRef<int64_t> values, StringRef what) {
    return array(base + "_" + what.str(), values);
  };
  auto nullable = [&](Value v) { return v ? t(v) : std::string("nullptr"); };
  auto reduction = [&](LossReduction r) {
    return formatv("Reduction::{0}",
                   stringifyLossReduction(r) == "none"  ? "None"
                   : stringifyLossReduction(r) == "sum" ? "Sum"
                                                        : "Mean")
        .str();
  };
  auto learningRate = [&](APFloat lr, Value factor) {
    std::string text = floatLiteral(lr.convertToFloat()) + "f";
    return factor ? text + " * " + t(factor) + "[0]" : text;
  };
  // A random op's own seed, else the program's.
  auto randomSeed = [&](IntegerAttr seed) {
    return seed ? formatv("{0}ull", static_cast<uint64_t>(seed.getInt())).str()
                : std::string("ctx.seed");
  };
  auto ignore = [&](IntegerAttr index) {
    return formatv("{0}, {1}", index ? "true" : "false",
                   index ? index.getInt() : 0)
        .str();
  };

  // These ops' runtime kernels compute in float32 only (data movement,
  // casts, elementwise ops and inference-mode Dropout, a copy, are generic
  // over the element type). Their first result and operand are the data.
  auto dropout = dyn_cast<DropoutOp>(op);
  if ((dropout && dropout.getTraining()) ||
      isa<GemmOp, MatmulOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp, SoftmaxOp,
          LogSoftmaxOp, SoftmaxGradOp, LayerNormOp, LayerNormGradOp,
          BatchNormOp, BatchNormGradOp, ConvOp, ConvGradInputOp,
          ConvGradWeightOp, MaxPoolOp, MaxPoolGradOp, AvgPoolOp, AvgPoolGradOp,
          SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp, NllLossOp,
          NllLossGradOp, SliceGradOp, GatherGradOp, SgdOp, AdamwOp, MomentumOp,
          AdamOp, AdagradOp>(op)) {
    SmallVector<Value> data(op->getResults().take_front(1));
    if (op->getNumOperands())
      data.push_back(op->getOperand(0));
    for (Value value : data)
      if (Type element = tensorType(value).getElementType(); !element.isF32())
        return op->emitOpError()
               << "computes in " << element << ", but the " << targetName()
               << " target's kernel for it computes in float32 only; export "
                  "the model in float32 (model.float() before "
                  "torch.onnx.export), and cast integer tensors to float "
                  "before such ops";
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ReshapeOp) {
        body << "  // " << base << ": a view of its input\n";
        return success();
      })
      .Case([&](GemmOp gemm) {
        // A gradient GEMM of a plain SGD update runs there.
        if (plan.gemmInUpdate.count(op))
          return success();
        if (SgdOp sgd = updateWithInputGradient.lookup(op)) {
          // dx = dy w, then w += -lr * dy^T x: one pass over w.
          auto update = cast<GemmOp>(sgd.getGrad().getDefiningOp());
          ArrayRef<int64_t> dyShape = tensorType(gemm.getA()).getShape();
          ArrayRef<int64_t> wShape = tensorType(gemm.getB()).getShape();
          call(op, formatv("linearBackwardSgd({0}, {1}, {2}, {3}, {4}, {5}, "
                           "{6}f, {7})",
                           dyShape[0], wShape[0], wShape[1], t(gemm.getA()),
                           t(sgd.getParam()), t(update.getB()),
                           floatLiteral(-sgd.getLr().convertToFloat()),
                           t(gemm.getResult())));
          return success();
        }
        ArrayRef<int64_t> a = tensorType(gemm.getA()).getShape();
        ArrayRef<int64_t> r = tensorType(gemm.getResult()).getShape();
        int64_t k = gemm.getTransA() ? a[0] : a[1];
        float beta = gemm.getBeta().convertToFloat();
        Value c = gemm.getC();
        // On the cuda target a bias row ([N] or [1, N]) added with beta 1 is
        // cuBLASLt's bias epilogue: one kernel instead of broadcastTo and
        // gemm; with the ReLU that alone reads the result (in place, see
        // MemoryPlan), its RELU_BIAS epilogue.
        if (cuda && c && beta == 1.0f) {
          ArrayRef<int64_t> cShape = tensorType(c).getShape();
          bool biasRow = (cShape.size() == 1 || cShape.size() == 2) &&
                         cShape.back() == r[1] &&
                         (cShape.size() == 1 || cShape[0] == 1);
          if (biasRow) {
            Value result = gemm.getResult();
            auto relu = result.hasOneUse()
                            ? dyn_cast<ReluOp>(*result.user_begin())
                            : ReluOp();
            bool withRelu = relu && !fusedAway.contains(relu) &&
                            !fusedGroups.count(relu) &&
                            runsOnStage(relu, stage) &&
                            plan.root(relu.getResult()) == plan.root(result);
            if (withRelu)
              reluInGemm.insert(relu);
            call(op, formatv("gemmBias({0}, {1}, {2}, {3}, {4}, {5}f, {6}, "
                             "{7}, {8}, {9}, GemmEpilogue::{10})",
                             gemm.getTransA(), gemm.getTransB(), r[0], r[1], k,
                             floatLiteral(gemm.getAlpha().convertToFloat()),
                             t(gemm.getA()), t(gemm.getB()), t(c), t(result),
                             withRelu ? "BiasRelu" : "Bias"));
            return success();
          }
        }
        // (Accumulating into C's own buffer needs no copy.)
        if (!c)
          beta = 0;
        else if (plan.root(gemm.getResult()) != plan.root(c))
          call(op, formatv("broadcastTo({0}, {1}, {2}, {3})", t(c), s(c),
                           t(gemm.getResult()), s(gemm.getResult())));
        call(op, gemmCall(gemm,
                          floatLiteral(gemm.getAlpha().convertToFloat()) + "f",
                          floatLiteral(beta) + "f", t(gemm.getResult())));
        return success();
      })
      .Case([&](MatmulOp matmul) {
        call(op,
             formatv("matmul({0}, {1}, {2}, {3}, {4}, {5})", t(matmul.getLhs()),
                     s(matmul.getLhs()), t(matmul.getRhs()), s(matmul.getRhs()),
                     t(matmul.getResult()), s(matmul.getResult())));
        return success();
      })
      .Case([&](SoftmaxOp softmax) {
        call(op, formatv("softmax({0}, {1}, {2}, false, {3})",
                         t(softmax.getInput()), s(softmax.getInput()),
                         softmax.getAxis(), t(softmax.getResult())));
        return success();
      })
      .Case([&](LogSoftmaxOp softmax) {
        call(op, formatv("softmax({0}, {1}, {2}, true, {3})",
                         t(softmax.getInput()), s(softmax.getInput()),
                         softmax.getAxis(), t(softmax.getResult())));
        return success();
      })
      .Case([&](SoftmaxGradOp grad) {
        call(op, formatv("softmaxGrad({0}, {1}, {2}, {3}, {4}, {5})",
                         t(grad.getOutput()), t(grad.getOutputGrad()),
                         s(grad.getOutput()), grad.getAxis(), grad.getLog(),
                         t(grad.getInputGrad())));
        return success();
      })
      .Case([&](LayerNormOp norm) {
        call(op,
             formatv("layerNorm({0}, {1}, {2}, {3}, {4}, {5}f, {6}, {7}, {8})",
                     t(norm.getInput()), s(norm.getInput()), norm.getAxis(),
                     t(norm.getScale()), nullable(norm.getBias()),
                     floatLiteral(norm.getEpsilon().convertToFloat()),
                     t(norm.getY()), t(norm.getMean()),
                     t(norm.getInvStdDev())));
        return success();
      })
      .Case([&](LayerNormGradOp grad) {
        call(op, formatv("layerNormGrad({0}, {1}, {2}, {3}, {4}, {5}, {6}, "
                         "{7}, {8}, {9})",
                         t(grad.getOutputGrad()), t(grad.getInput()),
                         s(grad.getInput()), grad.getAxis(), t(grad.getScale()),
                         t(grad.getMean()), t(grad.getInvStdDev()),
                         t(grad.getInputGrad()), t(grad.getScaleGrad()),
                         t(grad.getBiasGrad())));
        return success();
      })
      .Case([&](BatchNormOp norm) {
        call(op,
             formatv("batchNorm({0}, {1}, {2}, {3}, {4}, {5}, {6}f, {7}f, "
                     "{8}, {9}, {10}, {11})",
                     t(norm.getInput()), s(norm.getInput()), t(norm.getScale()),
                     t(norm.getBias()), t(norm.getRunningMean()),
                     t(norm.getRunningVar()),
                     floatLiteral(norm.getEpsilon().convertToFloat()),
                     floatLiteral(norm.getMomentum().convertToFloat()),
                     norm.getTraining(), t(norm.getY()),
                     t(norm.getNewRunningMean()), t(norm.getNewRunningVar())));
        return success();
      })
      .Case([&](BatchNormGradOp grad) {
        call(op,
             formatv("batchNormGrad({0}, {1}, {2}, {3}, {4}f, {5}, {6}, {7})",
                     t(grad.getOutputGrad()), t(grad.getInput()),
                     s(grad.getInput()), t(grad.getScale()),
                     floatLiteral(grad.getEpsilon().convertToFloat()),
                     t(grad.getInputGrad()), t(grad.getScaleGrad()),
                     t(grad.getBiasGrad())));
        return success();
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto reduce) {
        const char *kind = isa<ReduceSumOp>(op)    ? "Sum"
                           : isa<ReduceMeanOp>(op) ? "Mean"
                                                   : "Max";
        std::string axes = window(reduce.getAxes(), "axes");
        call(op, formatv("reduce(ReduceKind::{0}, {1}, {2}, {3}, {4}, {5})",
                         kind, t(reduce.getInput()), s(reduce.getInput()), axes,
                         reduce.getAxes().size(), t(reduce.getResult())));
        return success();
      })
      .Case([&](TransposeOp transpose) {
        std::string perm = window(transpose.getPermutation(), "perm");
        call(op,
             formatv("transpose({0}, {1}, {2}, {3})", t(transpose.getInput()),
                     s(transpose.getInput()), perm, t(transpose.getResult())));
        return success();
      })
      .Case([&](BroadcastToOp broadcast) {
        call(op, formatv("broadcastTo({0}, {1}, {2}, {3})",
                         t(broadcast.getInput()), s(broadcast.getInput()),
                         t(broadcast.getResult()), s(broadcast.getResult())));
        return success();
      })
      .Case([&](ConcatOp concat) {
        std::string inputs = uniqueName(base + "_inputs");
        std::string shapes = uniqueName(base + "_shapes");
        body << formatv("  const {0} *{1}[] = {{",
                        elementType(concat.getResult()), inputs);
        llvm::interleaveComma(concat.getInputs(), body,
                              [&](Value v) { body << t(v); });
        body << formatv("};\n  const Shape {0}[] = {{", shapes);
        llvm::interleaveComma(concat.getInputs(), body,
                              [&](Value v) { body << s(v); });
        body << "};\n";
        call(op, formatv("concat({0}, {1}, {2}, {3}, {4})", inputs, shapes,
                         concat.getInputs().size(), concat.getAxis(),
                         t(concat.getResult())));
        return success();
      })
      .Case([&](SplitOp split) {
        std::string outs = uniqueName(base + "_outputs");
        SmallVector<int64_t> sizes;
        body << formatv("  {0} *{1}[] = {{", elementType(split.getInput()),
                        outs);
        llvm::interleaveComma(split.getResults(), body, [&](Value v) {
          body << t(v);
          sizes.push_back(tensorType(v).getDimSize(split.getAxis()));
        });
        body << "};\n";
        std::string sizesName = window(sizes, "sizes");
        call(op, formatv("split({0}, {1}, {2}, {3}, {4}, {5})",
                         t(split.getInput()), s(split.getInput()),
                         split.getAxis(), sizesName, sizes.size(), outs));
        return success();
      })
      .Case([&](SliceOp slice) {
        std::string offsets = window(slice.getOffsets(), "offsets");
        std::string strides = window(slice.getStrides(), "strides");
        call(op, formatv("slice({0}, {1}, {2}, {3}, {4}, {5})",
                         t(slice.getInput()), s(slice.getInput()), offsets,
                         strides, t(slice.getResult()), s(slice.getResult())));
        return success();
      })
      .Case([&](SliceGradOp grad) {
        std::string offsets = window(grad.getOffsets(), "offsets");
        std::string strides = window(grad.getStrides(), "strides");
        call(op,
             formatv("sliceGrad({0}, {1}, {2}, {3}, {4}, {5})",
                     t(grad.getOutputGrad()), s(grad.getOutputGrad()), offsets,
                     strides, t(grad.getInputGrad()), s(grad.getInputGrad())));
        return success();
      })
      .Case([&](GatherOp gather) {
        call(op, formatv("gather({0}, {1}, {2}, {3}, {4}, {5})",
                         t(gather.getData()), s(gather.getData()),
                         t(gather.getIndices()), n(gather.getIndices()),
                         gather.getAxis(), t(gather.getResult())));
        return success();
      })
      .Case([&](GatherGradOp grad) {
        call(op, formatv("gatherGrad({0}, {1}, {2}, {3}, {4}, {5})",
                         t(grad.getOutputGrad()), t(grad.getIndices()),
                         n(grad.getIndices()), grad.getAxis(),
                         t(grad.getDataGrad()), s(grad.getDataGrad())));
        return success();
      })
      .Case([&](ConvOp conv) {
        std::string strides = window(conv.getStrides(), "strides"),
                    pads = window(conv.getPads(), "pads"),
                    dilations = window(conv.getDilations(), "dilations");
        call(op, formatv("conv({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, "
                         "{9}, {10})",
                         t(conv.getInput()), s(conv.getInput()),
                         t(conv.getWeight()), s(conv.getWeight()),
                         nullable(conv.getBias()), strides, pads, dilations,
                         conv.getGroup(), t(conv.getResult()),
                         s(conv.getResult())));
        return success();
      })
      .Case([&](ConvGradInputOp grad) {
        std::string strides = window(grad.getStrides(), "strides"),
                    pads = window(grad.getPads(), "pads"),
                    dilations = window(grad.getDilations(), "dilations");
        call(op,
             formatv("convGradInput({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
                     "{8}, {9})",
                     t(grad.getOutputGrad()), s(grad.getOutputGrad()),
                     t(grad.getWeight()), s(grad.getWeight()), strides, pads,
                     dilations, grad.getGroup(), t(grad.getInputGrad()),
                     s(grad.getInputGrad())));
        return success();
      })
      .Case([&](ConvGradWeightOp grad) {
        std::string strides = window(grad.getStrides(), "strides"),
                    pads = window(grad.getPads(), "pads"),
                    dilations = window(grad.getDilations(), "dilations");
        call(op, formatv("convGradWeight({0}, {1}, {2}, {3}, {4}, {5}, {6}, "
                         "{7}, {8}, {9})",
                         t(grad.getOutputGrad()), s(grad.getOutputGrad()),
                         t(grad.getInput()), s(grad.getInput()), strides, pads,
                         dilations, grad.getGroup(), t(grad.getWeightGrad()),
                         s(grad.getWeightGrad())));
        return success();
      })
      .Case([&](MaxPoolOp pool) {
        std::string kernel = window(pool.getKernelShape(), "kernel"),
                    strides = window(pool.getStrides(), "strides"),
                    pads = window(pool.getPads(), "pads"),
                    dilations = window(pool.getDilations(), "dilations");
        call(op, formatv("maxPool({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
                         t(pool.getInput()), s(pool.getInput()), kernel,
                         strides, pads, dilations, t(pool.getResult()),
                         s(pool.getResult())));
        return success();
      })
      .Case([&](MaxPoolGradOp grad) {
        std::string kernel = window(grad.getKernelShape(), "kernel"),
                    strides = window(grad.getStrides(), "strides"),
                    pads = window(grad.getPads(), "pads"),
                    dilations = window(grad.getDilations(), "dilations");
        // The output gradient's shape is the forward result's.
        call(op, formatv("maxPoolGrad({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
                         "{8})",
                         t(grad.getOutputGrad()), s(grad.getOutputGrad()),
                         t(grad.getInput()), s(grad.getInput()), kernel,
                         strides, pads, dilations, t(grad.getInputGrad())));
        return success();
      })
      .Case([&](AvgPoolOp pool) {
        std::string kernel = window(pool.getKernelShape(), "kernel"),
                    strides = window(pool.getStrides(), "strides"),
                    pads = window(pool.getPads(), "pads");
        call(op, formatv("avgPool({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
                         t(pool.getInput()), s(pool.getInput()), kernel,
                         strides, pads, pool.getCountIncludePad(),
                         t(pool.getResult()), s(pool.getResult())));
        return success();
      })
      .Case([&](AvgPoolGradOp grad) {
        std::string kernel = window(grad.getKernelShape(), "kernel"),
                    strides = window(grad.getStrides(), "strides"),
                    pads = window(grad.getPads(), "pads");
        call(op, formatv("avgPoolGrad({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
                         t(grad.getOutputGrad()), s(grad.getOutputGrad()),
                         kernel, strides, pads, grad.getCountIncludePad(),
                         t(grad.getInputGrad()), s(grad.getInputGrad())));
        return success();
      })
      .Case([&](SoftmaxCrossEntropyOp loss) {
        call(op, formatv("softmaxCrossEntropy({0}, {1}, {2}, {3}, {4}, {5}, "
                         "{6}, {7})",
                         t(loss.getScores()), s(loss.getScores()),
                         t(loss.getLabels()), nullable(loss.getWeights()),
                         reduction(loss.getReduction()),
                         ignore(loss.getIgnoreIndexAttr()), t(loss.getLoss()),
                         t(loss.getLogProb())));
        return success();
      })
      .Case([&](SoftmaxCrossEntropyGradOp grad) {
        call(op, formatv("softmaxCrossEntropyGrad({0}, {1}, {2}, {3}, {4}, "
                         "{5}, {6}, {7})",
                         t(grad.getLossGrad()), t(grad.getLogProb()),
                         s(grad.getLogProb()), t(grad.getLabels()),
                         nullable(grad.getWeights()),
                         reduction(grad.getReduction()),
                         ignore(grad.getIgnoreIndexAttr()),
                         t(grad.getScoresGrad())));
        return success();
      })
      .Case([&](NllLossOp loss) {
        call(op, formatv("nllLoss({0}, {1}, {2}, {3}, {4}, {5}, {6})",
                         t(loss.getInput()), s(loss.getInput()),
                         t(loss.getTarget()), nullable(loss.getWeight()),
                         reduction(loss.getReduction()),
                         ignore(loss.getIgnoreIndexAttr()), t(loss.getLoss())));
        return success();
      })
      .Case([&](NllLossGradOp grad) {
        call(op, formatv("nllLossGrad({0}, {1}, {2}, {3}, {4}, {5}, {6})",
                         t(grad.getLossGrad()), s(grad.getInputGrad()),
                         t(grad.getTarget()), nullable(grad.getWeight()),
                         reduction(grad.getReduction()),
                         ignore(grad.getIgnoreIndexAttr()),
                         t(grad.getInputGrad())));
        return success();
      })
      .Case([&](DropoutOp dropout) -> LogicalResult {
        if (!dropout.getTraining()) {
          call(op, formatv("{0}({1}, {2}, {3})", copyFunction(),
                           t(dropout.getInput()), n(dropout.getInput()),
                           t(dropout.getOutput())));
          call(op,
               formatv("{0}({1}, {2}, true)", cuda ? "fillN" : "std::fill_n",
                       t(dropout.getMask()), n(dropout.getMask())));
          return success();
        }
        // Masks are a pure function of (seed, dropout number, step, index),
        // the same in every run and on every target.
        call(op,
             formatv("dropout({0}, {1}, {2}f, ctx.seed, {3}, ctx.step, {4}, "
                     "{5})",
                     t(dropout.getInput()), n(dropout.getInput()),
                     floatLiteral(dropout.getRatio().convertToFloat()),
                     dropoutNumber.lookup(op), t(dropout.getOutput()),
                     t(dropout.getMask())));
        return success();
      })
      .Case([&](RandomUniformOp random) {
        call(op, formatv("randomUniform({0}, {1}, {2}f, {3}f, {4}, {5}, "
                         "ctx.step)",
                         t(random.getResult()), n(random.getResult()),
                         floatLiteral(random.getLow().convertToFloat()),
                         floatLiteral(random.getHigh().convertToFloat()),
                         randomSeed(random.getSeedAttr()),
                         randomNumber.lookup(op)));
        return success();
      })
      .Case([&](RandomNormalOp random) {
        call(op, formatv("randomNormal({0}, {1}, {2}f, {3}f, {4}, {5}, "
                         "ctx.step)",
                         t(random.getResult()), n(random.getResult()),
                         floatLiteral(random.getMean().convertToFloat()),
                         floatLiteral(random.getScale().convertToFloat()),
                         randomSeed(random.getSeedAttr()),
                         randomNumber.lookup(op)));
        return success();
      })
      .Case([&](LrScheduleOp schedule) {
        StringRef kind = schedule.getSchedule();
        call(op,
             formatv(cuda ? "writeScalar({0}, lrScheduleFactor("
                            "Schedule::{1}, {2}, {3}, {4}f, ctx.step))"
                          : "{0}[0] = lrScheduleFactor(Schedule::{1}, "
                            "{2}, {3}, {4}f, ctx.step)",
                     t(schedule.getFactor()),
                     kind == "cosine"   ? "Cosine"
                     : kind == "linear" ? "Linear"
                                        : "Constant",
                     schedule.getWarmupStepsAttr().getInt(),
                     schedule.getTotalStepsAttr().getInt(),
                     floatLiteral(schedule.getMinFactor().convertToFloat())));
        return success();
      })
      .Case([&](SgdOp sgd) {
        if (fusedUpdates.contains(sgd)) {
          body << "  // " << base
               << ": in the input gradient's linearBackwardSgd\n";
          return success();
        }
        if (Operation *producer = sgd.getGrad().getDefiningOp();
            producer && plan.gemmInUpdate.count(producer)) {
          // param += (-lr * alpha) * op(a) * op(b): the gradient is never
          // stored, and the parameter is read and written once.
          auto gemm = cast<GemmOp>(producer);
          float alpha =
              -sgd.getLr().convertToFloat() * gemm.getAlpha().convertToFloat();
          call(op, gemmCall(gemm, floatLiteral(alpha) + "f", "1.0f",
                            t(sgd.getParam())));
          return success();
        }
        call(op, formatv("sgdUpdate({0}, {1}, {2}, {3}, {4}, {5}f, {6}f, {7}, "
                         "{8}f, ctx.step)",
                         t(sgd.getParam()), t(sgd.getGrad()),
                         nullable(sgd.getMomentumBuffer()), n(sgd.getParam()),
                         learningRate(sgd.getLr(), sgd.getLrFactor()),
                         floatLiteral(sgd.getMomentum().convertToFloat()),
                         floatLiteral(sgd.getDampening().convertToFloat()),
                         sgd.getNesterov(),
                         floatLiteral(sgd.getWeightDecay().convertToFloat())));
        return success();
      })
      .Case([&](AdamwOp adamw) {
        call(op,
             formatv("adamwUpdate({0}, {1}, {2}, {3}, {4}, {5}, {6}f, {7}f, "
                     "{8}f, {9}f, ctx.step)",
                     t(adamw.getParam()), t(adamw.getGrad()),
                     t(adamw.getExpAvg()), t(adamw.getExpAvgSq()),
                     n(adamw.getParam()),
                     learningRate(adamw.getLr(), adamw.getLrFactor()),
                     floatLiteral(adamw.getBeta1().convertToFloat()),
                     floatLiteral(adamw.getBeta2().convertToFloat()),
                     floatLiteral(adamw.getEps().convertToFloat()),
                     floatLiteral(adamw.getWeightDecay().convertToFloat())));
        return success();
      })
      .Case([&](MomentumOp momentum) {
        size_t count = momentum.getParams().size();
        for (size_t i = 0; i < count; ++i)
          call(op,
               formatv(
                   "onnxMomentumUpdate({0}, {1}, {2}, {3}, {4}, "
                   "static_cast<int64_t>({5}), {6}f, {7}f, {8}f, "
                   "{9}, {10}, {11})",
                   t(momentum.getParams()[i]), t(momentum.getGrads()[i]),
                   t(momentum.getVelocities()[i]), n(momentum.getParams()[i]),
                   scalar(momentum.getLr()), scalar(momentum.getStep()),
                   floatLiteral(momentum.getAlpha().convertToFloat()),
                   floatLiteral(momentum.getBeta().convertToFloat()),
                   floatLiteral(momentum.getNormCoefficient().convertToFloat()),
                   momentum.getMode() == MomentumMode::Nesterov,
                   t(momentum.getNewParams()[i]),
                   t(momentum.getNewVelocities()[i])));
        return success();
      })
      .Case([&](AdamOp adam) {
        size_t count = adam.getParams().size();
        for (size_t i = 0; i < count; ++i)
          call(op,
               formatv(
                   "onnxAdamUpdate({0}, {1}, {2}, {3}, {4}, {5}, "
                   "static_cast<int64_t>({6}), {7}f, {8}f, {9}f, "
                   "{10}f, {11}f, {12}, {13}, {14})",
                   t(adam.getParams()[i]), t(adam.getGrads()[i]),
                   t(adam.getFirstMoments()[i]), t(adam.getSecondMoments()[i]),
                   n(adam.getParams()[i]), scalar(adam.getLr()),
                   scalar(adam.getStep()),
                   floatLiteral(adam.getAlpha().convertToFloat()),
                   floatLiteral(adam.getBeta().convertToFloat()),
                   floatLiteral(adam.getEpsilon().convertToFloat()),
                   floatLiteral(adam.getNormCoefficient().convertToFloat()),
                   floatLiteral(adam.getNormCoefficientPost().convertToFloat()),
                   t(adam.getNewParams()[i]), t(adam.getNewFirstMoments()[i]),
                   t(adam.getNewSecondMoments()[i])));
        return success();
      })
      .Case([&](AdagradOp adagrad) {
        size_t count = adagrad.getParams().size();
        for (size_t i = 0; i < count; ++i)
          call(op,
               formatv(
                   "onnxAdagradUpdate({0}, {1}, {2}, {3}, {4}, "
                   "static_cast<int64_t>({5}), {6}f, {7}f, {8}f, "
                   "{9}, {10})",
                   t(adagrad.getParams()[i]), t(adagrad.getGrads()[i]),
                   t(adagrad.getAccumulators()[i]), n(adagrad.getParams()[i]),
                   scalar(adagrad.getLr()), scalar(adagrad.getStep()),
                   floatLiteral(adagrad.getDecayFactor().convertToFloat()),
                   floatLiteral(adagrad.getEpsilon().convertToFloat()),
                   floatLiteral(adagrad.getNormCoefficient().convertToFloat()),
                   t(adagrad.getNewParams()[i]),
                   t(adagrad.getNewAccumulators()[i])));
        return success();
      })
      .Case([&](AllReduceOp allReduce) -> LogicalResult {
        Type element = tensorType(allReduce.getInputs()[0]).getElementType();
        std::string ins, outs, counts;
        for (auto [in, out] :
             llvm::zip(allReduce.getInputs(), allReduce.getResults())) {
          if (tensorType(in).getElementType() != element)
            return op->emitOpError("mixes element types in one bucket");
          ins += (ins.empty() ? "" : ", ") + t(in);
          outs += (outs.empty() ? "" : ", ") + t(out);
          counts += (counts.empty() ? "" : ", ") + n(in);
        }
        // Started here, finished before the first use of a result, so
        // the exchange overlaps the ops in between (the rest of the
        // backward pass, for gradient buckets).
        std::string name = uniqueName(base + "_comm");
        body << formatv("  {{\n    const void *{0}_in[] = {{{1}};\n"
                        "    void *{0}_out[] = {{{2}};\n"
                        "    const int64_t {0}_count[] = {{{3}};\n",
                        name, ins, outs, counts);
        call(op, formatv("  {0} = startAllReduceBucket({0}_in, {0}_out, "
                         "{0}_count, {1}, {2}, {3})",
                         name, allReduce.getInputs().size(), dtypeEnum(element),
                         axisGroup(allReduce.getAxes())));
        body << "  }\n";
        globals << "static int64_t " << name << ";\n";
        pendingWaits[firstUser(op)].push_back(name);
        return success();
      })
      .Case([&](AllGatherOp gather) {
        call(op, formatv("allGatherDim({0}, {1}, {2}, {3}, {4}, {5})",
                         t(gather.getInput()), s(gather.getInput()),
                         gather.getDim(), elementBytes(gather.getInput()),
                         t(gather.getResult()), axisGroup(gather.getAxes())));
        return success();
      })
      .Case([&](ReduceScatterOp scatter) {
        call(op,
             formatv("reduceScatterDim({0}, {1}, {2}, {3}, {4}, {5})",
                     t(scatter.getInput()), s(scatter.getInput()),
                     scatter.getDim(),
                     dtypeEnum(tensorType(scatter.getInput()).getElementType()),
                     t(scatter.getResult()), axisGroup(scatter.getAxes())));
        return success();
      })
      .Case([&](AxisIndexOp index) {
        call(op, formatv("writeAxisIndex({0}, {1})", t(index.getResult()),
                         axisGroup(index.getAxes())));
        return success();
      })
      .Case([&](AllSliceOp slice) {
        call(op, formatv("allSliceDim({0}, {1}, {2}, {3}, {4}, {5})",
                         t(slice.getInput()), s(slice.getInput()),
                         slice.getDim(), elementBytes(slice.getInput()),
                         t(slice.getResult()), axisGroup(slice.getAxes())));
        return success();
      })
      .Default([&](Operation *) {
        return op->emitOpError()
               << "is not supported by the " << targetName() << " target yet";
      });
}

LogicalResult Emitter::emitTable(EmittedProgram &program, std::string &table,
                                 std::string &argPointers, int &numTensors) {
  Block &block = func.getBody().front();
  llvm::raw_string_ostream tableOs(table);
  llvm::raw_string_ostream pointersOs(argPointers);
  // Parameters and state share checkpoint and dump directories, a file
  // each: two of one name would overwrite each other.
  llvm::StringMap<StringRef> persistentRoles;
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto attrName = [&](StringRef kind) {
      auto attr = func.getArgAttrOfType<StringAttr>(i, kind);
      return attr ? attr.getValue() : StringRef();
    };
    StringRef role, name;
    if (!(name = attrName(CleaveDialect::kInputAttrName)).empty())
      role = "Input";
    else if (!(name = attrName(CleaveDialect::kParamAttrName)).empty())
      role = "Param";
    else if (!(name = attrName(CleaveDialect::kStateAttrName)).empty())
      role = "State";
    else if (func.getArgAttr(i, CleaveDialect::kStepAttrName)) {
      role = "Step";
      name = "step";
    } else {
      return func.emitError() << "argument #" << i
                              << " is neither an input, a parameter, a "
                                 "state nor the step counter";
    }
    FailureOr<std::string> file = fileNameLiteral(name);
    if (failed(file))
      return failure();
    if (role == "Param" || role == "State") {
      auto [it, inserted] = persistentRoles.try_emplace(name, role);
      if (!inserted)
        return func.emitError()
               << "two tensors are named '" << name << "' (a "
               << (it->second == "Param" ? "parameter" : "training state")
               << " and a "
               << (role == "Param" ? "parameter" : "training state")
               << ", such as an optimizer state named after its parameter); "
                  "the program would mix them up: rename the parameter";
    }
    std::string element = cType(tensorType(arg).getElementType());
    std::string dtype = dtypeEnum(tensorType(arg).getElementType());
    if (dtype.empty())
      return func.emitError()
             << "argument '" << name << "' has element type "
             << tensorType(arg).getElementType() << ", which the "
             << targetName() << " target does not support";
    // Split tensors: the table holds the local block's shape and the
    // sharding; the embedded initial value is the whole tensor.
    std::string sharding;
    RankedTensorType globalType = tensorType(arg);
    if (auto attr = func.getArgAttrOfType<ShardingAttr>(
            i, CleaveDialect::kShardingAttrName);
        attr && mesh && !attr.isFullyReplicated()) {
      std::string text;
      SmallVector<int64_t> shape(globalType.getShape());
      for (int64_t d = 0; d < globalType.getRank(); ++d) {
        SmallVector<StringAttr> axes = attr.getDimAxes(d);
        shape[d] *= mesh.getGroupSize(axes);
        std::string dim = axes.empty() ? "_" : "";
        for (StringAttr axis : axes)
          dim += (dim.empty() ? "" : ",") + axis.getValue().str();
        if (axes.size() > 1)
          dim = "{" + dim + "}";
        text += (d ? "," : "") + dim;
      }
      sharding = cppStringLiteral("[" + text + "]");
      globalType = RankedTensorType::get(shape, globalType.getElementType());
    }
    int64_t offset = -1;
    bool zeros = func.getArgAttr(i, CleaveDialect::kInitAttrName) != nullptr;
    if ((role == "Param" || role == "State") && !zeros) {
      offset = program.embeddedBytes;
      int64_t bytes = tensorBytes(globalType);
      program.embedded.push_back({name.str(), offset, bytes});
      program.embeddedBytes += (bytes + 63) / 64 * 64;
    }
    if (role == "Param" || role == "State")
      program.persistentBytes += tensorBytes(arg.getType());
    // Parameters and state of a pipeline stage live on its ranks only.
    std::string where;
    if (auto at = func.getArgAttrOfType<IntegerAttr>(
            i, CleaveDialect::kStageAttrName))
      where = formatv(", {0}, {1}", sharding.empty() ? "nullptr" : sharding,
                      at.getInt());
    else if (!sharding.empty())
      where = ", " + sharding;
    tableOs << formatv("    {{{0}, {1}, {2}, {3}, Role::{4}, {5}{6}},\n",
                       cppStringLiteral(name), *file, dtype, shapeLiteral(arg),
                       role, offset, where);
    std::string var = uniqueName(name);
    names[arg] = var;
    pointersOs << formatv(
        "  auto *{0} = static_cast<{1} *>(ctx.tensors[{2}]);\n", var, element,
        i);
  }

  // Graph outputs follow the arguments.
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  numTensors = block.getNumArguments();
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto output =
        func.getResultAttrOfType<StringAttr>(i, CleaveDialect::kOutputAttrName);
    if (!output)
      continue;
    FailureOr<std::string> file = fileNameLiteral(output.getValue());
    if (failed(file))
      return failure();
    std::string dtype = dtypeEnum(tensorType(value).getElementType());
    if (dtype.empty())
      return func.emitError()
             << "output '" << output.getValue() << "' has element type "
             << tensorType(value).getElementType() << ", which the "
             << targetName() << " target does not support";
    std::string where;
    if (auto at = func.getResultAttrOfType<IntegerAttr>(
            i, CleaveDialect::kStageAttrName);
        at && numStages > 1)
      where = formatv(", nullptr, {0}", at.getInt());
    tableOs << formatv("    {{{0}, {1}, {2}, {3}, Role::Output, -1{4}},\n",
                       cppStringLiteral(output.getValue()), *file, dtype,
                       shapeLiteral(value), where);
    ++numTensors;
  }
  return success();
}

FailureOr<std::string> Emitter::fileNameLiteral(StringRef name) {
  std::string file = ::cleave::rt::npyFileName(name.str());
  if (file.size() > 255)
    return func.emitError()
           << "tensor '" << cppCommentText(name.take_front(40))
           << "...' has a name of " << name.size()
           << " bytes; its .npy file in data, checkpoint and dump directories "
              "would exceed the 255 bytes file systems allow: rename it";
  // npyFileName is injective, so only one name can own a file; the same
  // name may appear twice (a graph output that is also an input).
  auto [it, inserted] = fileNames.try_emplace(file, name.str());
  if (!inserted && it->second != name)
    return func.emitError() << "tensors '" << cppCommentText(it->second)
                            << "' and '" << cppCommentText(name)
                            << "' would share the file '" << cppCommentText(file)
                            << "' in data, checkpoint and dump directories: "
                               "rename one";
  return cppStringLiteral(file);
}

std::pair<std::string, int> Emitter::indexChecks() {
  std::string rows;
  int count = 0;
  for (BlockArgument arg : func.getArguments()) {
    auto range = func.getArgAttrOfType<DictionaryAttr>(
        arg.getArgNumber(), CleaveDialect::kIndexRangeAttrName);
    if (!range)
      continue;
    auto field = [&](StringRef name) {
      auto value = range.getAs<IntegerAttr>(name);
      return value ? value.getInt() : 0;
    };
    auto use = range.getAs<StringAttr>("use");
    rows += formatv("    {{{0}, {1}, {2}, {3}, {4}, {5}},\n",
                    arg.getArgNumber(), field("low"), field("high"),
                    range.get("ignore") ? "true" : "false", field("ignore"),
                    cppStringLiteral(use ? use.getValue() : "an index"))
                .str();
    ++count;
  }
  if (!count)
    return {"", 0};
  return {"// Labels and indices the driver checks as it loads the data.\n"
          "static const IndexInputCheck kIndexChecks[] = {\n" +
              rows + "};\n\n",
          count};
}

FailureOr<bool> Emitter::emitStep(const std::string &argPointers) {
  Block &block = func.getBody().front();
  plan = planMemory(func, executedAt, stage);
  planBackwardFusion(block);
  pendingWaits.clear();
  body << argPointers;
  for (Operation &op : block.without_terminator())
    if (failed(emitOp(&op)))
      return failure();

  // Results: the loss is reported; updates land in their tensors; graph
  // outputs are copied to output tensors (for --dump-outputs).
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  finishCollectivesUsedBy(ret);
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
                      copyFunction(), ref(value), numElements(value),
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
      body << formatv("  {0}({1}, {2}, {3});  // update {4}\n", copyFunction(),
                      ref(value), numElements(value), ref(arg),
                      cppCommentText(target.getValue()));
  }

  return haveLoss;
}

FailureOr<EmittedProgram> Emitter::run() {
  EmittedProgram program;
  if (auto axis = func->getParentOfType<ModuleOp>()->getAttrOfType<StringAttr>(
          CleaveDialect::kPipelineAttrName);
      axis && mesh) {
    pipelineAxis = mesh.getAxisIndex(axis.getValue());
    numStages = mesh.getAxisSizes()[pipelineAxis];
  }

  // The tensor table: one row per argument, then per graph output.
  std::string table, argPointers;
  int numTensors = 0;
  if (failed(emitTable(program, table, argPointers, numTensors)))
    return failure();

  // The step; a program split into pipeline stages has one per stage, and
  // each rank runs its stage's.
  std::string steps;
  bool haveLoss = false;
  int64_t lossStage = 0, arenaBytes = 0;
  for (int64_t s = 0; s < numStages; ++s) {
    stage = numStages > 1 ? s : -1;
    // Values get names anew in each stage's function; arguments and
    // constants keep theirs.
    llvm::DenseMap<Value, std::string> shared;
    for (auto &[value, name] : names)
      if (isa<BlockArgument>(value) || isa<ConstantOp>(value.getDefiningOp()))
        shared[value] = name;
    names = std::move(shared);
    bodyText.clear();
    FailureOr<bool> reportsLoss = emitStep(argPointers);
    if (failed(reportsLoss))
      return failure();
    if (*reportsLoss)
      lossStage = s;
    haveLoss |= *reportsLoss;
    arenaBytes = std::max(arenaBytes, plan.arenaBytes);
    std::string name =
        numStages > 1 ? formatv("trainStepOfStage{0}", s).str() : "trainStep";
    steps += "static void " + name + "(StepContext &ctx) {\n" + bodyText +
             (cuda ? "  synchronize();\n" : "") + "}\n\n";
  }
  if (numStages > 1) {
    steps += "// Each rank runs the stage of its coordinate along the "
             "pipeline axis.\nstatic void trainStep(StepContext &ctx) {\n"
             "  switch (meshCoord(" +
             std::to_string(pipelineAxis) + ")) {\n";
    for (int64_t s = 0; s < numStages; ++s)
      steps += formatv("  case {0}:\n    return trainStepOfStage{0}(ctx);\n", s)
                   .str();
    steps += "  }\n}\n\n";
  }

  std::string meshText;
  if (mesh) {
    std::string names, sizes;
    for (auto [name, size] :
         llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes())) {
      names += (names.empty() ? "" : ", ") + cppStringLiteral(name.getValue());
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(size);
    }
    meshText =
        formatv("  // The device mesh: run under mpirun -np {0}.\n"
                "  static const char *const kMeshAxes[] = {{{1}};\n"
                "  static const int64_t kMeshSizes[] = {{{2}};\n"
                "  program.mesh = MeshSpec{{{3}, kMeshAxes, "
                "kMeshSizes};\n",
                mesh.getNumRanks(), names, sizes, mesh.getAxisNames().size())
            .str();
  }
  if (numStages > 1)
    meshText += formatv("  // The loss is computed by stage {0}.\n"
                        "  program.pipeline = PipelineSpec{{{1}, {0}};\n",
                        lossStage, pipelineAxis)
                    .str();
  auto [checksText, numChecks] = indexChecks();
  program.arenaBytes = arenaBytes;
  program.modelOffset = program.embeddedBytes;
  llvm::raw_string_ostream os(program.source);
  os << "// Generated by cleave from " << cppCommentText(options.modelName)
     << ". Do not edit: recompile the model instead.\n"
     << "//\n// The " << (haveLoss ? "training" : "inference") << " step of @"
     << cppCommentText(func.getSymName()) << " for the " << targetName()
     << " target: one runtime call per op, each commented with its ONNX "
        "node.\n"
     << "// Scratch memory (static plan"
     << (numStages > 1 ? ", largest stage" : "") << "): " << arenaBytes
     << " bytes; parameters and state: " << program.persistentBytes
     << " bytes.\n\n";
  if (cuda)
    os << "#include \"runtime/cuda/CudaCollectives.h\"\n"
       << "#include \"runtime/cuda/CudaElementwise.cuh\"\n"
       << "#include \"runtime/cuda/CudaKernels.h\"\n"
       << "#include \"runtime/cuda/CudaSupport.h\"\n";
  else
    os << "#include \"runtime/CollectiveKernels.h\"\n"
       << "#include \"runtime/Collectives.h\"\n"
       << "#include \"runtime/Elementwise.h\"\n"
       << "#include \"runtime/Kernels.h\"\n";
  os << "#include \"runtime/ElementwiseBodies.h\"\n"
     << "#include \"runtime/Program.h\"\n"
     << "#include \"runtime/Schedule.h\"\n\n"
     << "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n\n"
     << "using namespace cleave::rt;\n"
     << (cuda ? "using namespace cleave::rt::cuda;\n" : "")
     << "namespace body = cleave::body;\n\n"
     << "// The initial parameter values, then the ONNX model, embedded at "
        "link time.\n"
     << "extern \"C\" const char cleave_initial_values[];\n"
     << "asm(\".section .rodata\\n.balign 64\\n"
     << ".globl cleave_initial_values\\ncleave_initial_values:\\n"
     << ".incbin \\\"" << kInitialValuesFile << "\\\"\\n"
     << ".byte 0\\n.previous\\n\");\n\n"
     << globalsText << "\n"
     << "static const TensorSpec kTensors[] = {\n"
     << table << "};\n\n"
     << checksText << steps << "int main(int argc, char **argv) {\n"
     << "  Program program{" << cppStringLiteral(options.modelName)
     << ", kTensors, " << numTensors << ", " << arenaBytes
     << ", cleave_initial_values, " << program.embeddedBytes
     << ", trainStep, /*training=*/" << (haveLoss ? "true" : "false")
     << ", /*model=*/cleave_initial_values + " << program.modelOffset << ", "
     << options.modelBytes << "};\n"
     << meshText
     << (numChecks ? formatv("  program.indexChecks = kIndexChecks;\n"
                             "  program.numIndexChecks = {0};\n",
                             numChecks)
                         .str()
                   : "")
     << (cuda ? formatv("  program.device = &cudaDeviceHooks();\n"
                        "  program.kernelScratchBytes = {0};\n",
                        kernelScratchBytes(func))
                    .str()
              : "")
     << "  return runProgram(program, argc, argv);\n}\n";
  return program;
}

} // namespace

FailureOr<EmittedProgram> emitProgram(func::FuncOp func,
                                      const EmitOptions &options) {
  return Emitter(func, options).run();
}

} // namespace mlir::cleave
