//===- CleaveBatchStatisticsOps.td - split BatchNorm sums -*- tablegen -*-===//
//
// A training BatchNorm whose batch is split over ranks normalizes with the
// statistics of the whole batch (passes/SplitBatchStatistics.cpp). Each
// rank sums its own rows per channel with these ops, one pass over them
// and no temporary of the input's size; the sums are all-reduced (C values
// each), and `cleave.batch_norm` (its `batch_statistics`) and
// `cleave.batch_norm_grad_from_sums` normalize with the whole batch's.
// Inputs are [N, C, ...]: a channel's elements are those of dimension 1 at
// index c, over the samples and the positions.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_CLEAVEBATCHSTATISTICSOPS_TD
#define CLEAVE_DIALECT_CLEAVEBATCHSTATISTICSOPS_TD

include "dialects/cleave/CleaveBase.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Cleave_BatchNormSumOp : Cleave_Op<"batch_norm_sum", [Pure]> {
  let summary = "per channel, the sum of a tensor's elements over a divisor";
  let description = [{
    For each channel `c` of `input` ([N, C, ...]), the sum of the channel's
    elements divided by `divisor`, summed in double precision in one pass
    over the input. With `divisor` the whole batch's elements per channel,
    the all-reduce of the ranks' results is the batch's mean.

    Example:

    ```mlir
    %part = cleave.batch_norm_sum %x {divisor = 2048 : i64}
        : tensor<4x16x8x8xf32> -> tensor<16xf32>
    ```

    **Constraints:**
    - `input` has rank at least 2;
    - `result` is 1-d of size `C = input.shape[1]`, of the input's element
      type;
    - `divisor >= 1`.
  }];
  let arguments = (ins Cleave_FloatTensor:$input, I64Attr:$divisor);
  let results = (outs Cleave_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Cleave_BatchNormSquaredDeviationSumOp
    : Cleave_Op<"batch_norm_squared_deviation_sum", [Pure]> {
  let summary = "per channel, the sum of squared deviations from a mean over "
                "a divisor";
  let description = [{
    For each channel `c` of `input` ([N, C, ...]), the sum of
    `(x - mean[c])^2` over the channel's elements divided by `divisor`,
    in double precision in one pass (no tensor of the deviations is made).
    With `mean` the whole batch's and `divisor` its elements per channel,
    the all-reduce of the ranks' results is the batch's biased variance:
    the second of the two passes a BatchNorm makes on one rank.

    Example:

    ```mlir
    %part = cleave.batch_norm_squared_deviation_sum %x, %mean
        {divisor = 2048 : i64}
        : (tensor<4x16x8x8xf32>, tensor<16xf32>) -> tensor<16xf32>
    ```

    **Constraints:**
    - `input` has rank at least 2;
    - `mean` and `result` are 1-d of size `C = input.shape[1]`, of the
      input's element type;
    - `divisor >= 1`.
  }];
  let arguments = (ins Cleave_FloatTensor:$input, Cleave_FloatTensor:$mean,
                       I64Attr:$divisor);
  let results = (outs Cleave_FloatTensor:$result);
  let assemblyFormat = "$input `,` $mean attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_BatchNormGradSumsOp : Cleave_Op<"batch_norm_grad_sums", [Pure]> {
  let summary = "per channel, sum(dy) and sum(dy * (x - mean))";
  let description = [{
    For each channel `c`, over the channel's elements of `output_grad` (dy)
    and `input` (x), both [N, C, ...]: `sum_grad[c] = sum(dy)` and
    `sum_grad_centered[c] = sum(dy * (x - mean[c]))`, in double precision,
    in one pass over dy and x. All-reduced over the ranks that split the
    batch, they are the sums `cleave.batch_norm_grad_from_sums` takes
    (`sum(dy * xhat)` is `sum_grad_centered * invStd`).

    Example:

    ```mlir
    %sdy, %sdyc = cleave.batch_norm_grad_sums %dy, %x, %mean
        : (tensor<4x16x8x8xf32>, tensor<4x16x8x8xf32>, tensor<16xf32>)
          -> (tensor<16xf32>, tensor<16xf32>)
    ```

    **Constraints:**
    - `output_grad` and `input` have one type, of rank at least 2;
    - `mean`, `sum_grad` and `sum_grad_centered` are 1-d of size
      `C = input.shape[1]`, of the input's element type.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad,
                       Cleave_FloatTensor:$input, Cleave_FloatTensor:$mean);
  let results = (outs Cleave_FloatTensor:$sum_grad,
                      Cleave_FloatTensor:$sum_grad_centered);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Cleave_BatchNormGradFromSumsOp
    : Cleave_Op<"batch_norm_grad_from_sums", [Pure]> {
  let summary = "gradients of a training-mode batch_norm given the batch's "
                "statistics and sums";
  let description = [{
    `cleave.batch_norm_grad` for this rank's rows of a batch split over
    ranks, given the whole batch's `mean` and biased `variance` per channel
    (those the forward `cleave.batch_norm` normalized with), its
    `sum_grad = sum(dy)` and `sum_grad_centered = sum(dy * (x - mean))`
    (`cleave.batch_norm_grad_sums`, all-reduced) and `count`, its elements
    per channel. With `invStd = 1 / sqrt(variance + epsilon)` and
    `xhat = (x - mean) * invStd`:

    - `input_grad = scale * invStd * (dy - sum_grad / count
                                      - xhat * sum(dy * xhat) / count)`;
    - `scale_grad = sum(dy * xhat) = sum_grad_centered * invStd`;
    - `bias_grad = sum_grad`.

    Example:

    ```mlir
    %dx, %dscale, %dbias = cleave.batch_norm_grad_from_sums %dy, %x, %scale,
        %mean, %var, %sdy, %sdyc {count = 2048 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<4x16x8x8xf32>, tensor<4x16x8x8xf32>, tensor<16xf32>,
           tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
          -> (tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
    ```

    **Constraints:**
    - `output_grad`, `input` and `input_grad` have one type, of rank at
      least 2;
    - `scale`, `mean`, `variance`, `sum_grad`, `sum_grad_centered`,
      `scale_grad` and `bias_grad` are 1-d of size `C = input.shape[1]`, of
      the input's element type;
    - `epsilon` is finite and >= 0;
    - `count >= 1` and at least this input's elements per channel.
  }];
  let arguments = (ins Cleave_FloatTensor:$output_grad,
                       Cleave_FloatTensor:$input, Cleave_FloatTensor:$scale,
                       Cleave_FloatTensor:$mean, Cleave_FloatTensor:$variance,
                       Cleave_FloatTensor:$sum_grad,
                       Cleave_FloatTensor:$sum_grad_centered,
                       F32Attr:$epsilon, I64Attr:$count);
  let results = (outs Cleave_FloatTensor:$input_grad,
                      Cleave_FloatTensor:$scale_grad,
                      Cleave_FloatTensor:$bias_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // CLEAVE_DIALECT_CLEAVEBATCHSTATISTICSOPS_TD
