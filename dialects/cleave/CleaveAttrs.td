//===- CleaveAttrs.td - cleave dialect attributes ---------*- tablegen -*-===//

#ifndef CLEAVE_DIALECT_CLEAVEATTRS_TD
#define CLEAVE_DIALECT_CLEAVEATTRS_TD

include "dialects/cleave/CleaveBase.td"
include "mlir/IR/EnumAttr.td"

def Cleave_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines its per-sample values", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Sum", 1, "sum">,
      I32EnumAttrCase<"Mean", 2, "mean">]> {
  let cppNamespace = "::mlir::cleave";
  let genSpecializedAttr = 0;
}

def Cleave_LossReductionAttr
    : EnumAttr<Cleave_Dialect, Cleave_LossReduction, "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def Cleave_MomentumMode : I32EnumAttr<"MomentumMode",
    "the update rule of the ONNX Momentum optimizer", [
      I32EnumAttrCase<"Standard", 0, "standard">,
      I32EnumAttrCase<"Nesterov", 1, "nesterov">]> {
  let cppNamespace = "::mlir::cleave";
  let genSpecializedAttr = 0;
}

def Cleave_MomentumModeAttr
    : EnumAttr<Cleave_Dialect, Cleave_MomentumMode, "momentum_mode"> {
  let assemblyFormat = "`<` $value `>`";
}


//===----------------------------------------------------------------------===//
// Distribution: the device mesh and tensor shardings
//===----------------------------------------------------------------------===//

class Cleave_Attr<string name, string attrMnemonic>
    : AttrDef<Cleave_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Cleave_MeshAttr : Cleave_Attr<"Mesh", "mesh"> {
  let summary = "the device mesh: named axes mapped row-major onto ranks";
  let description = [{
    A mesh of `product(sizes)` ranks with named axes. Rank `r` has the
    row-major coordinates of `r` (the last axis varies fastest), so
    `#cleave.mesh<dp = 2, tp = 2>` puts ranks 0 and 1 in the same `dp`
    slice and makes them `tp` neighbours. A module that is distributed
    carries its mesh as the module attribute `cleave.mesh`.

    Example:

    ```mlir
    module attributes {cleave.mesh = #cleave.mesh<dp = 2, tp = 2>} {}
    ```

    **Constraints:**
    - axis names are distinct identifiers;
    - every size is at least 1.
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr">:$axisNames,
                        ArrayRefParameter<"int64_t">:$axisSizes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The index of the axis called `name`, or -1.
    int64_t getAxisIndex(::llvm::StringRef name) const;
    /// The size of the axis called `name`, which the mesh has.
    int64_t getAxisSize(::llvm::StringRef name) const;
    int64_t getNumRanks() const;
    /// The product of the sizes of `axes` (1 for none).
    int64_t getGroupSize(::llvm::ArrayRef<::mlir::StringAttr> axes) const;
  }];
}

def Cleave_ShardingAttr : Cleave_Attr<"Sharding", "sharding"> {
  let summary = "how a tensor is split over the mesh";
  let description = [{
    The sharding of one tensor, in the vocabulary of Shardy and MLIR's
    `shard` dialect. `dims` holds, per tensor dimension, the ordered list of
    mesh axes the dimension is split over (major to minor): dimension `d`
    of size `n` split over axes of sizes `s1, s2` gives the rank with
    coordinates `c1, c2` the block `c1 * s2 + c2` of `n / (s1 * s2)`
    elements. Axes not named are replicated. `replicated` lists axes that
    must stay replicated (propagation may not split the tensor over them).
    `partial` lists axes over which the value holds unreduced partial sums:
    the true value is the sum of the values of the ranks that differ only
    in those axes.

    Example:

    ```mlir
    #cleave.sharding<[[dp], []]>                 // rows split over dp
    #cleave.sharding<[[], [tp]], partial = [dp]> // partial sums over dp
    ```

    **Constraints:**
    - an axis appears at most once in `dims`, `replicated` and `partial`
      together.
    Divisibility by the mesh is checked where the tensor type is known.
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims,
                        "::mlir::ArrayAttr":$replicated,
                        "::mlir::ArrayAttr":$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axes dimension `dim` is split over.
    ::llvm::SmallVector<::mlir::StringAttr> getDimAxes(int64_t dim) const;
    ::llvm::SmallVector<::mlir::StringAttr> getPartialAxes() const;
    ::llvm::SmallVector<::mlir::StringAttr> getReplicatedAxes() const;
    /// Builds a sharding from axis lists.
    static ShardingAttr get(
        ::mlir::MLIRContext *context,
        ::llvm::ArrayRef<::llvm::SmallVector<::mlir::StringAttr>> dims,
        ::llvm::ArrayRef<::mlir::StringAttr> replicated,
        ::llvm::ArrayRef<::mlir::StringAttr> partial);
    /// A fully replicated sharding of a rank-`rank` tensor.
    static ShardingAttr getReplicated(::mlir::MLIRContext *context,
                                      int64_t rank);
    bool isFullyReplicated() const;
    /// The dims as hints files and the runtime write them: [dp,_] (a dim
    /// split over several axes lists them in braces).
    std::string formatDims() const;
    /// Checks the sharding against `mesh` and the global `type`: known
    /// axes, matching rank, every split dimension divisible by its axes.
    /// On failure returns a message that names no tensor (the caller does).
    ::std::optional<::std::string> checkAgainst(MeshAttr mesh,
                                                ::mlir::ShapedType type) const;
    /// The per-rank type of a tensor of global type `type`.
    ::mlir::RankedTensorType getLocalType(MeshAttr mesh,
                                          ::mlir::RankedTensorType type) const;
  }];
}

#endif // CLEAVE_DIALECT_CLEAVEATTRS_TD
