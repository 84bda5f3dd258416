//===- CleaveOptimizerOps.td - parameter updates -----------*- tablegen -*-===//
//
// The ONNX training format's optimizers (imported from a model's
// TrainingInfoProto) and the updates with PyTorch semantics that
// cleave-apply-optimizer produces, with the learning-rate schedule they
// read. Included by CleaveOps.td after the type constraints they share.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_CLEAVEOPTIMIZEROPS_TD
#define CLEAVE_DIALECT_CLEAVEOPTIMIZEROPS_TD

include "dialects/cleave/CleaveBase.td"
include "dialects/cleave/CleaveAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// ONNX training format (ai.onnx.preview.training)
//===----------------------------------------------------------------------===//
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

#endif // CLEAVE_DIALECT_CLEAVEOPTIMIZEROPS_TD
