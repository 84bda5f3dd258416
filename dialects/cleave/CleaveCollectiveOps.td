//===- CleaveCollectiveOps.td - resharding and collectives -*- tablegen -*-===//
//
// Operations of a distributed program. `cleave.reshard` appears in the
// global program, where it changes a value's sharding; the collectives
// appear after partitioning, in the per-rank program, where every tensor
// type is the rank's local shape. All of them need the module's
// `cleave.mesh`.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_CLEAVECOLLECTIVEOPS_TD
#define CLEAVE_DIALECT_CLEAVECOLLECTIVEOPS_TD

include "dialects/cleave/CleaveBase.td"
include "dialects/cleave/CleaveAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Collectives are not Pure: every rank of a group must issue them in the
// same order, so they may not be erased, hoisted or merged by generic
// passes (CSE, DCE of a result that one rank does not use).
class Cleave_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Cleave_Op<mnemonic, traits # [MemoryEffects<[MemRead, MemWrite]>]> {
  let hasVerifier = 1;
}

def Cleave_ReshardOp : Cleave_Op<"reshard", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "gives a value a different sharding";
  let description = [{
    The global value is unchanged; the result has the sharding `sharding`
    whatever the input's sharding is. Sharding propagation inserts it where
    two shardings of one value conflict, and partitioning lowers it to
    collectives (`all_reduce`, `all_gather`, `reduce_scatter`, `all_slice`).

    The sharding is written without its `#cleave.sharding` prefix (the
    prefixed form would take the op's `: type` as the attribute's type).

    Example:

    ```mlir
    %r = cleave.reshard %x to <[[dp], []]> : tensor<8x4xf32>
    ```

    **Constraints:**
    - input and result types are equal;
    - `sharding` fits the type and the module's mesh (known axes, divisible
      dimensions).
  }];
  let arguments = (ins Cleave_Tensor:$input, Cleave_ShardingAttr:$sharding);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input `to` $sharding attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Cleave_AllReduceOp : Cleave_CollectiveOp<"all_reduce",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "sums tensors over a group of ranks";
  let description = [{
    Every rank of each group of ranks that differ only in the mesh axes
    `axes` receives the elementwise sum of the group's `inputs`. Several
    inputs form one bucket: they are reduced together in one exchange
    (data-parallel gradients are bucketed this way). Results are
    bitwise identical on all ranks of a group.

    Example:

    ```mlir
    %g1, %g2 = cleave.all_reduce %w, %b over ["dp"]
        : tensor<64x128xf32>, tensor<64xf32>
    ```

    **Constraints:**
    - at least one input; results have the inputs' types;
    - `axes` are distinct axes of the module's mesh.
  }];
  let arguments = (ins Variadic<Cleave_Tensor>:$inputs, StrArrayAttr:$axes);
  let results = (outs Variadic<Cleave_Tensor>:$results);
  let assemblyFormat =
      "$inputs `over` $axes attr-dict `:` type($inputs)";
}

class Cleave_DimCollectiveOp<string mnemonic>
    : Cleave_CollectiveOp<mnemonic> {
  let arguments = (ins Cleave_Tensor:$input, StrArrayAttr:$axes,
                       I64Attr:$dim);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input `over` $axes `dim` $dim attr-dict `:` "
                       "type($input) `->` type($result)";
}

def Cleave_AllGatherOp : Cleave_DimCollectiveOp<"all_gather"> {
  let summary = "concatenates the blocks of a group of ranks along a dimension";
  let description = [{
    The result is the concatenation along `dim` of the inputs of the ranks
    of the group (ranks that differ only in `axes`), in group order (the
    first axis major). It turns a tensor split along `dim` over `axes` into
    one replicated over them.

    Example:

    ```mlir
    %w = cleave.all_gather %shard over ["dp"] dim 0
        : tensor<32x784xf32> -> tensor<128x784xf32>
    ```

    **Constraints:**
    - `axes` are distinct axes of the mesh; `dim` is a dimension of the input;
    - the result's `dim` is the input's times the group size; other
      dimensions and the element type are equal.
  }];
}

def Cleave_ReduceScatterOp : Cleave_DimCollectiveOp<"reduce_scatter"> {
  let summary = "sums over a group of ranks and keeps one block per rank";
  let description = [{
    Sums the inputs of the group's ranks and returns to the rank with group
    index `i` block `i` of the sum along `dim`. It turns partial sums into
    a tensor split along `dim` (ZeRO-2/3 gradients).

    Example:

    ```mlir
    %g = cleave.reduce_scatter %partial over ["dp"] dim 0
        : tensor<128x784xf32> -> tensor<32x784xf32>
    ```

    **Constraints:**
    - `axes` are distinct axes of the mesh; `dim` is a dimension of the input;
    - the input's `dim` is the result's times the group size; other
      dimensions and the element type are equal.
  }];
}

def Cleave_AllSliceOp : Cleave_DimCollectiveOp<"all_slice"> {
  let summary = "keeps this rank's block of a replicated tensor";
  let description = [{
    The inverse of `all_gather` without communication: every rank keeps
    block `i` (its group index over `axes`) of the input along `dim`.

    Example:

    ```mlir
    %x = cleave.all_slice %batch over ["dp"] dim 0
        : tensor<32x784xf32> -> tensor<8x784xf32>
    ```

    **Constraints:**
    - as for `reduce_scatter`.
  }];
}

def Cleave_AllToAllOp : Cleave_CollectiveOp<"all_to_all"> {
  let summary = "moves a split from one dimension to another";
  let description = [{
    Splits the input along `split_dim` into one block per rank of the
    group, sends block `j` to group rank `j`, and concatenates the blocks
    received along `concat_dim`. A tensor split over `axes` along
    `concat_dim` becomes one split along `split_dim`.

    Example:

    ```mlir
    %y = cleave.all_to_all %x over ["tp"] split 1 concat 0
        : tensor<4x8xf32> -> tensor<8x4xf32>
    ```

    **Constraints:**
    - `axes` are distinct axes of the mesh; both dims are dimensions of the
      input;
    - the result is the input with `split_dim` divided and `concat_dim`
      multiplied by the group size.
  }];
  let arguments = (ins Cleave_Tensor:$input, StrArrayAttr:$axes,
                       I64Attr:$split_dim, I64Attr:$concat_dim);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input `over` $axes `split` $split_dim `concat` "
                       "$concat_dim attr-dict `:` type($input) `->` "
                       "type($result)";
}

def Cleave_AxisIndexOp : Cleave_Op<"axis_index", [Pure]> {
  let summary = "this rank's index in a group of ranks";
  let description = [{
    The running rank's index in its group over `axes` (row-major over the
    axes in the order given; the index `all_gather` places its block at),
    as a rank-0 `i64` tensor. The partitioner uses it where a rank's share
    of the work depends on its place: a gather from a table whose rows are
    split over ranks looks up only the rows this rank holds.

    Example:

    ```mlir
    %r = cleave.axis_index over ["tp"] : tensor<i64>
    ```

    **Constraints:**
    - `axes` are distinct axes of the mesh.
  }];
  let arguments = (ins StrArrayAttr:$axes);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = "`over` $axes attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Cleave_BroadcastOp : Cleave_CollectiveOp<"broadcast",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "copies one rank's tensor to its group";
  let description = [{
    Every rank of the group receives the input of the group rank `root`.

    Example:

    ```mlir
    %w = cleave.broadcast %w0 over ["dp"] root 0 : tensor<64xf32>
    ```

    **Constraints:**
    - `axes` are distinct axes of the mesh;
    - `0 <= root <` the group size.
  }];
  let arguments = (ins Cleave_Tensor:$input, StrArrayAttr:$axes,
                       I64Attr:$root);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat =
      "$input `over` $axes `root` $root attr-dict `:` type($input)";
}

def Cleave_SendRecvOp : Cleave_CollectiveOp<"send_recv",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "hands a value from one pipeline stage to another";
  let description = [{
    In a program split into pipeline stages along the mesh axis `axis` (the
    module's `cleave.pipeline`), an op marked `cleave.stage = k` runs only
    on the ranks whose coordinate along that axis is k. `send_recv` moves a
    value between two stages: every rank of stage `source` sends `input` to
    the rank of stage `dest` whose coordinates on the other axes are its
    own, which receives it as `result`. On `source`'s ranks the op only
    sends (`result` does not exist there), on `dest`'s it only receives
    (`input` does not exist there), and other stages skip it.

    Each stage runs its ops in the order of the one program, so every
    transfer finds both ends ready once the transfers before it are done:
    blocking point-to-point messages cannot deadlock.

    Example:

    ```mlir
    %a = cleave.send_recv %h over "pp" from 0 to 1 : tensor<32x64xf32>
    ```

    **Constraints:**
    - `axis` is an axis of the mesh;
    - `source` and `dest` are distinct coordinates along it.
  }];
  let arguments = (ins Cleave_Tensor:$input, StrAttr:$axis, I64Attr:$source,
                       I64Attr:$dest);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input `over` $axis `from` $source `to` $dest "
                       "attr-dict `:` type($input)";
}

#endif // CLEAVE_DIALECT_CLEAVECOLLECTIVEOPS_TD
