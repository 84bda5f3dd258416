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
    micro-batches is masked as the whole batch would be.

    Example:

    ```mlir
    %y, %mask = cleave.dropout %x {ratio = 1.000000e-01 : f32, training = true}
        : tensor<2x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi1>)
    ```

    **Constraints:**
    - `0 <= ratio < 1`;
    - `output` has the input's type; `mask` is `i1` of the input's shape.
  }];
  let arguments = (ins Cleave_FloatTensor:$input,
                       Optional<0DTensorOf<[I64]>>:$offset, F32Attr:$ratio,
                       BoolAttr:$training, OptionalAttr<I64Attr>:$seed);
  let results = (outs Cleave_FloatTensor:$output, Cleave_BoolTensor:$mask);
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
    - `epsilon` is finite and >= 0, `momentum` in [0, 1];
    - `y` has the input's type.
  }];
  let arguments = (ins Cleave_FloatTensor:$input, Cleave_FloatTensor:$scale,
                       Cleave_FloatTensor:$bias,
                       Cleave_FloatTensor:$running_mean,
                       Cleave_FloatTensor:$running_var, F32Attr:$epsilon,
                       F32Attr:$momentum, BoolAttr:$training);
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

//===----------------------------------------------------------------------===//
// ONNX training format (ai.onnx.preview.training)
//===----------------------------------------------------------------------===//

def Cleave_GradientOp : Cleave_Op<"gradient",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "gradient of a model tensor with respect to model inputs";
  let description = [{
    The ONNX training `Gradient` operator, kept symbolic until the autodiff
    pass expands it. `model` names the function holding the model graph;
    `inputs` feed the model arguments named in `xs` followed by those named
    in `zs`; the results are the gradients of the model result named `y`
    with respect to each `xs` argument.

    Example:

    ```mlir
    %dw, %db = cleave.gradient @main(%w, %b, %x, %t)
        {xs = ["W", "B"], y = "loss", zs = ["X", "T"]}
        : (tensor<4x2xf32>, tensor<2xf32>, tensor<8x4xf32>, tensor<8x2xf32>)
          -> (tensor<4x2xf32>, tensor<2xf32>)
    ```

    **Constraints:**
    - `model` names a `func.func` in the module;
    - every name in `xs` and `zs` is a `cleave.param` or `cleave.input`
      argument of `model`, and `y` is a `cleave.output` result of it;
    - there is one input per name in `xs` and `zs`, of the argument's type;
    - there is one result per name in `xs`, of that argument's type.
  }];
  let arguments = (ins FlatSymbolRefAttr:$model, Variadic<Cleave_Tensor>:$inputs,
                       StrArrayAttr:$xs, StrArrayAttr:$zs, StrAttr:$y);
  let results = (outs Variadic<Cleave_Tensor>:$gradients);
  let assemblyFormat = "$model `(` $inputs `)` attr-dict `:` "
                       "functional-type($inputs, results)";
  let hasVerifier = 1;
}

// The results are one list, the updated tensors group after group (new
// parameters first); accessors name the groups.
class Cleave_OptimizerOp<string mnemonic, list<string> groups>
    : Cleave_Op<mnemonic, [Pure, AttrSizedOperandSegments]> {
  let results = (outs Variadic<Cleave_FloatTensor>:$updated);
  let extraClassDeclaration = !interleave(!foreach(i, !range(!size(groups)), [{
    /// The updated tensors of one group.
    ::mlir::ResultRange get}] # groups[i] # [{() {
      size_t n = getParams().size();
      return getUpdated().slice(}] # i # [{ * n, n);
    }
  }]), "");
}

def Cleave_MomentumOp
    : Cleave_OptimizerOp<"momentum", ["NewParams", "NewVelocities"]> {
  let summary = "the ONNX training Momentum update (SG with momentum)";
  let description = [{
    For each parameter `x` with gradient `g` and velocity `v`, at learning
    rate `lr` and update count `step` (ONNX semantics):
    `g' = norm_coefficient * x + g`;
    `v' = alpha * v + b * g'` where `b = beta` if `step > 0` and 1 otherwise;
    `x' = x - lr * v'` in `standard` mode and
    `x' = x - lr * (g' + alpha * v')` in `nesterov` mode.

    Example:

    ```mlir
    %nx, %nv = cleave.momentum %lr, %t params(%w) grads(%gw) velocities(%vw)
        {alpha = 0.9 : f32, beta = 1.0 : f32,
         mode = #cleave.momentum_mode<standard>, norm_coefficient = 0.0 : f32}
        : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
          -> (tensor<4xf32>, tensor<4xf32>)
    ```

    **Constraints:**
    - `lr` is a 0-d float tensor and `step` a 0-d integer tensor;
    - the float attributes (hyper-parameters) are finite;
    - `params`, `grads` and `velocities` have one length and pairwise equal
      types;
    - the results are the new params then the new velocities, of the
      params' types.
  }];
  let arguments = (ins Cleave_ScalarFloatTensor:$lr,
                       Cleave_ScalarIndexTensor:$step,
                       Variadic<Cleave_FloatTensor>:$params,
                       Variadic<Cleave_FloatTensor>:$grads,
                       Variadic<Cleave_FloatTensor>:$velocities,
                       F32Attr:$alpha, F32Attr:$beta,
                       Cleave_MomentumModeAttr:$mode, F32Attr:$norm_coefficient);
  let assemblyFormat = [{
    $lr `,` $step `params` `(` $params `)` `grads` `(` $grads `)`
    `velocities` `(` $velocities `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Cleave_AdamOp : Cleave_OptimizerOp<"adam",
    ["NewParams", "NewFirstMoments", "NewSecondMoments"]> {
  let summary = "the ONNX training Adam update";
  let description = [{
    ONNX `Adam`: for each parameter `x` with gradient `g`, first moment `v`
    and second moment `h`: `g' = norm_coefficient * x + g`,
    `v' = alpha * v + (1 - alpha) * g'`, `h' = beta * h + (1 - beta) * g'^2`,
    bias-corrected step `r' = r * sqrt(1 - beta^t) / (1 - alpha^t)` for
    `t > 0`, `x' = x - r' * v' / (sqrt(h') + epsilon)`, then
    `x' = (1 - norm_coefficient_post) * x'`.

    Example:

    ```mlir
    %nx, %nv, %nh = cleave.adam %lr, %t params(%w) grads(%gw)
        first_moments(%v) second_moments(%h)
        {alpha = 0.9 : f32, beta = 0.999 : f32, epsilon = 1.0e-8 : f32,
         norm_coefficient = 0.0 : f32, norm_coefficient_post = 0.0 : f32}
        : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>,
           tensor<4xf32>, tensor<4xf32>)
          -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    ```

    **Constraints:**
    - `lr` is a 0-d float tensor and `step` a 0-d integer tensor;
    - the float attributes (hyper-parameters) are finite;
    - `params`, `grads`, `first_moments` and `second_moments` have one
      length and pairwise equal types;
    - the results are the new params, first moments and second moments, of
      the params' types.
  }];
  let arguments = (ins Cleave_ScalarFloatTensor:$lr,
                       Cleave_ScalarIndexTensor:$step,
                       Variadic<Cleave_FloatTensor>:$params,
                       Variadic<Cleave_FloatTensor>:$grads,
                       Variadic<Cleave_FloatTensor>:$first_moments,
                       Variadic<Cleave_FloatTensor>:$second_moments,
                       F32Attr:$alpha, F32Attr:$beta, F32Attr:$epsilon,
                       F32Attr:$norm_coefficient,
                       F32Attr:$norm_coefficient_post);
  let assemblyFormat = [{
    $lr `,` $step `params` `(` $params `)` `grads` `(` $grads `)`
    `first_moments` `(` $first_moments `)`
    `second_moments` `(` $second_moments `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Cleave_AdagradOp
    : Cleave_OptimizerOp<"adagrad", ["NewParams", "NewAccumulators"]> {
  let summary = "the ONNX training Adagrad update";
  let description = [{
    ONNX `Adagrad`: `r' = r / (1 + t * decay_factor)`,
    `g' = norm_coefficient * x + g`, `h' = h + g'^2`,
    `x' = x - r' * g' / (sqrt(h') + epsilon)`.

    Example:

    ```mlir
    %nx, %nh = cleave.adagrad %lr, %t params(%w) grads(%gw) accumulators(%h)
        {decay_factor = 0.1 : f32, epsilon = 1.0e-5 : f32,
         norm_coefficient = 0.001 : f32}
        : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
          -> (tensor<4xf32>, tensor<4xf32>)
    ```

    **Constraints:**
    - `lr` is a 0-d float tensor and `step` a 0-d integer tensor;
    - the float attributes (hyper-parameters) are finite;
    - `params`, `grads` and `accumulators` have one length and pairwise
      equal types;
    - the results are the new params then the new accumulators, of the
      params' types.
  }];
  let arguments = (ins Cleave_ScalarFloatTensor:$lr,
                       Cleave_ScalarIndexTensor:$step,
                       Variadic<Cleave_FloatTensor>:$params,
                       Variadic<Cleave_FloatTensor>:$grads,
                       Variadic<Cleave_FloatTensor>:$accumulators,
                       F32Attr:$decay_factor, F32Attr:$epsilon,
                       F32Attr:$norm_coefficient);
  let assemblyFormat = [{
    $lr `,` $step `params` `(` $params `)` `grads` `(` $grads `)`
    `accumulators` `(` $accumulators `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients (produced by cleave-autodiff)
//===----------------------------------------------------------------------===//

def Cleave_SoftmaxGradOp : Cleave_Op<"softmax_grad",
    [Pure, AllTypesMatch<["output", "output_grad", "input_grad"]>]> {
  let summary = "input gradient of softmax or log_softmax";
  let description = [{
    Given `output = softmax(x)` (or `log_softmax(x)` when `log` is set) and
    its gradient, computes the gradient of `x`:
    `output * (output_grad - sum(output_grad * output))` for softmax and
    `output_grad - exp(output) * sum(output_grad)` for log_softmax, the sums
    along `axis`.

    Example:

    ```mlir
    %dx = cleave.softmax_grad %y, %dy {axis = 1 : i64, log = false} : tensor<4x10xf32>
    ```

    **Constraints:**
    - all three have one type; `0 <= axis < rank`.
  }];
  let arguments = (ins Cleave_FloatTensor:$output, Cleave_FloatTensor:$output_grad,
                       I64Attr:$axis, BoolAttr:$log);
  let results = (outs Cleave_FloatTensor:$input_grad);
  let assemblyFormat = "$output `,` $output_grad attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Cleave_LayerNormGradOp : Cleave_Op<"layer_norm_grad", [Pure]> {
  let summary = "gradients of layer_norm";
  let description = [{
    From the forward op's input, scale and saved `mean` / `inv_std_dev`
    and the output gradient, computes the gradients of the input, the
    scale and the bias.

    Example:

    ```mlir
    %dx, %dscale, %dbias = cleave.layer_norm_grad %dy, %x, %scale, %mean, %rstd
        {axis = 2 : i64}
        : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64xf32>,
           tensor<2x8x1xf32>, tensor<2x8x1xf32>)
          -> (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```

    **Constraints:**
    - `output_grad`, `input` and `input_grad` have one type;
    - `scale`, `scale_grad` and `bias_grad` have the scale's type.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad, Cleave_FloatTensor:$input,
                       Cleave_FloatTensor:$scale, Cleave_FloatTensor:$mean,
                       Cleave_FloatTensor:$inv_std_dev, I64Attr:$axis);
  let results = (outs Cleave_FloatTensor:$input_grad,
                      Cleave_FloatTensor:$scale_grad,
                      Cleave_FloatTensor:$bias_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_BatchNormGradOp : Cleave_Op<"batch_norm_grad", [Pure]> {
  let summary = "gradients of training-mode batch_norm";
  let description = [{
    Recomputes the batch statistics of `input` and returns the gradients of
    the input, the scale and the bias of a training-mode `cleave.batch_norm`.

    Example:

    ```mlir
    %dx, %dscale, %dbias = cleave.batch_norm_grad %dy, %x, %scale
        {epsilon = 1.0e-05 : f32}
        : (tensor<8x16x12x12xf32>, tensor<8x16x12x12xf32>, tensor<16xf32>)
          -> (tensor<8x16x12x12xf32>, tensor<16xf32>, tensor<16xf32>)
    ```

    **Constraints:**
    - `output_grad`, `input` and `input_grad` have one type;
    - `scale`, `scale_grad` and `bias_grad` have the scale's type.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad, Cleave_FloatTensor:$input,
                       Cleave_FloatTensor:$scale, F32Attr:$epsilon);
  let results = (outs Cleave_FloatTensor:$input_grad,
                      Cleave_FloatTensor:$scale_grad,
                      Cleave_FloatTensor:$bias_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_ConvGradInputOp : Cleave_Op<"conv_grad_input", [Pure]> {
  let summary = "input gradient of conv";
  let description = [{
    The gradient of `cleave.conv`'s input (the transposed convolution of
    `output_grad` with `weight`); the attributes are the forward op's and
    the result type is the input's.

    Example:

    ```mlir
    %dx = cleave.conv_grad_input %dy, %w {dilations = array<i64: 1, 1>,
        group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
        : (tensor<8x16x12x12xf32>, tensor<16x8x3x3xf32>) -> tensor<8x8x14x14xf32>
    ```

    **Constraints:**
    - the forward `cleave.conv` of a result-typed input and `weight` with
      these attributes would produce `output_grad`'s type.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad, Cleave_FloatTensor:$weight,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Cleave_FloatTensor:$input_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Cleave_ConvGradWeightOp : Cleave_Op<"conv_grad_weight", [Pure]> {
  let summary = "weight gradient of conv";
  let description = [{
    The gradient of `cleave.conv`'s weight from `output_grad` and the
    forward input; the attributes are the forward op's and the result type
    is the weight's.

    Example:

    ```mlir
    %dw = cleave.conv_grad_weight %dy, %x {dilations = array<i64: 1, 1>,
        group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
        : (tensor<8x16x12x12xf32>, tensor<8x8x14x14xf32>) -> tensor<16x8x3x3xf32>
    ```

    **Constraints:**
    - the forward `cleave.conv` of `input` and a result-typed weight with
      these attributes would produce `output_grad`'s type.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad, Cleave_FloatTensor:$input,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Cleave_FloatTensor:$weight_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Cleave_MaxPoolGradOp : Cleave_Op<"max_pool_grad", [Pure]> {
  let summary = "input gradient of max_pool";
  let description = [{
    Routes each element of `output_grad` to the first maximum of its window
    in `input`; the attributes are the forward op's.

    Example:

    ```mlir
    %dx = cleave.max_pool_grad %dy, %x {ceil_mode = false, dilations = array<i64: 1, 1>,
        kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
        strides = array<i64: 2, 2>}
        : (tensor<8x8x14x14xf32>, tensor<8x8x28x28xf32>) -> tensor<8x8x28x28xf32>
    ```

    **Constraints:**
    - the result has the input's type.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad, Cleave_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, BoolAttr:$ceil_mode,
                       DenseI64ArrayAttr:$dilations);
  let results = (outs Cleave_FloatTensor:$input_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_AvgPoolGradOp : Cleave_Op<"avg_pool_grad", [Pure]> {
  let summary = "input gradient of avg_pool";
  let description = [{
    Spreads each element of `output_grad` evenly over its window; the
    attributes are the forward op's and the result type is the input's.

    Example:

    ```mlir
    %dx = cleave.avg_pool_grad %dy {ceil_mode = false, count_include_pad = false,
        kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
        strides = array<i64: 2, 2>}
        : tensor<8x16x6x6xf32> -> tensor<8x16x12x12xf32>
    ```

    **Constraints:**
    - the result has the forward input's type (not checked beyond rank).
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad,
                       DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, BoolAttr:$ceil_mode,
                       BoolAttr:$count_include_pad);
  let results = (outs Cleave_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad attr-dict `:` type($output_grad) `->` type($input_grad)";
}

def Cleave_GatherGradOp : Cleave_Op<"gather_grad", [Pure]> {
  let summary = "data gradient of gather (scatter-add)";
  let description = [{
    Zero-fills a tensor of the result type (the gathered data's type) and
    adds each slice of `output_grad` at its index; repeated indices
    accumulate, as an embedding's gradient needs.

    Example:

    ```mlir
    %dwte = cleave.gather_grad %de, %ids {axis = 0 : i64}
        : (tensor<2x8x64xf32>, tensor<2x8xi64>) -> tensor<100x64xf32>
    ```

    **Constraints:**
    - `output_grad`'s shape is `result[:axis] + indices + result[axis+1:]`.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad, Cleave_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Cleave_FloatTensor:$data_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_SliceGradOp : Cleave_Op<"slice_grad", [Pure]> {
  let summary = "input gradient of slice";
  let description = [{
    Zero-fills a tensor of the result type (the sliced input's type) and
    adds `output_grad` into the window `offsets` / `strides` describe.

    Example:

    ```mlir
    %dx = cleave.slice_grad %dy {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>}
        : tensor<4x4xf32> -> tensor<4x10xf32>
    ```

    **Constraints:**
    - `cleave.slice` of a result-typed tensor with these attributes yields
      `output_grad`'s type.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad,
                       DenseI64ArrayAttr:$offsets, DenseI64ArrayAttr:$strides);
  let results = (outs Cleave_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad attr-dict `:` type($output_grad) `->` type($input_grad)";
}

def Cleave_SoftmaxCrossEntropyGradOp : Cleave_Op<"softmax_cross_entropy_grad", [Pure]> {
  let summary = "scores gradient of softmax_cross_entropy";
  let description = [{
    From the loss gradient, the forward op's `log_prob`, labels and weights,
    computes the gradient of the scores:
    `(exp(log_prob) - onehot(label)) * weight * loss_grad` per sample, scaled
    as the forward `reduction` requires; ignored samples get 0.

    Example:

    ```mlir
    %dlogits = cleave.softmax_cross_entropy_grad %dloss, %logp, %labels
        {reduction = #cleave.reduction<mean>}
        : (tensor<f32>, tensor<32x10xf32>, tensor<32xi64>) -> tensor<32x10xf32>
    ```

    **Constraints:**
    - the result has `log_prob`'s type.
  }];
  let arguments = (ins Cleave_FloatTensor:$loss_grad, Cleave_FloatTensor:$log_prob,
                       Cleave_IndexTensor:$labels,
                       Optional<Cleave_FloatTensor>:$weights,
                       Cleave_LossReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Cleave_FloatTensor:$scores_grad);
  let assemblyFormat = "$loss_grad `,` $log_prob `,` $labels (`,` $weights^)? "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_NllLossGradOp : Cleave_Op<"nll_loss_grad", [Pure]> {
  let summary = "input gradient of nll_loss";
  let description = [{
    The gradient of `cleave.nll_loss`'s input: `-weight[target] *
    loss_grad` at each sample's target class (scaled by the reduction),
    zero elsewhere. The result type is the forward input's.

    Example:

    ```mlir
    %dlogp = cleave.nll_loss_grad %dloss, %target {reduction = #cleave.reduction<mean>}
        : (tensor<f32>, tensor<32xi64>) -> tensor<32x10xf32>
    ```

    **Constraints:**
    - the result is `[N, C, d...]` for a target `[N, d...]`.
  }];
  let arguments = (ins Cleave_FloatTensor:$loss_grad, Cleave_IndexTensor:$target,
                       Optional<Cleave_FloatTensor>:$weight,
                       Cleave_LossReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Cleave_FloatTensor:$input_grad);
  let assemblyFormat = "$loss_grad `,` $target (`,` $weight^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Optimizer updates with PyTorch semantics (produced by cleave-apply-optimizer)
//===----------------------------------------------------------------------===//

def Cleave_SgdOp : Cleave_Op<"sgd", [Pure, AttrSizedOperandSegments]> {
  let summary = "one torch.optim.SGD step of one parameter";
  let description = [{
    `g = grad + weight_decay * param`; with momentum,
    `buf = step == 0 ? g : momentum * buf + (1 - dampening) * g` and
    `g = nesterov ? g + momentum * buf : buf`; `param -= lr * g`. Yields the
    new parameter and, with momentum, the new buffer. `step` counts from 0.
    With `lr_factor` (a 0-d tensor, from `cleave.lr_schedule`) the learning
    rate is `lr * lr_factor`.

    Example:

    ```mlir
    %w1, %buf1 = cleave.sgd %w, %dw momentum_buffer(%buf) step(%t)
        {dampening = 0.0 : f32, lr = 0.05 : f32, momentum = 0.9 : f32,
         nesterov = false, weight_decay = 0.0 : f32}
        : (tensor<128x784xf32>, tensor<128x784xf32>, tensor<128x784xf32>, tensor<i64>)
          -> (tensor<128x784xf32>, tensor<128x784xf32>)
    ```

    **Constraints:**
    - `param`, `grad`, the buffer and the results have one type;
    - there is a buffer (and a second result) exactly when momentum != 0.
  }];
  let arguments = (ins Cleave_FloatTensor:$param, Cleave_FloatTensor:$grad,
                       Optional<Cleave_FloatTensor>:$momentum_buffer,
                       Cleave_ScalarIndexTensor:$step,
                       Optional<Cleave_ScalarFloatTensor>:$lr_factor,
                       F32Attr:$lr, F32Attr:$momentum, F32Attr:$dampening,
                       BoolAttr:$nesterov, F32Attr:$weight_decay);
  let results = (outs Variadic<Cleave_FloatTensor>:$updated);
  let assemblyFormat = [{
    $param `,` $grad (`momentum_buffer` `(` $momentum_buffer^ `)`)?
    `step` `(` $step `)` (`lr_factor` `(` $lr_factor^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Cleave_AdamwOp : Cleave_Op<"adamw", [Pure]> {
  let summary = "one torch.optim.AdamW step of one parameter";
  let description = [{
    Decoupled weight decay `param *= 1 - lr * weight_decay`, then
    `m = beta1 * m + (1 - beta1) * grad`, `v = beta2 * v + (1 - beta2) *
    grad^2`, and with `t = step + 1`:
    `param -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)`.
    With `lr_factor` (a 0-d tensor, from `cleave.lr_schedule`) the learning
    rate is `lr * lr_factor`.

    Example:

    ```mlir
    %w1, %m1, %v1 = cleave.adamw %w, %dw, %m, %v step(%t)
        {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-8 : f32,
         lr = 3.0e-4 : f32, weight_decay = 0.1 : f32}
        : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<i64>)
          -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```

    **Constraints:**
    - `param`, `grad`, `exp_avg`, `exp_avg_sq` and the results have one type.
  }];
  let arguments = (ins Cleave_FloatTensor:$param, Cleave_FloatTensor:$grad,
                       Cleave_FloatTensor:$exp_avg, Cleave_FloatTensor:$exp_avg_sq,
                       Cleave_ScalarIndexTensor:$step,
                       Optional<Cleave_ScalarFloatTensor>:$lr_factor,
                       F32Attr:$lr, F32Attr:$beta1, F32Attr:$beta2,
                       F32Attr:$eps, F32Attr:$weight_decay);
  let results = (outs Cleave_FloatTensor:$new_param,
                      Cleave_FloatTensor:$new_exp_avg,
                      Cleave_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `step` `(` $step `)`
    (`lr_factor` `(` $lr_factor^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Cleave_LrScheduleOp : Cleave_Op<"lr_schedule", [Pure]> {
  let summary = "the learning-rate factor of a step: warmup, then decay";
  let description = [{
    The factor the optimizers scale their learning rate by at `step`
    (counting from 0): `(step + 1) / warmup_steps` during the first
    `warmup_steps` steps; then 1 (`constant`), or a decay from 1 to
    `min_factor` at `total_steps` (`linear`, or `cosine`:
    `min + (1 - min) * (1 + cos(pi * progress)) / 2`), and `min_factor`
    after `total_steps`. It matches a PyTorch `LambdaLR` with that lambda,
    stepped once per optimizer step.

    Example:

    ```mlir
    %f = cleave.lr_schedule %t {min_factor = 0.1 : f32, schedule = "cosine",
        total_steps = 1000 : i64, warmup_steps = 100 : i64} : tensor<i64> -> tensor<f32>
    ```

    **Constraints:**
    - `schedule` is `constant`, `linear` or `cosine`;
    - `warmup_steps >= 0`; `0 <= min_factor <= 1`;
    - `total_steps > warmup_steps` unless the schedule is `constant`.
  }];
  let arguments = (ins Cleave_ScalarIndexTensor:$step, StrAttr:$schedule,
                       I64Attr:$warmup_steps, I64Attr:$total_steps,
                       F32Attr:$min_factor);
  let results = (outs Cleave_ScalarFloatTensor:$factor);
  let assemblyFormat = "$step attr-dict `:` type($step) `->` type($factor)";
  let hasVerifier = 1;
}

include "dialects/cleave/CleaveCollectiveOps.td"

#endif // CLEAVE_DIALECT_CLEAVEOPS_TD
