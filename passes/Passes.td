//===- Passes.td - cleave passes ---------------------------*- tablegen -*-===//

#ifndef CLEAVE_PASSES_PASSES_TD
#define CLEAVE_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"cleave-autodiff", "::mlir::func::FuncOp"> {
  let summary = "appends the reverse-mode gradient of the loss to a model";
  let description = [{
    Differentiates the function result marked `cleave.loss` with respect to
    every argument marked `cleave.param` (except those matching `freeze`).
    Backward ops are appended after the forward ops, and the function
    returns, after its original results, one gradient per parameter (result
    attribute `cleave.grad = "<param>"`, zero when the loss does not depend
    on it) and the updated BatchNorm running statistics (`cleave.update =
    "<state>"`). Functions without a `cleave.loss` result are left alone.

    Preconditions: static shapes; every op between a parameter and the loss
    has a gradient rule (otherwise the pass fails, naming the op's ONNX
    node).
    Postconditions: the function is a training step without the update.

    Input:

    ```mlir
    func.func @f(%x: tensor<4x3xf32> {cleave.input = "x"},
                 %w: tensor<3xf32> {cleave.param = "w"})
        -> (tensor<f32> {cleave.loss, cleave.output = "loss"}) {
      %0 = cleave.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
      %1 = cleave.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false}
          : tensor<4x3xf32> -> tensor<f32>
      return %1 : tensor<f32>
    }
    ```

    Output (schematically): `%1` as before, then
    `broadcast_to(reshape(1.0))` for the reduce, `mul(%dy, %x)` reduced over
    dim 0 for `%w`, and `return %1, %dw` with `{cleave.grad = "w"}` on the
    second result.
  }];
  let options = [
    ListOption<"freeze", "freeze", "std::string",
               "Glob patterns of parameters to keep fixed (no gradient)">,
  ];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def ApplyOptimizerPass : Pass<"cleave-apply-optimizer", "::mlir::func::FuncOp"> {
  let summary = "turns gradient results into PyTorch optimizer updates";
  let description = [{
    For every result marked `cleave.grad = "<param>"`, adds the optimizer
    state as arguments (`cleave.state = "<param>.momentum_buffer"`, or
    `"<param>.exp_avg"` and `"<param>.exp_avg_sq"`, all zero-initialized:
    `cleave.init = "zeros"`), one step-count argument (`cleave.step`, 0 at
    the first step), and a `cleave.sgd` or `cleave.adamw` op with
    torch.optim semantics. The gradient result is replaced by the new
    parameter (`cleave.update = "<param>"`) and the new states are appended
    (`cleave.update = "<state>"`).

    With `clip-grad-norm`, the gradients are first scaled by
    `min(1, max_norm / (norm + 1e-6))` where `norm` is their global L2 norm
    (torch.nn.utils.clip_grad_norm_). With a warmup or a decaying
    `lr-schedule`, a `cleave.lr_schedule` op computes the step's learning
    rate factor, which every update takes as `lr_factor`.

    Preconditions: `cleave-autodiff` ran. Postconditions: the function is a
    complete training step.

    Input: `return %loss, %dw : ... {cleave.grad = "w"}`. Output with
    `optimizer=sgd momentum=0.9`:

    ```mlir
    %w1, %b1 = cleave.sgd %w, %dw momentum_buffer(%buf) step(%t) {...}
    return %loss, %w1, %b1   // {cleave.update = "w"}, {cleave.update = "w.momentum_buffer"}
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd or adamw">,
    Option<"lr", "lr", "double", "0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Weight decay (decoupled for AdamW)">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"schedule", "lr-schedule", "std::string", "\"constant\"",
           "Learning-rate schedule after warmup: constant, linear, cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "Steps of linear learning-rate warmup">,
    Option<"totalSteps", "total-steps", "int64_t", "0",
           "Step at which a decaying schedule reaches min-lr-factor">,
    Option<"minLrFactor", "min-lr-factor", "double", "0.0",
           "Final learning rate of a decaying schedule, as a fraction of lr">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "Clip gradients to this global L2 norm, as "
           "torch.nn.utils.clip_grad_norm_ (0: no clipping)">,
  ];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def ExpandGradientPass : Pass<"cleave-expand-gradient", "::mlir::ModuleOp"> {
  let summary = "expands ONNX training Gradient ops into backward passes";
  let description = [{
    Replaces every `cleave.gradient @model(...)` (from an ONNX
    `training_info` algorithm) by a copy of the model function's forward
    ops, fed by the op's `xs`/`zs` inputs and, for the model's other
    arguments, by the arguments of the enclosing function with the same
    ONNX name, followed by its reverse-mode backward pass (the rules of
    `cleave-autodiff`). The differentiated model output `y` becomes a new
    result of the enclosing function, marked `cleave.loss`, so training
    programs report it.

    Preconditions: every name the model's arguments carry is available in
    the enclosing function or among `xs`/`zs`.
    Postconditions: no `cleave.gradient` remains.

    Input:

    ```mlir
    %dw = cleave.gradient @model(%w, %x) {xs = ["W"], y = "loss", zs = ["X"]}
        : (tensor<4x2xf32>, tensor<8x4xf32>) -> tensor<4x2xf32>
    ```

    Output: the model's ops on `%w` and `%x`, then the backward ops; `%dw`
    is the gradient of the copied `loss`.
  }];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def DecomposeMeansPass : Pass<"cleave-decompose-means", "::mlir::func::FuncOp"> {
  let summary = "rewrites means over samples as sums divided by a count";
  let description = [{
    A mean over a batch split across ranks is not a sum of per-rank means
    when ranks count different numbers of samples (ignored labels), so a
    distributed program computes means as `sum / count`, where both the sum
    and the count are partial sums the partitioner all-reduces. The pass
    rewrites:

    - `softmax_cross_entropy` / `nll_loss` with `reduction = mean` and no
      class weights into the `sum` reduction divided by the number of
      labels that are not `ignore_index` (a constant when there is no
      `ignore_index`);
    - `reduce_mean` into `reduce_sum` times the constant `1 / count`.

    Run it before `cleave-autodiff`, only for distributed programs (the
    single-rank program keeps the fused mean kernels).

    Input:

    ```mlir
    %loss, %lp = cleave.softmax_cross_entropy %s, %y
        {ignore_index = -100 : i64, reduction = #cleave.reduction<mean>}
        : (tensor<8x10xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x10xf32>)
    ```

    Output: the same op with `reduction = #cleave.reduction<sum>`, then
    `%n = reduce_sum(where(equal(%y, -100), 0.0, 1.0))` and
    `%mean = div %loss, %n`.
  }];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def LinearRowOrderPass : Pass<"cleave-linear-row-order", "::mlir::func::FuncOp"> {
  let summary = "linear layers take their rows in the order their input's producer holds them";
  let description = [{
    `nn.MultiheadAttention` with `batch_first=True` transposes its input
    `[B, S, E]` to `[S, B, E]` before its in-projection, and its output
    `[B * H, S, d]` to `[S, B * H, d]` and the view `[S * B, E]` before its
    out-projection. As one GEMM over flattened rows (cleave-fold-transposes)
    the rows are sequence-major, so a batch split over ranks is a strided
    set of rows that no block sharding describes: data parallelism would
    gather the whole batch before each projection and compute it on every
    rank. A product by a weight treats its rows alike, so the pass
    rewrites

    - `matmul(A, W)` (`W` of rank 2, float32; optionally followed by the
      add of a bias vector of its last dimension) and `gemm(A, W, c)` (`A`
      not transposed, `c` absent or a vector: the same for every row)
      where `A` is `transpose(Y, p)` or a reshape of one, and the
      transpose puts the rows of `A` (all its dims but the last, refined
      to the factors `A` and the transpose's result share) in another
      order than `Y` holds them,

    and the same products where `A` is `Y` (rank 3 or more) or a view of
    it as rows, and `Y`'s batch is one of its row dims but not the first
    (a sequence-first model's `[S, B, E]`, followed from the data inputs'
    dim 0 through transposes, reshapes, gathers and ops that keep it),

    into the product of `Y`'s rows in `Y`'s order (`Y` reshaped to those
    factors and transposed only to bring the columns, in `A`'s order,
    last: attention's head merge; in the second case batch first), its
    bias add, and a transpose putting
    the result's rows back in `A`'s order. A reshape of a reshape then
    reads the first one's input, and views left unused are erased, so a
    model's own transpose back to batch-major meets the one added here
    (cleave-fold-transposes composes them away).

    A `softmax_cross_entropy` over such rows (scores and labels views of
    `[..., B, ...]` values with the batch at the same dim, a summed or
    mean loss, log-probabilities not read) takes them batch first too.

    Run on distributed steps only (before cleave-fold-transposes): on one
    rank the in-projection would transpose its wider output instead of its
    input. Products whose shapes share no such factors (dims of size 1,
    uneven cuts) are left as they are.
  }];
}

def FoldTransposesPass : Pass<"cleave-fold-transposes", "::mlir::func::FuncOp"> {
  let summary = "linear layers as GEMMs that read transposed operands by their flags";
  let description = [{
    PyTorch exports a `Linear` layer applied to activations of rank 3 or
    more (a transformer's `[batch, sequence, features]`) as
    `MatMul(x, Transpose(W))` followed by a bias `Add`. Run as imported, a
    training step transposes every such weight in the forward pass, and
    the backward pass (`cleave-autodiff`'s matmul rule) transposes it back,
    transposes the activations, multiplies once per batch entry and sums
    the products into the weight gradient. As a `cleave.gemm`, the forward
    product is one GEMM that reads `W` with `trans_b`, the bias is its `c`,
    and `cleave-autodiff`'s gemm rule gives both gradients as single GEMMs
    with trans flags and no transposes. The pass rewrites:

    - `matmul(x [..., M, K], r [K, N])`, float32, `x` of rank at least 2
      and `r` of rank 2, into
      `reshape(gemm(reshape(x, [rows, K]), r), [..., M, N])` (reshapes are
      views and vanish for a 2-d `x`). When `r` is `transpose(W)` with
      permutation `[1, 0]`, the gemm reads `W` with `trans_b = true`; when
      the product's only user adds a vector of its last dimension (a bias)
      without broadcasting it, that vector becomes the gemm's `c` with
      `beta = 1` and the add goes;
    - a `gemm` operand that is a 2-d `transpose` with permutation `[1, 0]`
      into the untransposed tensor with the operand's trans flag flipped;
    - `transpose(transpose(x, p), q)` into `transpose(x, p[q])`, or `x`
      when that is the identity (the backward pass transposes the
      gradients of transposed values: attention's heads).

    Transposes left without users are erased. Batched matmuls (attention's
    products between activations) stay matmuls; the cpu target reads their
    transposed operands through strides (codegen/FusionPlan.h).

    Run it before `cleave-autodiff`, so that the backward pass is built
    from the gemms, and again after it, for the transposes it adds.
    `findTensorParallelLayers` (Megatron's presets) and the sharding rules
    see PyTorch's Gemm layout: the weight as `b` with `trans_b`, the bias as
    `c`.

    Preconditions: static shapes. Postconditions: no `matmul` has a 2-d
    float32 right operand, no `gemm` operand is a 2-d transpose, and no
    transpose reads a transpose.

    Input:

    ```mlir
    %wt = cleave.transpose %w {permutation = array<i64: 1, 0>}
        : tensor<96x32xf32> -> tensor<32x96xf32>
    %y = cleave.matmul %x, %wt
        : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
    %z = cleave.add %b, %y
        : (tensor<96xf32>, tensor<2x16x96xf32>) -> tensor<2x16x96xf32>
    ```

    Output:

    ```mlir
    %x2 = cleave.reshape %x : tensor<2x16x32xf32> -> tensor<32x32xf32>
    %y2 = cleave.gemm %x2, %w, %b
        {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<32x32xf32>, tensor<96x32xf32>, tensor<96xf32>)
          -> tensor<32x96xf32>
    %z = cleave.reshape %y2 : tensor<32x96xf32> -> tensor<2x16x96xf32>
    ```
  }];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def ScheduleUpdatesPass : Pass<"cleave-schedule-updates", "::mlir::func::FuncOp"> {
  let summary = "runs each AdamW update where its gradient is complete";
  let description = [{
    `cleave-apply-optimizer` appends the optimizer updates after the whole
    backward pass, so every gradient is written, evicted from cache, and
    read again at the end of the step. This pass moves each `cleave.adamw`
    up to just after the last op it must follow: the definitions of its
    operands (the gradient, typically the GEMM or reduction that completes
    it), and every op that may still read the parameter or optimizer state
    it overwrites in place, including readers of reshapes of them (views of
    the same buffer) and, for a reader the emitter may fuse into a chain of
    single-use elementwise ops, the end of that chain
    (codegen/FusionPlan.h). Updates moved after the same op keep their
    order. A `cleave.lr_schedule` of the step count moves to the front, so
    that it never holds an update back.

    Plain SGD updates stay where they are: the emitter already runs their
    gradient GEMM in the update, and the update with its layer's input
    gradient (`linearBackwardSgd`).

    Run it on single-rank programs only (the compile pipeline does): in a
    distributed step the gradient's all-reduce would then be awaited at
    once instead of overlapping the rest of the backward pass.

    Preconditions: a training step with a single block, after
    `cleave-apply-optimizer`. Postconditions: the same ops, each `adamw`
    after everything it depends on or that reads what it overwrites.

    Input:

    ```mlir
    %dw1 = cleave.gemm %dy1, %x1 {... trans_a = true ...}
    %dx1 = cleave.gemm %dy1, %w1 {...}
    ...                                   // the rest of the backward pass
    %w1n, %m1n, %v1n = cleave.adamw %w1, %dw1, %m1, %v1 step(%t) {...}
    ```

    Output: the `adamw` right after `%dx1` (the last reader of `%w1`).
  }];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def NumberDropoutsPass : Pass<"cleave-number-dropouts", "::mlir::func::FuncOp"> {
  let summary = "stamps each dropout with its random stream's number";
  let description = [{
    Gives every `cleave.dropout` a `cleave.dropout_number`: its position in
    program order. The emitted program draws dropout masks from one random
    stream per number, so the passes that copy or reorder ops afterwards
    (recomputation, micro-batches, pipeline schedules) keep each dropout's
    mask the single-rank program would draw. Runs first when a step is
    partitioned; without it the emitter numbers dropouts in the order it
    meets them, which is the same for an unpartitioned step.

    Input: two `cleave.dropout` ops. Output: the first with
    `cleave.dropout_number = 0 : i64`, the second with `1 : i64`.
  }];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def ApplyShardingHintsPass
    : Pass<"cleave-apply-sharding-hints", "::mlir::ModuleOp"> {
  let summary = "sets the argument shardings a layout asks for";
  let description = [{
    Turns a layout into the argument shardings that
    `cleave-propagate-sharding` starts from, on the training step (the
    function with a `cleave.loss` result, or the module's only function):

    1. the mesh: `mesh` (`dp=2,tp=2`) becomes the module's `cleave.mesh`;
       empty keeps the module's own;
    2. with `microbatches` above 1, an axis `microbatch` of that size is
       appended to the mesh (see `cleave-unroll-microbatches`);
    3. a `strategy` preset's hints (`dp`, `zero1`, `zero2`, `zero3`:
       the batch over the axis `dp`, optimizer states, gradients and
       parameters split over it by stage; `megatron`: the transformer's
       linear layers column- then row-parallel over `tp`;
       `megatron+zero1|2|3`: both, ZeRO splitting over `dp` what Megatron
       splits over `tp` on another dimension), weaker than any hint given;
    4. the `hints` (`GLOB=[d0,d1,...]@PRIORITY`, each dim `_`, an axis or
       `{a,b}`): per argument the strongest matching hint sets
       `cleave.sharding` and `cleave.priority`;
    5. with micro-batches, the batch (dimension 0) of every data input is
       split over `microbatch` as well, innermost;
    6. for ZeRO-3 (`zero3`, `megatron+zero3`), every compute use of a
       parameter split over `dp` reads it through a `cleave.reshard` that
       gathers it over `dp` only (per use), keeping any other split.

    Errors (at the step): a hint that names no tensor, names an axis the
    mesh lacks, does not match the tensor's rank or does not divide its
    dimension; two hints of equal priority that disagree; a preset whose
    axis the mesh lacks; a batch that does not divide. Each names the hint
    and where it came from.

    Input (`mesh=dp=2 strategy=dp`):

    ```mlir
    func.func @step(%x: tensor<8x4xf32> {cleave.input = "x"},
                    %w: tensor<3x4xf32> {cleave.param = "w"}) -> ...
    ```

    Output: `cleave.mesh = #cleave.mesh<[dp = 2]>` on the module, `%x`
    with `cleave.sharding = #cleave.sharding<[[dp], []]>`, `%w` replicated,
    each with its `cleave.priority`.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "the device mesh, NAME=SIZE,... (empty: the module's)">,
    Option<"strategy", "strategy", "std::string", /*default=*/"\"none\"",
           "a preset: none, dp, zero1, zero2, zero3, megatron or "
           "megatron+zero1|2|3">,
    ListOption<"hints", "hints", "std::string",
               "sharding hints GLOB=[d0,...]@PRIORITY (quote each one)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "micro-batches per step: a mesh axis 'microbatch' of this size">,
  ];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def PropagateShardingPass
    : Pass<"cleave-propagate-sharding", "::mlir::ModuleOp"> {
  let summary = "gives every value a sharding and makes resharding explicit";
  let description = [{
    Starts from the `cleave.sharding` attributes of function arguments (set
    from the user's hints or a strategy, with a `cleave.priority`, lower is
    stronger, default 0) and propagates them over the ops' sharding rules
    (passes/ShardingRules.h) to a fixed point: a factor of an op takes the
    axes of the strongest split dimension mapped to it, and dimensions that
    have no sharding yet, or a weaker one, take it over. An updated
    parameter or state is tied to its argument. Afterwards every op carries
    `cleave.sharding` (one `#cleave.sharding` per result), every argument
    and result its own, and each operand whose sharding differs from what
    its op needs is fed through a `cleave.reshard` (reported as a remark
    with `report`). Dimensions nothing splits stay replicated.

    Preconditions: the module has a `cleave.mesh`; argument shardings fit
    the mesh and divide their dimensions (checked, naming the tensor).

    Input:

    ```mlir
    func.func @f(%x: tensor<8x4xf32> {cleave.input = "x",
                     cleave.sharding = #cleave.sharding<[[dp], []]>},
                 %w: tensor<3x4xf32> {cleave.param = "w"}) -> tensor<8x3xf32> {
      %0 = cleave.gemm %x, %w {... trans_b = true} : ... -> tensor<8x3xf32>
      return %0 : tensor<8x3xf32>
    }
    ```

    Output: `%w` gets `#cleave.sharding<[[], []]>`, the gemm
    `{cleave.sharding = [#cleave.sharding<[[dp], []]>]}`, and the result a
    reshard to the function result's replicated sharding.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark for every inserted reshard">,
  ];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def PartitionPass : Pass<"cleave-partition", "::mlir::ModuleOp"> {
  let summary = "turns the global program into the per-rank SPMD program";
  let description = [{
    Rewrites every function whose values carry shardings (after
    `cleave-propagate-sharding`) into the program one rank runs: tensor
    types become local shapes, `cleave.reshard` and operands whose sharding
    differs from what their op needs become collectives, and values that
    an op leaves as partial sums (a contraction over a split dimension)
    stay partial until a consumer needs them whole, where they become an
    `all_reduce`, or a `reduce_scatter` when the consumer wants them split
    (ZeRO). A sum over the data axes and the micro-batch axis (see
    `cleave-unroll-microbatches`) that a consumer wants split over the data
    axes alone (ZeRO-2/3's gradients with micro-batches) becomes a
    `reduce_scatter` over the data axes and an `all_reduce` of the blocks
    over the micro-batch axis: each micro-batch's gradient is scattered as
    it is computed and only the rank's block is accumulated. Partial
    gradients that reach the optimizer are all-reduced in
    buckets of at most `bucket-mb` MiB, in the order the backward pass
    produces them, each bucket issued where its last gradient is computed.
    Kernel taps of a convolution that only ever read padding are kept out
    of collectives (passes/DeadTapCollectives.h): their weight gradient,
    exactly zero on every rank, is neither computed nor summed (the live
    taps' sum is put back in the whole kernel by a `slice_grad` where the
    optimizer reads it), and a gathered weight that only such
    convolutions read is gathered as its live taps.
    Arguments keep `cleave.sharding` (the runtime uses it to load and save
    their shards).

    Preconditions: every value has a sharding (run
    `cleave-propagate-sharding` first).
    Postconditions: no `cleave.reshard` remains; all types are local.

    Input: the output example of `cleave-propagate-sharding`.

    Output: `%x` has type `tensor<4x4xf32>` on a mesh `dp = 2`, the gemm
    produces `tensor<4x3xf32>`, and an `all_gather ... over ["dp"] dim 0`
    feeds the return.
  }];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "the largest all-reduce bucket of gradients, in MiB">,
    Option<"reduceScatterGradients", "reduce-scatter-gradients", "bool",
           /*default=*/"true",
           "turn partial sums that must become split into reduce_scatter "
           "(ZeRO-2/3); false all-reduces them and keeps a slice (ZeRO-1)">,
  ];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def RecomputePass : Pass<"cleave-recompute", "::mlir::func::FuncOp"> {
  let summary = "recomputes saved activations in the backward pass";
  let description = [{
    In a training step (a function with a `cleave.loss` result), forward
    values that the backward pass reads are recomputed right before the
    first backward op of their layer that needs them, instead of being
    kept alive from the forward pass: activation memory for compute.

    Layers come from the graph: a checkpoint is an activation (a forward
    value computed from the data) that is the only one alive between two
    forward ops, such as a transformer's residual stream after each
    residual add. Checkpoints are kept; so are the results of ops that
    cannot run twice to the same effect (dropout and random draws) and, in
    `selective` mode, the products of GEMMs, matmuls and convolutions.
    Every other saved activation of a layer is recomputed from what its
    layer keeps: `full` repeats the layer's forward pass (the GEMMs too),
    `selective` only the cheap ops between kept products (LayerNorm,
    GELU, softmax and its mask: Korthikanti et al. 2022's selective
    recomputation, found by op kind rather than by name). The layer after
    the last checkpoint (the loss) is kept: its backward pass starts as
    its forward pass ends. The copies carry `cleave.recompute = N` and
    the forward op each repeats `cleave.recompute_source = N`, so CSE never
    merges them and pipeline stages can find the original. A model whose
    layers hold nothing to recompute (an MLP, whose every activation is a
    checkpoint) is left as it is, with a warning.

    Runs on the global training step, before sharding, so partitioning,
    micro-batches and pipeline stages treat the copies as backward ops,
    and the memory plan (`--print-memory`) sees the shorter lifetimes.

    Input:

    ```mlir
    %h = cleave.gemm %x, %w1 ...       // checkpoint's layer: x -> h -> g
    %g = cleave.gelu %h ...
    %y = cleave.gemm %g, %w2 ...
    ...
    %dg = cleave.gemm %dy, %w2 ...     // backward reads %g
    %dh = cleave.gelu_grad %dg, %h ... // and %h
    ```

    Output (`selective`): before `%dg`'s readers, `%g2 = cleave.gelu %h
    {cleave.recompute}`, and the backward ops read `%g2`; `%g` dies after
    the forward pass.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"full\"",
           "what to recompute: full (whole layers) or selective (the ops "
           "between GEMMs)">,
  ];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def PipelineStagesPass : Pass<"cleave-pipeline-stages", "::mlir::ModuleOp"> {
  let summary = "splits the per-rank training step into pipeline stages";
  let description = [{
    Gives every op of the training step (the function with a `cleave.loss`
    result) a `cleave.stage`: the coordinate along the mesh axis `axis` of
    the ranks that run it. The forward ops (those the loss depends on) are
    cut, in program order, into contiguous stages balanced by estimated
    work (passes/StageCut.h): each op weighs max(flops, `machine-balance`
    x bytes it reads and writes) -- 2 M N K for GEMMs, matmuls and
    convolutions, one per result element otherwise -- and each forward op
    carries the backward and update ops that will run in its stage, so a
    first stage whose input needs no gradient and a last stage that also
    computes the loss are weighed as they run. A stage also pays for what
    crosses its cuts (the forward values computed before a cut and read
    after it, and their gradients) at `link-balance` operations per byte.
    The cut minimises the most expensive stage (solved exactly by dynamic
    programming), then, among the cuts that keep it, the sum of the
    squared stage costs. No
    cut falls between a unary elementwise op (a layer's ReLU) and its
    operand when it is the only forward reader of it, since its gradient
    reads its result, nor after an op that joins its first reader's
    stage (a weight's preparation, a sum of the data alone), which would
    leave a stage empty. `cuts` sets the cut by hand instead. A parameter
    lives in the stage of its forward uses, and the ops that read
    or update it run there; every other op runs in the earliest stage that
    still holds what it reads (forward values are held up to the last stage
    whose forward ops read them), so the backward pass flows from the last
    stage to the first. An op computed from constants, data inputs and
    the step counter only runs in the stages that read it (a copy each;
    with no stage when every stage does), and constants are shared. A value read in
    another stage than its own crosses in a `cleave.send_recv`, placed
    right after it is computed; gradient buckets (`all_reduce` over other
    axes) are split by stage.

    Arguments that are parameters or state, and results, get a
    `cleave.stage` attribute too (where the runtime finds them), and the
    module gets `cleave.pipeline = "<axis>"`.

    Schedules (`schedule`; every stage runs its ops in block order, so the
    schedule is the block's order). `gpipe` keeps the order
    `cleave-unroll-microbatches` gives: every micro-batch's forward pass,
    then the backward passes. `1f1b`: stage s runs p - 1 - s forward
    passes, then alternates one forward and one backward pass, then the
    remaining backward passes, so a stage holds the activations of at most
    p - s micro-batches. `interleaved` (Megatron's): the forward pass is
    cut into p x V chunks (`virtual-stages` = V), chunk c on stage c mod p,
    and each stage runs its chunks' passes 1F1B-style in groups of p
    micro-batches (the count must divide by p); the bubble shrinks by V, at
    the price of V times the transfers. The per-stage orders become one
    block order from a simulated timeline (passes/PipelineSchedule.h), so
    transfers and collectives still meet in the same order on every rank.

    Runs after `cleave-partition` when other mesh axes split the step too
    (data or tensor parallel, ZeRO): a stage's collectives then run over
    its own ranks' groups, and its parameters may be split over those axes;
    the hints must not name the pipeline axis.

    A parameter read by the forward ops of several stages (tied token
    embedding and output head) lives in the first of them: the others
    receive it in a `cleave.send_recv` at the step's start, compute their
    part of its gradient where its readers are, and send it back, where
    the parts are summed before the one update.

    Errors: a tensor split over the pipeline axis, more stages (or
    chunks) than the forward pass can fill, an unknown schedule, V on a
    schedule other than `interleaved`, and an interleaved micro-batch
    count that p does not divide.

    Input (mesh `pp = 2`):

    ```mlir
    %h = cleave.gemm %x, %w1 ... // first half of the forward work
    %y = cleave.gemm %h, %w2 ... // second half
    ```

    Output:

    ```mlir
    %h = cleave.gemm %x, %w1 ... {cleave.stage = 0 : i64}
    %h1 = cleave.send_recv %h over "pp" from 0 to 1 : tensor<...>
    %y = cleave.gemm %h1, %w2 ... {cleave.stage = 1 : i64}
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"pp\"",
           "the mesh axis whose coordinates are the stages">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"gpipe\"",
           "the order of the micro-batches' passes: gpipe, 1f1b or "
           "interleaved">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "chunks of layers per stage (the interleaved schedule: 2 or "
           "more)">,
    Option<"machineBalance", "machine-balance", "double",
           /*default=*/"10.0",
           "floating-point operations per byte moved at which the machine's "
           "compute and memory take equal time (peak FLOP/s over memory "
           "bandwidth): the weight of a byte against an operation in the "
           "work the cut balances. The default is of the order of an x86 "
           "core's single-precision GEMM rate over its share of memory "
           "bandwidth and of a GPU's FP32 rate over its HBM's (H100: 67 "
           "TFLOP/s / 3.35 TB/s = 20)">,
    Option<"linkBalance", "link-balance", "double", /*default=*/"50.0",
           "floating-point operations per byte sent between stages at which "
           "a stage's compute and its transfers take equal time (peak "
           "FLOP/s over the bandwidth of the link between stages): the "
           "weight of a byte crossing a cut against an operation. The "
           "default lies between an x86 core's GEMM rate over MPI's "
           "shared-memory bandwidth (about 10) and a GPU's FP32 rate over "
           "NVLink's (A100: 19.5 TFLOP/s / 300 GB/s = 65)">,
    Option<"cutMicrobatches", "cut-microbatches", "int64_t",
           /*default=*/"0",
           "cut as a program of this many micro-batches of the same size "
           "would be (0: the program's own count): the work and bytes of "
           "micro-batch copies scaled to it. The planner predicts a step of "
           "many micro-batches from one of two, which must be cut alike">,
    ListOption<"cuts", "cuts", "std::string",
               "ONNX node names, one per cut and in program order, that the "
               "later chunks start with (p x V - 1 of them), instead of the "
               "cut by estimated work">,
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per chunk: where it starts and ends, its "
           "estimated work, forward and backward, and the bytes it sends "
           "and receives per step">,
  ];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

def UnrollMicroBatchesPass : Pass<"cleave-unroll-microbatches",
                                  "::mlir::ModuleOp"> {
  let summary = "runs the micro-batches of a virtual mesh axis in turn";
  let description = [{
    Micro-batching as partitioning: the step is split over a mesh axis
    `axis` whose coordinates are micro-batches (the inputs' batch split
    over it, innermost), partitioned as usual, and then this pass runs
    those "ranks" one after the other inside each real rank. Ops that
    depend on the batch are cloned once per micro-batch, each clone reading
    its rows of the inputs (which become this rank's whole batch); an
    `all_reduce` over the axis becomes the sum of the clones' values (then
    an `all_reduce` over its other axes, if any); an `all_slice` over the
    axis of a value computed once (a batch-shaped constant or random
    tensor) becomes each micro-batch's slice of its rows (after an
    `all_slice` over its other axes, if any); an `all_gather` of a
    parameter whose readers all depend on the batch (ZeRO-3's gather per
    use) is cloned per micro-batch too, so that no gathered parameter is
    held from the first micro-batch to the last; the rest runs once. Sums
    cut the step into phases (the loss's count, then the gradients): within
    a phase the micro-batches run one after another, so that in a program
    split into pipeline stages a stage hands micro-batch m on and computes
    m + 1 while the next stage works on m (GPipe's schedule, unrolled).
    With `accumulate` (a step without pipeline stages) each op runs in the
    latest phase its readers allow, and within a phase each micro-batch's
    forward ops are followed by its backward ops, micro-batch after
    micro-batch: PyTorch's accumulation loop, one micro-batch's
    activations alive at a time (a sum of several values is split so that
    each ends its own phase: the loss's count before the backward passes,
    the loss itself at the end; the other axes' all_reduce of values that
    were summed together stays one).
    A sum of GEMM results that nothing else reads (a weight gradient)
    becomes a chain instead: each micro-batch's GEMM adds the previous
    one's result (`c`, beta 1), in its buffer. A training-mode
    `cleave.batch_norm` of a batch split over the axis normalizes each
    micro-batch with its own statistics and chains the running
    statistics: micro-batch m + 1's copy reads the `new_running_mean` and
    `new_running_var` of m's, and the step returns the last copy's (PyTorch's
    gradient-accumulation loop; `OpShardingRule::statisticsFactor`).
    Without `accumulate` every micro-batch's activations are kept for its
    backward pass (the pipeline-stages pass then orders them). The axis
    then leaves the module's mesh (which loses the attribute when no axis
    remains).

    Errors: another collective over the axis (data moving between
    micro-batches), an `all_slice` with the axis not innermost, and a step
    result other than sums (a batch-dependent output).

    Input (mesh `mb = 2`, batch 8 split over `mb`):

    ```mlir
    %h = cleave.gemm %x, %w ... : (tensor<4x3xf32>, ...) -> tensor<4x2xf32>
    %g = cleave.gemm %dh, %x {trans_a = true} ...
    %s = cleave.all_reduce %g over ["mb"] : tensor<2x3xf32>
    ```

    Output: `%x : tensor<8x3xf32>`, two `cleave.slice`s of 4 rows, the
    gemms twice, and `%s = cleave.add %g0, %g1`.
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"microbatch\"",
           "the mesh axis whose coordinates are micro-batches">,
    Option<"accumulate", "accumulate", "bool", /*default=*/"false",
           "each micro-batch's forward then backward pass, ops as late as "
           "their readers allow (for a step without pipeline stages)">,
  ];
  let dependentDialects = ["::mlir::cleave::CleaveDialect"];
}

#endif // CLEAVE_PASSES_PASSES_TD
