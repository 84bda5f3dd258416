//===- CleaveGradientOps.td - gradients of the model's ops -*- tablegen -*-===//
//
// The ONNX training format's symbolic `cleave.gradient`, which
// cleave-expand-gradient expands, and the input and parameter gradients of
// the forward ops, which cleave-autodiff produces. Included by CleaveOps.td
// after the forward ops and the type constraints they share.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_CLEAVEGRADIENTOPS_TD
#define CLEAVE_DIALECT_CLEAVEGRADIENTOPS_TD

include "dialects/cleave/CleaveBase.td"
include "dialects/cleave/CleaveAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

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

#endif // CLEAVE_DIALECT_CLEAVEGRADIENTOPS_TD
