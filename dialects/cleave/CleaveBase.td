//===- CleaveBase.td - The cleave dialect definition ------*- tablegen -*-===//
//
// The dialect that carries a model's training graph from import to codegen.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_CLEAVEBASE_TD
#define CLEAVE_DIALECT_CLEAVEBASE_TD

include "mlir/IR/OpBase.td"

def Cleave_Dialect : Dialect {
  let name = "cleave";
  let cppNamespace = "::mlir::cleave";
  let summary = "Tensor operations of a training graph, with static shapes";
  let description = [{
    The `cleave` dialect holds a model imported from ONNX as one `func.func`
    per graph. Operands and results are statically shaped builtin tensors.
    Operations use their own snake_case vocabulary, not ONNX spelling, and
    carry only static attributes: anything ONNX passes as a constant input
    (Reshape's shape, Slice's starts, ReduceSum's axes) is folded into an
    attribute by the importer. Parameters (ONNX initializers) and data
    inputs are function arguments marked with `cleave.param` and
    `cleave.input`; results are marked with `cleave.output`, and the scalar
    loss additionally with `cleave.loss`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let extraClassDeclaration = [{
    /// Registers the attributes (defined in CleaveAttrs.cpp, where their
    /// storage classes are complete).
    void registerAttributes();

    /// Argument attribute naming the ONNX initializer a parameter came from.
    static constexpr llvm::StringLiteral kParamAttrName = "cleave.param";
    /// Argument attribute naming the ONNX graph input a data input came from.
    static constexpr llvm::StringLiteral kInputAttrName = "cleave.input";
    /// Argument attribute naming a training state tensor (an initializer of
    /// an ONNX training algorithm graph).
    static constexpr llvm::StringLiteral kStateAttrName = "cleave.state";
    /// Result attribute naming the ONNX graph output a result came from.
    static constexpr llvm::StringLiteral kOutputAttrName = "cleave.output";
    /// Unit result attribute marking the scalar training loss.
    static constexpr llvm::StringLiteral kLossAttrName = "cleave.loss";
    /// Result attribute naming the tensor an algorithm output overwrites
    /// (ONNX `TrainingInfoProto.update_binding`).
    static constexpr llvm::StringLiteral kUpdateAttrName = "cleave.update";
    /// Result attribute naming the parameter a gradient result belongs to.
    static constexpr llvm::StringLiteral kGradAttrName = "cleave.grad";
    /// Argument attribute: how a state without an ONNX initializer starts
    /// ("zeros").
    static constexpr llvm::StringLiteral kInitAttrName = "cleave.init";
    /// Unit argument attribute marking the step counter (0 at the first
    /// training step).
    static constexpr llvm::StringLiteral kStepAttrName = "cleave.step";
    /// Module attribute: the ONNX file the module was imported from.
    static constexpr llvm::StringLiteral kSourceAttrName = "cleave.source";
    /// Module attribute: a dictionary from each data input whose samples lie
    /// along a dim other than 0 in the ONNX model (a sequence-first
    /// transformer's [S, B] tokens) to that dim. The function takes such an
    /// input batch-first and transposes it back (frontend/BatchDims.h); the
    /// training program moves the dim to the front as it loads --data.
    static constexpr llvm::StringLiteral kBatchDimsAttrName = "cleave.batch_dims";
    /// Module attribute: the device mesh (#cleave.mesh) of a distributed
    /// program.
    static constexpr llvm::StringLiteral kMeshAttrName = "cleave.mesh";
    /// Argument, result and op attribute: the sharding (#cleave.sharding)
    /// of a value; on ops an array with one sharding per result.
    static constexpr llvm::StringLiteral kShardingAttrName = "cleave.sharding";
    /// Module attribute: the mesh axis whose coordinates are pipeline
    /// stages (a string) in a program split into stages.
    static constexpr llvm::StringLiteral kPipelineAttrName = "cleave.pipeline";
    /// Op, argument and result attribute of a program split into pipeline
    /// stages: the stage that runs the op or holds the value. Ops without
    /// it run on every stage.
    static constexpr llvm::StringLiteral kStageAttrName = "cleave.stage";
    /// Argument attribute of an integer input read as class labels or
    /// gather indices: {low, high, ignore (optional), use}, the values it
    /// may hold ([low, high) or `ignore`) and what reads it, for the
    /// training program to check its data against.
    static constexpr llvm::StringLiteral kIndexRangeAttrName =
        "cleave.index_range";
    /// Op attribute of a micro-batch's copy of an op
    /// (cleave-unroll-microbatches): [micro-batch, number of the op it
    /// copies], so that later passes treat the copies of one op alike.
    static constexpr llvm::StringLiteral kMicroBatchAttrName =
        "cleave.microbatch";
    /// Op attribute N of an op that recomputes a forward value for the
    /// backward pass (cleave-recompute), and of the forward op it repeats
    /// (`cleave.recompute_source = N`): the pair keeps CSE from merging
    /// the copy back, and lets pipeline stages find the original.
    static constexpr llvm::StringLiteral kRecomputeAttrName =
        "cleave.recompute";
    static constexpr llvm::StringLiteral kRecomputeSourceAttrName =
        "cleave.recompute_source";
    /// Op attribute of a training-mode dropout: its number among the
    /// step's dropouts in program order, stamped before partitioning, which
    /// names its random stream (runtime/Rng.h) in every copy and order.
    static constexpr llvm::StringLiteral kDropoutNumberAttrName =
        "cleave.dropout_number";
  }];
}

class Cleave_Op<string mnemonic, list<Trait> traits = []>
    : Op<Cleave_Dialect, mnemonic, traits>;

#endif // CLEAVE_DIALECT_CLEAVEBASE_TD
