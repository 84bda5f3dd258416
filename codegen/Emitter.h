//===- Emitter.h - the state of one program's emission ----------*- C++ -*-===//
//
// One Emitter per emitted function: the memory and fusion plans, the names
// of buffers, and the text emitted so far. `emitOp` emits the prologue every
// op shares (its stage, collectives to finish, result buffers, fused loops)
// and dispatches to one `emitOperation` overload per op, defined in the
// Emit<Family>.cpp file of its family; the families mirror
// frontend/Import<Family>.cpp and runtime/Kernels<Family>.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_CODEGEN_EMITTER_H
#define CLEAVE_CODEGEN_EMITTER_H

#include "codegen/CppNames.h"
#include "codegen/FusionPlan.h"
#include "codegen/MemoryPlan.h"
#include "codegen/ProgramEmitter.h"
#include "codegen/StepPhases.h"
#include "codegen/TargetTraits.h"
#include "dialects/cleave/CleaveOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <utility>

namespace mlir::cleave::codegen {

inline RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The C++ element type of a tensor, or empty.
std::string cType(Type element);
/// The runtime's DType enumerator for `element`, or empty.
std::string dtypeEnum(Type element);
/// `Shape{d0, d1, ...}` of `value`'s static shape.
std::string shapeLiteral(Value value);
/// `{v0, v1, ...}`.
std::string listLiteral(ArrayRef<int64_t> values);
/// The ONNX node name in a location, if any, fit for a comment.
std::string nodeName(Location loc);
/// A C++ literal of `value` (INFINITY and NAN spelled out).
std::string floatLiteral(double value);
/// The ElementwiseBodies.h functor computing `op` per element, or empty
/// when `op` is not elementwise (EmitElementwise.cpp).
std::string elementwiseBody(Operation *op);

class Emitter {
public:
  Emitter(func::FuncOp func, const EmitOptions &options);

  /// The whole program (ProgramEmitter.cpp).
  FailureOr<EmittedProgram> run();

private:
  //===--------------------------------------------------------------------===//
  // The step (Emitter.cpp)
  //===--------------------------------------------------------------------===//

  /// The body of the step of `stage` (-1: the whole step); whether it
  /// reports the loss.
  FailureOr<bool> emitStep(const std::string &argPointers);
  /// The prologue every op shares, then its family's emitOperation.
  LogicalResult emitOp(Operation *op);
  /// The memory plan's entry if `op` takes rows of an input (a view).
  auto isInputRows(Operation *op) const {
    return op->getNumResults() == 1 ? plan.rowsOfInput.find(op->getResult(0))
                                    : plan.rowsOfInput.end();
  }
  /// Waits for the started collectives whose results `op` reads.
  void finishCollectivesUsedBy(Operation *op);
  /// Declares the variable of an op result (unless it is an alias).
  void declare(Value value, StringRef base);

  //===--------------------------------------------------------------------===//
  // Parts of the step (EmitParts.cpp): the step's ops are emitted as
  // functions of at most 16 ops, one function for parts that print alike
  // (every micro-batch's pass through a stage), reading buffers, collective
  // handles and trace rows through tables their calls pass, and each
  // stage's step is a loop over a table of those calls.
  //===--------------------------------------------------------------------===//

  /// The part being emitted: its names, its slots and the call's values.
  struct Part {
    CppNames names;
    /// The part's names of values (its own and those read from slots).
    llvm::DenseMap<Value, std::string> local;
    /// The part's names of collective handles (globals read from slots).
    llvm::StringMap<std::string> handles;
    /// The call's slot codes (runtime/Program.h's resolveSlots), and the
    /// lines binding them.
    std::vector<int64_t> codes;
    std::string bindings;
    /// The trace rows the part's rows[k] stand for.
    std::vector<int> rows;
    llvm::DenseMap<int, int> rowIndex;
  };
  /// Emits `ops` as a part function (a new one unless an earlier part
  /// printed the same) and adds its call for `microbatch` (-1: none),
  /// commented with `what`, to the stage's tables.
  LogicalResult emitPart(ArrayRef<Operation *> ops, int64_t microbatch,
                         StringRef what);
  /// Splits the ops of `block` run on the stage into parts and emits them,
  /// the tables of their calls, and the step's loop over the calls.
  LogicalResult emitParts(Block &block);
  /// A new slot of code `code`, bound to a variable of the part named
  /// after `base` by the line `declaration` ({0}: the name, {1}: the
  /// pointer); returns the name.
  std::string bindSlot(int64_t code, StringRef base, const char *declaration);
  /// The slot code of `expression` in the step's `refs`.
  int64_t refCode(const std::string &expression);
  /// The buffer of `value` in the arena, as an expression, for a value
  /// with no variable in scope (one a part declared).
  std::string arenaExpression(Value value);
  /// The expression naming collective handle `handle` (a global).
  std::string handleRef(const std::string &handle);
  /// The expression naming the runtime's copy of the live taps of weight
  /// `weight` (a global CroppedWeight), or "" where it has none
  /// (BackwardFusion::croppedWeights).
  std::string croppedWeightRef(Value weight);
  /// The expression naming the staging buffer the cpu runtime keeps for
  /// collective `op` (a global CollectiveBuffer, runtime/CollectiveBuffers.h).
  std::string collectiveStagingRef(Operation *op);
  /// The expression naming global `global` of C++ type `type`: the global
  /// itself, in a part a reference bound through the step's refs.
  std::string globalRef(const std::string &global, StringRef base,
                        StringRef type);
  /// The expression of trace row `row`.
  std::string rowRef(int row);
  /// The expression of the micro-batch trace slices record.
  const char *traceMicrobatch() const { return part ? "microbatch" : "-1"; }
  /// emitOp after the prologue of waits, constants and fused-away ops.
  LogicalResult emitOpCalls(Operation *op);
  /// Whether `op` makes no call where it stands, another op's call doing
  /// its work (a gradient GEMM in its update, an update fused into its
  /// gradient's call): no trace slice.
  bool runsInAnotherCall(Operation *op) const;

  //===--------------------------------------------------------------------===//
  // Trace points (EmitTrace.cpp, runtime/Trace.h)
  //===--------------------------------------------------------------------===//

  /// Adds `op`'s row to the trace table (`kind` overrides its op name);
  /// returns the row.
  int traceRow(Operation *op, StringRef kind = "");
  /// The expression of the bytes this rank sends in `op` (a collective or
  /// send/recv), "-1" for other ops.
  std::string traceBytes(Operation *op);
  /// `static const TraceOp kTraceOps[]` and its row count.
  std::pair<std::string, int> traceTable() const;

  //===--------------------------------------------------------------------===//
  // The tensor table (TensorTable.cpp)
  //===--------------------------------------------------------------------===//

  /// The tensor table (one row per argument, then per graph output) and
  /// the lines that bind the arguments' pointers.
  LogicalResult emitTable(EmittedProgram &program, std::string &table,
                          std::string &argPointers, int &numTensors);
  /// Tensor `name`'s .npy file name (runtime/Npy.h), as a C literal;
  /// fails unless it fits a file system and no other tensor has it.
  FailureOr<std::string> fileNameLiteral(StringRef name);
  /// The table of integer inputs whose values the driver checks on
  /// loading (cleave.index_range), and the count of its rows.
  std::pair<std::string, int> indexChecks();

  //===--------------------------------------------------------------------===//
  // One emitOperation per op, by family
  //===--------------------------------------------------------------------===//

  // EmitElementwise.cpp (runtime/Elementwise.h, KernelsReduction.cpp)
  /// One broadcasting loop over the op's body.
  LogicalResult emitElementwise(Operation *op, const std::string &fn);
  /// The fused loop of the group ending at `tail`.
  void emitFusedGroup(Operation *tail);
  LogicalResult emitOperation(ReduceSumOp op);
  LogicalResult emitOperation(ReduceMeanOp op);
  LogicalResult emitOperation(ReduceMaxOp op);
  LogicalResult emitReduction(Operation *op, const char *kind, Value input,
                              ArrayRef<int64_t> axes, Value result);

  // EmitLinalg.cpp
  LogicalResult emitOperation(GemmOp gemm);
  LogicalResult emitOperation(MatmulOp matmul);
  /// The cpu target's matmulStrided for `matmul`, at `at` (the matmul, or
  /// the transpose of its result that it writes; planStridedMatmuls).
  void emitStridedMatmul(MatmulOp matmul, Operation *at);
  /// The runtime's `gemm` call for `gemm`'s operands and shape, with the
  /// given scale texts, writing `out`.
  std::string gemmCall(GemmOp gemm, const std::string &alpha,
                       const std::string &beta, const std::string &out);

  // EmitNormalization.cpp
  LogicalResult emitOperation(SoftmaxOp softmax);
  LogicalResult emitOperation(LogSoftmaxOp softmax);
  LogicalResult emitOperation(SoftmaxGradOp grad);
  /// The softmax (or its gradient) of `fused`, with attention's scale and
  /// mask, at `at` (FusionPlan::softmaxAt).
  LogicalResult emitFusedSoftmax(Operation *at, const SoftmaxFusion &fused);
  LogicalResult emitOperation(LayerNormOp norm);
  LogicalResult emitOperation(LayerNormGradOp grad);
  LogicalResult emitOperation(BatchNormOp norm);
  LogicalResult emitOperation(BatchNormGradOp grad);
  LogicalResult emitOperation(BatchNormSumOp sum);
  LogicalResult emitOperation(BatchNormSquaredDeviationSumOp sum);
  LogicalResult emitOperation(BatchNormGradSumsOp sums);
  LogicalResult emitOperation(BatchNormGradFromSumsOp grad);

  // EmitDataMovement.cpp
  LogicalResult emitConstant(ConstantOp op);
  LogicalResult emitOperation(ReshapeOp reshape);
  LogicalResult emitOperation(TransposeOp transpose);
  LogicalResult emitOperation(BroadcastToOp broadcast);
  LogicalResult emitOperation(ConcatOp concat);
  LogicalResult emitOperation(SplitOp split);
  LogicalResult emitOperation(SliceOp slice);
  LogicalResult emitOperation(SliceGradOp grad);
  LogicalResult emitOperation(GatherOp gather);
  LogicalResult emitOperation(GatherGradOp grad);

  // EmitConvolution.cpp
  LogicalResult emitOperation(ConvOp conv);
  LogicalResult emitOperation(ConvGradInputOp grad);
  LogicalResult emitOperation(ConvGradWeightOp grad);
  LogicalResult emitOperation(MaxPoolOp pool);
  LogicalResult emitOperation(MaxPoolGradOp grad);
  LogicalResult emitOperation(AvgPoolOp pool);
  LogicalResult emitOperation(AvgPoolGradOp grad);

  // EmitLoss.cpp
  LogicalResult emitOperation(SoftmaxCrossEntropyOp loss);
  LogicalResult emitOperation(SoftmaxCrossEntropyGradOp grad);
  LogicalResult emitOperation(NllLossOp loss);
  LogicalResult emitOperation(NllLossGradOp grad);

  // EmitTraining.cpp
  LogicalResult emitOperation(DropoutOp dropout);
  LogicalResult emitOperation(RandomUniformOp random);
  LogicalResult emitOperation(RandomNormalOp random);
  LogicalResult emitOperation(LrScheduleOp schedule);
  LogicalResult emitOperation(SgdOp sgd);
  LogicalResult emitOperation(AdamwOp adamw);
  LogicalResult emitOperation(MomentumOp momentum);
  LogicalResult emitOperation(AdamOp adam);
  LogicalResult emitOperation(AdagradOp adagrad);
  /// `lr`, times element 0 of `factor` (a schedule's) when there is one.
  std::string learningRate(APFloat lr, Value factor);
  /// An SGD update's learning rate, momentum, dampening, Nesterov flag,
  /// weight decay and step, as the runtime's SGD calls end.
  std::string sgdOptions(SgdOp sgd);

  // EmitCollectives.cpp
  LogicalResult emitOperation(AllReduceOp allReduce);
  LogicalResult emitOperation(AllGatherOp gather);
  LogicalResult emitOperation(ReduceScatterOp scatter);
  LogicalResult emitOperation(AxisIndexOp index);
  LogicalResult emitOperation(AllSliceOp slice);
  /// The send on the source stage, the receive on the destination stage.
  LogicalResult emitOperation(SendRecvOp op);
  /// A new global collective handle (an int64_t) named after `base`.
  std::string globalHandle(const std::string &base);
  /// The runtime's AxisGroup literal for mesh axes `axes`.
  std::string axisGroup(ArrayAttr axes);
  /// Whether this stage's step makes no call between `op` and the first
  /// reader of its results (constants, views and ops fused into a later
  /// loop make none).
  bool readAtOnce(Operation *op);

  //===--------------------------------------------------------------------===//
  // Helpers for the families
  //===--------------------------------------------------------------------===//

  /// The expression naming `value`'s buffer, typed (EmitParts.cpp).
  std::string ref(Value value);
  /// ref(value), or `nullptr` for an absent optional operand.
  std::string nullable(Value value) {
    return value ? ref(value) : std::string("nullptr");
  }
  std::string elementType(Value value) {
    return cType(tensorType(value).getElementType());
  }
  std::string elementBytes(Value value) {
    Type element = tensorType(value).getElementType();
    return std::to_string(
        element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8);
  }
  std::string numElements(Value value) {
    return std::to_string(tensorType(value).getNumElements());
  }
  /// The base of the names of `op`'s variables: its ONNX node name, else
  /// its mnemonic.
  std::string baseName(Operation *op);
  /// The base of the name of `result`: its op's, suffixed with its number
  /// when the op has several (`split_0`).
  std::string baseName(OpResult result);
  /// A new local name (the part's while one is emitted).
  std::string uniqueName(StringRef base) {
    return part ? part->names.unique(base) : cppNames.unique(base);
  }
  /// A `const int64_t name[] = {...};` declaration; returns the name.
  std::string array(StringRef base, ArrayRef<int64_t> values);
  /// array() named after `op` and `what` (`conv1_strides`).
  std::string window(Operation *op, ArrayRef<int64_t> values, StringRef what) {
    return array(baseName(op) + "_" + what.str(), values);
  }
  /// Emits `text;`, commented with `op`'s node name.
  void call(Operation *op, const std::string &text);

  /// The host expression reading element 0 of `value` (the loss, a
  /// learning rate, a step counter; TargetTraits::readScalar).
  std::string scalar(Value value) {
    return llvm::formatv(traits.readScalar, ref(value)).str();
  }

  //===--------------------------------------------------------------------===//
  // State
  //===--------------------------------------------------------------------===//

  func::FuncOp func;
  const EmitOptions &options;
  /// What differs between the targets (TargetTraits.h).
  const TargetTraits &traits = TargetTraits::of(options.target);
  /// Fused loops run as kernels (EmitElementwise.cpp).
  bool cuda = options.target == Target::Cuda;
  /// The mesh of a distributed program, else null.
  MeshAttr mesh = getModuleMesh(func);
  FusionPlan fusion;
  /// Planned anew for each pipeline stage.
  MemoryPlan plan;
  BackwardFusion backward;
  CppNames cppNames;
  /// The step function's names of values (arguments, constants, ops
  /// emitted outside parts).
  llvm::DenseMap<Value, std::string> names;
  /// The part being emitted, if any; the part functions so far by their
  /// text (after the name), and their definitions.
  std::optional<Part> part;
  llvm::StringMap<std::string> partFunctions;
  std::string partsText;
  /// The stage's `refs` (the expressions of its entries), and the slot
  /// codes and trace rows of its parts' calls.
  llvm::StringMap<int64_t> refIndex;
  std::vector<std::string> refs;
  std::vector<int64_t> stageCodes;
  std::vector<int> stageRows;
  /// Where in stageRows each sequence of rows a call passed starts.
  std::map<std::vector<int>, size_t> rowSequences;
  /// The stage's calls of parts (PartCall initializers).
  std::vector<std::string> partCalls;
  /// Collective handles' names before they were made unique, so that
  /// parts name them alike.
  llvm::StringMap<std::string> handleBase;
  /// The global CroppedWeight of each weight given one, in any stage.
  llvm::DenseMap<Value, std::string> croppedWeightNames;
  /// The file names given so far, to the tensor names they came from.
  llvm::StringMap<std::string> fileNames;
  std::string globalsText, bodyText;
  llvm::raw_string_ostream globals{globalsText}, body{bodyText};
  /// Each dropout's number in program order (whatever stage emits it).
  llvm::DenseMap<Operation *, int64_t> dropoutNumber;
  /// Each random op's number in program order.
  llvm::DenseMap<Operation *, int64_t> randomNumber;
  /// ReLUs that the GEMM before them applies (cuda: cuBLASLt's RELU_BIAS
  /// epilogue).
  llvm::DenseSet<Operation *> reluInGemm;
  /// Started all-reduce buckets, by the op that first reads them.
  llvm::DenseMap<Operation *, SmallVector<std::string>> pendingWaits;
  /// The trace table's rows so far (C++ initializers), the phases of the
  /// step's ops, and the trace row of each started all-reduce's wait.
  std::vector<std::string> traceRows;
  llvm::StringMap<int> traceRowIndex;
  std::optional<StepPhases> phases;
  llvm::StringMap<int> waitTraceRow;
  /// Pipeline stages (cleave-pipeline-stages): the mesh axis, the number
  /// of stages (1 when the step is not split) and the stage being emitted
  /// (-1 when not split).
  int64_t pipelineAxis = -1;
  int64_t numStages = 1;
  int64_t stage = -1;
};

} // namespace mlir::cleave::codegen

#endif // CLEAVE_CODEGEN_EMITTER_H
