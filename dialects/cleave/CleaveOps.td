//===- CleaveOps.td - cleave dialect operations -----------*- tablegen -*-===//
//
// Tensor operations of an imported model. Every operation has static shapes;
// verifiers check the shapes ONNX shape inference produced, so a model that
// reaches later phases is known to be consistent.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_CLEAVEOPS_TD
#define CLEAVE_DIALECT_CLEAVEOPS_TD

include "dialects/cleave/CleaveBase.td"
include "dialects/cleave/CleaveAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints and traits
//===----------------------------------------------------------------------===//

def Cleave_Tensor : StaticShapeTensorOf<[AnyType]>;
def Cleave_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Cleave_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Cleave_BoolTensor : StaticShapeTensorOf<[I1]>;
def Cleave_ScalarFloatTensor
    : Type<And<[Cleave_FloatTensor.predicate,
                CPred<"::llvm::cast<::mlir::ShapedType>($_self).getRank() == 0">]>,
           "0-d tensor of floating-point values">;
def Cleave_ScalarIndexTensor
    : Type<And<[Cleave_IndexTensor.predicate,
                CPred<"::llvm::cast<::mlir::ShapedType>($_self).getRank() == 0">]>,
           "0-d tensor of 32/64-bit integers">;

// Operands broadcast numpy-style and the result has exactly the broadcast
// shape (implemented in CleaveTraits.h).
def Cleave_Broadcasting : NativeOpTrait<"Broadcasting"> {
  let cppNamespace = "::mlir::cleave::OpTrait";
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Cleave_ConstantOp : Cleave_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let description = [{
    Produces the tensor held in `value`. The importer emits it for ONNX
    `Constant` nodes and for constant inputs that are not folded into an
    attribute (a causal mask, for example).

    Example:

    ```mlir
    %c = cleave.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```

    **Constraints:**
    - the result type is the type of `value`.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise operations
//===----------------------------------------------------------------------===//

class Cleave_BinaryOp<string mnemonic, string what, list<Trait> traits = []>
    : Cleave_Op<mnemonic, !listconcat(traits, [Pure, Cleave_Broadcasting])> {
  let summary = "elementwise " # what # " with numpy broadcasting";
  let description = [{
    Computes `lhs }] # what # [{ rhs` elementwise. Operands broadcast as in
    numpy; the result has the broadcast shape.

    Example:

    ```mlir
    %r = cleave.}] # mnemonic # [{ %a, %b
        : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```

    **Constraints:**
    - the operand shapes are broadcast-compatible and the result shape is
      their broadcast shape;
    - operands and result have one element type.
  }];
  let arguments = (ins Cleave_Tensor:$lhs, Cleave_Tensor:$rhs);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Cleave_AddOp : Cleave_BinaryOp<"add", "+", [SameOperandsAndResultElementType]>;
def Cleave_SubOp : Cleave_BinaryOp<"sub", "-", [SameOperandsAndResultElementType]>;
def Cleave_MulOp : Cleave_BinaryOp<"mul", "*", [SameOperandsAndResultElementType]>;
def Cleave_DivOp : Cleave_BinaryOp<"div", "/", [SameOperandsAndResultElementType]>;

def Cleave_PowOp : Cleave_Op<"pow", [Pure, Cleave_Broadcasting]> {
  let summary = "elementwise power with numpy broadcasting";
  let description = [{
    Computes `base ^ exponent` elementwise. Base and exponent may each be
    float or integer tensors; the result has the base's element type.

    Example:

    ```mlir
    %r = cleave.pow %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```

    **Constraints:**
    - the result has the base's element type;
    - the shapes broadcast and the result has the broadcast shape.
  }];
  let arguments = (ins Cleave_Tensor:$base, Cleave_Tensor:$exponent);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat =
      "$base `,` $exponent attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class Cleave_CompareOp<string mnemonic, string what>
    : Cleave_Op<mnemonic, [Pure, Cleave_Broadcasting,
                           AllElementTypesMatch<["lhs", "rhs"]>]> {
  let summary = "elementwise comparison `" # what # "` yielding booleans";
  let description = [{
    Compares `lhs }] # what # [{ rhs` elementwise with numpy broadcasting and
    yields an `i1` tensor.

    Example:

    ```mlir
    %m = cleave.}] # mnemonic # [{ %a, %b
        : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
    ```

    **Constraints:**
    - both operands have one element type;
    - the result is `i1` with the broadcast shape.
  }];
  let arguments = (ins Cleave_Tensor:$lhs, Cleave_Tensor:$rhs);
  let results = (outs Cleave_BoolTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Cleave_EqualOp : Cleave_CompareOp<"equal", "==">;
def Cleave_LessOp : Cleave_CompareOp<"less", "<">;

def Cleave_WhereOp : Cleave_Op<"where",
    [Pure, Cleave_Broadcasting,
     AllElementTypesMatch<["on_true", "on_false", "result"]>]> {
  let summary = "elementwise select with numpy broadcasting";
  let description = [{
    Picks `on_true` where `condition` holds and `on_false` elsewhere; all
    three operands broadcast together.

    Example:

    ```mlir
    %r = cleave.where %mask, %scores, %neg_inf
        : (tensor<1x1x8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>)
          -> tensor<2x4x8x8xf32>
    ```

    **Constraints:**
    - `condition` is an `i1` tensor;
    - `on_true`, `on_false` and the result have one element type;
    - the result has the broadcast shape of all three operands.
  }];
  let arguments = (ins Cleave_BoolTensor:$condition, Cleave_Tensor:$on_true,
                       Cleave_Tensor:$on_false);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$condition `,` $on_true `,` $on_false attr-dict `:` "
                       "functional-type(operands, results)";
}

class Cleave_UnaryOp<string mnemonic, string what, Type type = Cleave_FloatTensor>
    : Cleave_Op<mnemonic, [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "elementwise " # what;
  let description = [{
    Computes }] # what # [{ of every element.

    Example:

    ```mlir
    %r = cleave.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```

    **Constraints:**
    - operand and result have the same type.
  }];
  let arguments = (ins type:$input);
  let results = (outs type:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Cleave_SqrtOp : Cleave_UnaryOp<"sqrt", "the square root">;
def Cleave_NegOp : Cleave_UnaryOp<"neg", "the negation", Cleave_Tensor>;
def Cleave_ErfOp : Cleave_UnaryOp<"erf", "the error function">;
def Cleave_TanhOp : Cleave_UnaryOp<"tanh", "the hyperbolic tangent">;
def Cleave_SigmoidOp : Cleave_UnaryOp<"sigmoid", "the logistic sigmoid `1 / (1 + exp(-x))`">;
def Cleave_ReluOp : Cleave_UnaryOp<"relu", "`max(x, 0)`", Cleave_Tensor>;
def Cleave_ExpOp : Cleave_UnaryOp<"exp", "the natural exponential">;
def Cleave_LogOp : Cleave_UnaryOp<"log", "the natural logarithm">;

def Cleave_CastOp : Cleave_Op<"cast", [Pure, Elementwise, SameOperandsAndResultShape]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts every element to the result's element type with C++ conversion
    semantics (floats to integers truncate toward zero; nonzero becomes
    `true` for `i1`).

    Example:

    ```mlir
    %r = cleave.cast %x : tensor<4xi64> to tensor<4xf32>
    ```

    **Constraints:**
    - operand and result have the same shape.
  }];
  let arguments = (ins Cleave_Tensor:$input);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
}

def Cleave_DropoutOp : Cleave_Op<"dropout"> {
  let summary = "random zeroing of elements, scaled to keep the mean";
  let description = [{
    In training mode, zeroes each element with probability `ratio` and scales
    the others by `1 / (1 - ratio)`; `mask` records which elements were kept.
    In inference mode (`training = false`) or with `ratio = 0` it is the
    identity and `mask` is all true. `seed`, when present, fixes the random
    stream. Element i's draw is that of flat index `offset + i` of the
    stream (`offset`, when given, a rank-0 i64: where this block of rows
    starts in the whole tensor), so a batch split over ranks or run in
    micro-batches is masked as the whole batch would be. A block split
    along later dims too (features over a tensor-parallel axis) is not
    contiguous in the whole tensor: with `row_dim = d` and `row_stride =
    s`, the element whose index within dims d and after is c, in row r of
    the dims before d, draws index `offset + r * s + c` (s: the whole
    tensor's elements per step of dim d - 1).

    Example:

    ```mlir
    %y, %mask = cleave.dropout %x {ratio = 1.000000e-01 : f32, training = true}
        : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
    ```

    **Constraints:**
    - `0 <= ratio < 1`;
    - `output` has the input's type; `mask` is `i1` of the input's shape;
    - `row_dim` and `row_stride` come together: `0 < row_dim < rank` and
      `row_stride` at least the elements of dims `row_dim` and after.
  }];
  let arguments = (ins Cleave_FloatTensor:$input,
                       Optional<0DTensorOf<[I64]>>:$offset, F32Attr:$ratio,
                       BoolAttr:$training, OptionalAttr<I64Attr>:$seed,
                       OptionalAttr<I64Attr>:$row_dim,
                       OptionalAttr<I64Attr>:$row_stride);
  let results = (outs Cleave_FloatTensor:$output, Cleave_BoolTensor:$mask);
  let extraClassDeclaration = [{
    /// The elements of a row: those of dims `row_dim` and after, or all of
    /// them without `row_dim`.
    int64_t getRowElements() {
      ShapedType type = getInput().getType();
      int64_t elements = 1;
      for (int64_t d = getRowDim().value_or(0); d < type.getRank(); ++d)
        elements *= type.getDimSize(d);
      return elements;
    }
  }];
  let assemblyFormat =
      "$input (`offset` $offset^ `:` type($offset))? attr-dict `:` "
      "type($input) `->` `(` type($output) `,` type($mask) `)`";
  let hasVerifier = 1;
}

class Cleave_RandomOp<string mnemonic, string what, string example,
                      string constraint, dag parameters>
    : Cleave_Op<mnemonic, []> {
  let summary = "a tensor of " # what # " random numbers";
  let description = [{
    Fills the result with numbers drawn from }] # what # [{ (ONNX
    RandomUniform / RandomNormal). The numbers are a pure function of the
    seed (`seed` when present, else the program's), the op's number among
    the program's random ops, the training step and the element's index
    (runtime/Rng.h): the same in every run and on every target, new at each
    step. Not `Pure`: two identical ops draw different numbers, so neither
    may be merged with the other.

    Example:

    ```mlir
    }] # example # [{
    ```

    **Constraints:**
    - the result is a statically shaped f32 tensor;
    - }] # constraint # [{.
  }];
  let arguments = !con(parameters, (ins OptionalAttr<I64Attr>:$seed));
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Cleave_RandomUniformOp : Cleave_RandomOp<"random_uniform",
    "uniformly in `[low, high)`",
    "%r = cleave.random_uniform {high = 1.000000e+00 : f32, low = 0.000000e+00 : f32} : tensor<4x2xf32>",
    "`low` < `high`, and `high - low` is finite",
    (ins F32Attr:$low, F32Attr:$high)>;

def Cleave_RandomNormalOp : Cleave_RandomOp<"random_normal",
    "a normal distribution of mean `mean` and standard deviation `scale`",
    "%r = cleave.random_normal {mean = 0.000000e+00 : f32, scale = 2.000000e-02 : f32} : tensor<4x2xf32>",
    "`mean` is finite, and `scale` is finite and >= 0",
    (ins F32Attr:$mean, F32Attr:$scale)>;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Cleave_MatmulOp : Cleave_Op<"matmul",
    [Pure, AllElementTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "numpy-style (batched) matrix product";
  let description = [{
    Multiplies the last two dimensions of `lhs` and `rhs`, broadcasting the
    leading (batch) dimensions, as `numpy.matmul`: a 1-d `lhs` is a row
    vector and a 1-d `rhs` a column vector, and the added dimension is
    dropped from the result.

    Example:

    ```mlir
    %y = cleave.matmul %x, %w
        : (tensor<2x8x64xf32>, tensor<64x256xf32>) -> tensor<2x8x256xf32>
    ```

    **Constraints:**
    - the contracted dimensions are equal;
    - the batch dimensions broadcast;
    - the result shape is the numpy matmul shape.
  }];
  let arguments = (ins Cleave_Tensor:$lhs, Cleave_Tensor:$rhs);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_GemmOp : Cleave_Op<"gemm",
    [Pure, AllElementTypesMatch<["a", "b", "result"]>]> {
  let summary = "general matrix product `alpha * op(a) * op(b) + beta * c`";
  let description = [{
    Computes `alpha * op(a) * op(b) + beta * c` where `op` transposes its
    argument when `trans_a` / `trans_b` is set, and `c` (optional)
    broadcasts to the `[M, N]` result.

    Example:

    ```mlir
    %y = cleave.gemm %x, %w, %b
        {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<32x784xf32>, tensor<128x784xf32>, tensor<128xf32>)
          -> tensor<32x128xf32>
    ```

    **Constraints:**
    - `a` and `b` are 2-d and their contracted dimensions are equal;
    - the result is `[M, N]`;
    - `c`, when present, broadcasts to `[M, N]` without growing.
  }];
  let arguments = (ins Cleave_Tensor:$a, Cleave_Tensor:$b,
                       Optional<Cleave_Tensor>:$c, F32Attr:$alpha,
                       F32Attr:$beta, BoolAttr:$trans_a, BoolAttr:$trans_b);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization and activations over an axis
//===----------------------------------------------------------------------===//

class Cleave_SoftmaxLikeOp<string mnemonic, string what>
    : Cleave_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = what # " along one axis";
  let description = [{
    Computes }] # what # [{ of `input` along dimension `axis` (not flattened:
    ONNX opset 13 semantics).

    Example:

    ```mlir
    %p = cleave.}] # mnemonic # [{ %x {axis = 1 : i64} : tensor<4x10xf32>
    ```

    **Constraints:**
    - `0 <= axis < rank(input)`.
  }];
  let arguments = (ins Cleave_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Cleave_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Cleave_SoftmaxOp : Cleave_SoftmaxLikeOp<"softmax", "softmax">;
def Cleave_LogSoftmaxOp : Cleave_SoftmaxLikeOp<"log_softmax", "log of softmax">;

def Cleave_LayerNormOp : Cleave_Op<"layer_norm",
    [Pure, AllElementTypesMatch<["input", "scale", "y"]>]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes `input` over the dimensions `axis..rank-1` to zero mean and
    unit variance (biased, with `epsilon` added), then applies `scale` and
    `bias`. Also yields the per-row `mean` and `inv_std_dev`, which have the
    input's shape with the normalized dimensions set to 1.

    Example:

    ```mlir
    %y, %mean, %rstd = cleave.layer_norm %x, %gamma, %beta
        {axis = 2 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>)
          -> (tensor<2x8x64xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
    ```

    **Constraints:**
    - `0 <= axis < rank(input)`;
    - `scale` and `bias` have shape `input.shape[axis:]`;
    - `epsilon` is finite and >= 0;
    - `y` has the input's type; `mean` and `inv_std_dev` have the reduced
      shape.
  }];
  let arguments = (ins Cleave_FloatTensor:$input, Cleave_FloatTensor:$scale,
                       Optional<Cleave_FloatTensor>:$bias, I64Attr:$axis,
                       F32Attr:$epsilon);
  let results = (outs Cleave_FloatTensor:$y, Cleave_FloatTensor:$mean,
                      Cleave_FloatTensor:$inv_std_dev);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_BatchNormOp : Cleave_Op<"batch_norm", [Pure]> {
  let summary = "batch normalization over the channel dimension";
  let description = [{
    Normalizes each channel (dimension 1) of `input`. In inference mode it
    uses `running_mean` / `running_var`; in training mode
    (`training = true`) it uses the batch statistics and yields updated
    running statistics `momentum * running + (1 - momentum) * batch`
    (ONNX semantics; the variance update uses the biased batch variance as
    ONNX opset 15 specifies). In inference mode the running statistics pass
    through unchanged.

    `batch_statistics`, when given (training mode only), is the batch's
    mean and biased variance per channel, used instead of this input's:
    partitioning gives them where the batch is split over ranks, so that
    each rank normalizes its rows with the statistics of the whole batch
    (computed from per-rank sums and an all-reduce of `C` values each,
    not by gathering the rows).

    Example:

    ```mlir
    %y, %rm, %rv = cleave.batch_norm %x, %scale, %bias, %mean, %var
        {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, training = true}
        : (tensor<8x16x12x12xf32>, tensor<16xf32>, tensor<16xf32>,
           tensor<16xf32>, tensor<16xf32>)
          -> (tensor<8x16x12x12xf32>, tensor<16xf32>, tensor<16xf32>)
    ```

    **Constraints:**
    - `input` has rank at least 2;
    - `scale`, `bias`, `running_mean`, `running_var` and the new statistics
      are 1-d of size `C = input.shape[1]`;
    - `batch_statistics` is empty or, in training mode, two 1-d tensors of
      size `C` (mean, then variance);
    - `epsilon` is finite and >= 0, `momentum` in [0, 1];
    - `y` has the input's type.
  }];
  let arguments = (ins Cleave_FloatTensor:$input, Cleave_FloatTensor:$scale,
                       Cleave_FloatTensor:$bias,
                       Cleave_FloatTensor:$running_mean,
                       Cleave_FloatTensor:$running_var, F32Attr:$epsilon,
                       F32Attr:$momentum, BoolAttr:$training,
                       Variadic<Cleave_FloatTensor>:$batch_statistics);
  let results = (outs Cleave_FloatTensor:$y,
                      Cleave_FloatTensor:$new_running_mean,
                      Cleave_FloatTensor:$new_running_var);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Cleave_ReduceOp<string mnemonic, string what>
    : Cleave_Op<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = what # " over a set of dimensions";
  let description = [{
    Reduces `input` by }] # what # [{ over the dimensions in `axes`. With
    `keepdims` the reduced dimensions stay as size 1, otherwise they are
    removed. An empty `axes` reduces nothing (the importer expands ONNX's
    "reduce everything" form into the full list).

    Example:

    ```mlir
    %s = cleave.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdims = false}
        : tensor<4x8xf32> -> tensor<4xf32>
    ```

    **Constraints:**
    - `axes` are distinct, ascending and within the input's rank;
    - the result shape follows from `axes` and `keepdims`.
  }];
  let arguments = (ins Cleave_Tensor:$input, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Cleave_ReduceSumOp : Cleave_ReduceOp<"reduce_sum", "summation">;
def Cleave_ReduceMeanOp : Cleave_ReduceOp<"reduce_mean", "the arithmetic mean">;
def Cleave_ReduceMaxOp : Cleave_ReduceOp<"reduce_max", "the maximum">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Cleave_ReshapeOp : Cleave_Op<"reshape",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "reinterprets a tensor with a new static shape";
  let description = [{
    Returns the elements of `input` in row-major order with the result's
    shape. ONNX Reshape, Flatten, Squeeze and Unsqueeze all import to it.

    Example:

    ```mlir
    %r = cleave.reshape %x : tensor<2x8x64xf32> -> tensor<16x64xf32>
    ```

    **Constraints:**
    - input and result have the same number of elements and element type.
  }];
  let arguments = (ins Cleave_Tensor:$input);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Cleave_TransposeOp : Cleave_Op<"transpose",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "permutes the dimensions of a tensor";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    Example:

    ```mlir
    %t = cleave.transpose %x {permutation = array<i64: 0, 2, 1, 3>}
        : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
    ```

    **Constraints:**
    - `permutation` is a permutation of `0..rank-1`;
    - the result shape is the permuted input shape.
  }];
  let arguments = (ins Cleave_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Cleave_BroadcastToOp : Cleave_Op<"broadcast_to",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "broadcasts a tensor to a larger static shape";
  let description = [{
    Numpy-broadcasts `input` to the result shape (ONNX Expand, with the
    output shape already resolved).

    Example:

    ```mlir
    %b = cleave.broadcast_to %x : tensor<1x8xf32> -> tensor<4x8xf32>
    ```

    **Constraints:**
    - broadcasting the input with the result shape yields the result shape.
  }];
  let arguments = (ins Cleave_Tensor:$input);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Cleave_ConcatOp : Cleave_Op<"concat", [Pure, SameOperandsAndResultElementType]> {
  let summary = "joins tensors along one dimension";
  let description = [{
    Concatenates `inputs` along `axis`.

    Example:

    ```mlir
    %c = cleave.concat %a, %b {axis = 1 : i64}
        : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```

    **Constraints:**
    - at least one input, all of one rank, `0 <= axis < rank`;
    - all dimensions but `axis` agree, and the result's `axis` dimension is
      the sum of the inputs'.
  }];
  let arguments = (ins Variadic<Cleave_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
}

def Cleave_SplitOp : Cleave_Op<"split", [Pure, SameOperandsAndResultElementType]> {
  let summary = "cuts a tensor into consecutive pieces along one dimension";
  let description = [{
    Splits `input` along `axis` into the results, in order; the pieces'
    sizes are the results' `axis` dimensions.

    Example:

    ```mlir
    %q, %k, %v = cleave.split %qkv {axis = 2 : i64}
        : tensor<2x8x192xf32> -> tensor<2x8x64xf32>, tensor<2x8x64xf32>,
                                 tensor<2x8x64xf32>
    ```

    **Constraints:**
    - at least one result, each of the input's rank, `0 <= axis < rank`;
    - results agree with the input in every dimension but `axis`, and their
      `axis` dimensions sum to the input's.
  }];
  let arguments = (ins Cleave_Tensor:$input, I64Attr:$axis);
  let results = (outs Variadic<Cleave_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def Cleave_SliceOp : Cleave_Op<"slice",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "a strided window of a tensor";
  let description = [{
    Result element `[i0, i1, ...]` is input element
    `[offsets[0] + i0 * strides[0], offsets[1] + i1 * strides[1], ...]`.
    The window's extent is the result shape. The importer normalizes ONNX
    Slice (negative, clamped and omitted starts/ends/axes) into this form.

    Example:

    ```mlir
    %s = cleave.slice %x {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>}
        : tensor<4x10xf32> -> tensor<4x4xf32>
    ```

    **Constraints:**
    - `offsets` and `strides` have one entry per dimension; strides are
      nonzero;
    - for every non-empty dimension, the first and last element read lie
      inside the input.
  }];
  let arguments = (ins Cleave_Tensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$strides);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Cleave_GatherOp : Cleave_Op<"gather",
    [Pure, AllElementTypesMatch<["data", "result"]>]> {
  let summary = "selects slices of `data` along one axis by index";
  let description = [{
    ONNX Gather: the result is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`, and negative indices count from the end. An
    embedding lookup is a gather along axis 0.

    Example:

    ```mlir
    %e = cleave.gather %wte, %ids {axis = 0 : i64}
        : (tensor<100x64xf32>, tensor<2x8xi64>) -> tensor<2x8x64xf32>
    ```

    **Constraints:**
    - `0 <= axis < rank(data)`;
    - the result shape is as above.
  }];
  let arguments = (ins Cleave_Tensor:$data, Cleave_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Cleave_Tensor:$result);
  let assemblyFormat =
      "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

def Cleave_ConvOp : Cleave_Op<"conv",
    [Pure, AllElementTypesMatch<["input", "weight", "result"]>]> {
  let summary = "grouped N-d convolution (cross-correlation)";
  let description = [{
    Convolves `input` `[N, C, D1..Dk]` with `weight` `[M, C/group, K1..Kk]`
    and adds `bias` `[M]` when present. `pads` lists the begin pads of every
    spatial dimension, then the end pads (ONNX order).

    Example:

    ```mlir
    %y = cleave.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
        pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
        : (tensor<8x1x28x28xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>)
          -> tensor<8x16x28x28xf32>
    ```

    **Constraints:**
    - `input` and `weight` have one rank `k + 2 >= 3`;
    - `strides` and `dilations` have `k` positive entries, `pads` `2k`
      non-negative entries;
    - `group` divides `C` and `M`, and `weight.shape[1] == C / group`;
    - `bias`, when present, is `[M]`;
    - the result is `[N, M, O1..Ok]` with
      `Oi = (Di + pad_begin + pad_end - dilation * (Ki - 1) - 1) / stride + 1`.
  }];
  let arguments = (ins Cleave_FloatTensor:$input, Cleave_FloatTensor:$weight,
                       Optional<Cleave_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Cleave_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

class Cleave_PoolOp<string mnemonic, string what, dag extraArgs>
    : Cleave_Op<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = what # " pooling over the spatial dimensions";
  let description = [{
    Slides a `kernel_shape` window over the spatial dimensions of `input`
    `[N, C, D1..Dk]` and takes the }] # what # [{ of each window. `pads`
    lists begin pads then end pads; with `ceil_mode` the output size rounds
    up (ONNX semantics: a window may not start in the end padding).

    Example:

    ```mlir
    %y = cleave.}] # mnemonic # [{ %x {ceil_mode = false,
        kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
        strides = array<i64: 2, 2>, ...}
        : tensor<8x16x28x28xf32> -> tensor<8x16x14x14xf32>
    ```

    **Constraints:**
    - `input` has rank `k + 2 >= 3`;
    - `kernel_shape`, `strides` (and `dilations`) have `k` positive entries,
      `pads` `2k` non-negative entries, each smaller than the kernel extent;
    - the result is `[N, C, O1..Ok]` with the ONNX output size.
  }];
  let arguments = !con((ins Cleave_FloatTensor:$input,
                            DenseI64ArrayAttr:$kernel_shape,
                            DenseI64ArrayAttr:$strides,
                            DenseI64ArrayAttr:$pads, BoolAttr:$ceil_mode),
                       extraArgs);
  let results = (outs Cleave_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Cleave_MaxPoolOp : Cleave_PoolOp<"max_pool", "maximum",
    (ins DenseI64ArrayAttr:$dilations)>;
def Cleave_AvgPoolOp : Cleave_PoolOp<"avg_pool", "average",
    (ins BoolAttr:$count_include_pad)>;

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Cleave_SoftmaxCrossEntropyOp : Cleave_Op<"softmax_cross_entropy", [Pure]> {
  let summary = "cross entropy of class scores against integer labels";
  let description = [{
    ONNX SoftmaxCrossEntropyLoss: `log_prob = log_softmax(scores, axis = 1)`,
    per-sample loss `-weights[label] * log_prob[label]`, samples whose label
    equals `ignore_index` contribute nothing, and `reduction` combines them
    (`mean` divides by the summed weights of the counted samples).

    Example:

    ```mlir
    %loss, %logp = cleave.softmax_cross_entropy %logits, %labels
        {reduction = #cleave.reduction<mean>}
        : (tensor<32x10xf32>, tensor<32xi64>) -> (tensor<f32>, tensor<32x10xf32>)
    ```

    **Constraints:**
    - `scores` is `[N, C, d1..dk]` and `labels` `[N, d1..dk]`;
    - `weights`, when present, is `[C]`;
    - `loss` is 0-d unless `reduction` is `none`, then `[N, d1..dk]`;
    - `log_prob` has the type of `scores`.
  }];
  let arguments = (ins Cleave_FloatTensor:$scores, Cleave_IndexTensor:$labels,
                       Optional<Cleave_FloatTensor>:$weights,
                       Cleave_LossReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Cleave_FloatTensor:$loss, Cleave_FloatTensor:$log_prob);
  let assemblyFormat = "$scores `,` $labels (`,` $weights^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_NllLossOp : Cleave_Op<"nll_loss", [Pure]> {
  let summary = "negative log likelihood of log-probabilities";
  let description = [{
    ONNX NegativeLogLikelihoodLoss: per-sample loss
    `-weight[target] * input[target]`, with `ignore_index` and `reduction`
    as in `cleave.softmax_cross_entropy`.

    Example:

    ```mlir
    %loss = cleave.nll_loss %logp, %target {reduction = #cleave.reduction<mean>}
        : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
    ```

    **Constraints:**
    - `input` is `[N, C, d1..dk]` and `target` `[N, d1..dk]`;
    - `weight`, when present, is `[C]`;
    - `loss` is 0-d unless `reduction` is `none`, then `[N, d1..dk]`.
  }];
  let arguments = (ins Cleave_FloatTensor:$input, Cleave_IndexTensor:$target,
                       Optional<Cleave_FloatTensor>:$weight,
                       Cleave_LossReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Cleave_FloatTensor:$loss);
  let assemblyFormat = "$input `,` $target (`,` $weight^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

include "dialects/cleave/CleaveBatchStatisticsOps.td"
include "dialects/cleave/CleaveGradientOps.td"
include "dialects/cleave/CleaveOptimizerOps.td"
include "dialects/cleave/CleaveCollectiveOps.td"

#endif // CLEAVE_DIALECT_CLEAVEOPS_TD
