#!/usr/bin/python3
"""PyTorch reference training run for Cleave's end-to-end tests.

Builds one of the models of test/models/export_models.py, exports it to ONNX
with the weights training starts from, writes a deterministic data set, trains
it for N steps with torch.optim.SGD or torch.optim.AdamW and records the loss
of every step and the trained parameters. test/reference/compare.py then
checks a compiled program's losses and parameters against this run.

  /usr/bin/python3 test/reference/torch_train.py --model mlp --optimizer sgd \\
      --lr 0.05 --momentum 0.9 --steps 20 --batch 32 --out /tmp/mlp

Output layout (DIR = --out):

  DIR/model.onnx                     opset 17, inputs as in export_models.py,
                                     the single output `loss`
  DIR/data/<input>.npy               S samples per graph input, on dim 0
  DIR/reference/losses.json          [loss of step 0, ..., loss of step N-1]
  DIR/reference/params/<name>.npy    trained parameters (float32)
  DIR/reference/initial_params/<name>.npy   their initial values
  DIR/reference/config.json          every hyper-parameter used

Model and export
  torch.manual_seed(seed), then export_models.MODELS[model]() builds the
  model exactly as export_models.py does (which draws its example inputs from
  torch's RNG before constructing the model), so --seed 0 gives the weights of
  export_models.py. The export uses the same torch.onnx.export arguments, with
  the step-0 batch as example inputs: the mlp keeps its symbolic `batch`
  dimension, cnn and gpt are exported with the static batch size --batch.
  Tracing runs one training-mode forward pass, which moves BatchNorm's running
  statistics; the exported running_mean/running_var initializers are reset to
  their values before the export (the ones training starts from). Trainable
  parameters are checked to be exported unchanged under their PyTorch names.

Data (numpy.random.default_rng(seed), drawn in this order)
  mlp, cnn: templates = kron(rng.standard_normal((10, 1, 7, 7)),
                             ones((1, 1, 4, 4)))     smooth 28x28 class images
            y = rng.integers(0, 10, S)
            x = templates[y] + rng.standard_normal((S, 1, 28, 28))   float32
            flip = rng.random(S) < 0.3               30% label noise, so the
            y = where(flip, rng.integers(0, 10, S), y)   losses stay above ~1
            y is int64; the mlp's x is reshaped to (S, 784)
  gpt:      perm = rng.permutation(64)
            seq[:, 0] = rng.integers(0, 64, S)
            for t in 1..16: nxt = perm[seq[:, t-1]];
                 noise = rng.random(S) < 0.1; rnd = rng.integers(0, 64, S)
                 seq[:, t] = where(noise, rnd, nxt)
            idx = seq[:, :16], targets = seq[:, 1:]                  int64
  (The label/next-token structure only makes the losses visibly decrease.)
  Step k (0-based) uses samples (k * B + j) % S for j = 0 .. B-1.

Dropout
  PyTorch's dropout RNG cannot be reproduced by a compiled program, so the
  reference run (not the export) replaces each nn.Dropout by a deterministic
  counter-based mask which Cleave's runtime implements identically. With all
  arithmetic modulo 2**64:

    splitmix64(z):
      z += 0x9E3779B97F4A7C15
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
      z = (z ^ (z >> 27)) * 0x94D049BB133111EB
      return z ^ (z >> 31)

  For Dropout node number d (0-based order of the Dropout nodes in the ONNX
  graph), training step k (0-based) and flat row-major element index i of the
  Dropout's input:

    key     = splitmix64(dropout_seed ^ splitmix64(d * 0x100000001B3 + k))
    u       = splitmix64(key + i)
    uniform = (u >> 40) * 2**-24          (exact, in [0, 1))
    keep    = uniform >= ratio            (ratio as the graph's float32 value)
    output  = keep ? x / (1 - ratio) : 0  (1 - ratio computed in float32)

  Test vectors (checked by self_check() on every run):
    splitmix64(0)                  = 0xE220A8397B1DCDAF
    splitmix64(1)                  = 0x910A2DEC89025CC1
    splitmix64(0xFFFFFFFFFFFFFFFF) = 0xE4D971771B652C20
    key(seed 1234, d 0, k 0)       = 0x0D1825AE31E9066D
    keep, ratio 0.25, i = 0..15, as a string of 0/1:
      seed 1234, d 0, k 0:  1011111110110111
      seed 1234, d 0, k 1:  1101110011110111
      seed 1234, d 1, k 0:  0111011111011011

Micro-batches (--microbatches M [--dp D])
  Each step runs PyTorch's gradient-accumulation loop: micro-batch m
  (m = 0 .. M-1, in order) is the forward and backward pass of its rows,
  its mean loss weighted by its share of the batch, so BatchNorm uses that
  micro-batch's statistics and moves its running statistics once per
  micro-batch. Micro-batch m holds the m-th block of B/(D*M) rows of each of
  D equal blocks of the batch (with D = 1: rows m*B/M .. (m+1)*B/M - 1): the
  rows D data-parallel ranks run together as their micro-batch m. A Dropout
  in a micro-batch draws its rows of the whole batch's mask (element
  indices i of the whole batch), as Cleave does.

Running statistics (--running-stats)
  reference/params and initial_params also hold <bn>.running_mean and
  <bn>.running_var as the exported model defines them (ONNX
  BatchNormalization: momentum 1 - torch's, the biased batch variance).

Prints nothing unless --verbose; errors exit non-zero.
"""

import argparse
import copy
import json
import math
import os
import sys
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "models"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "models", "zoo"))
import export_models  # noqa: E402
import zoo_models  # noqa: E402

# This project's reference models and the stock ones of the model zoo
# (test/models/zoo/zoo_models.py), all as (model, example, input names,
# dynamic axes) builders.
def _zoo_builder(make):
    def build():
        model, names, axes, _ = make()
        return model, None, names, axes
    return build


MODELS = dict(export_models.MODELS)
MODELS.update({name: _zoo_builder(make)
               for name, make in zoo_models.MODELS.items()})

U64 = np.uint64
MASK64 = (1 << 64) - 1
FNV_PRIME = 0x100000001B3


# --------------------------------------------------------------------------
# Counter-based dropout mask
# --------------------------------------------------------------------------

def splitmix64(z):
    """splitmix64 of a np.uint64 scalar or array (wraps modulo 2**64)."""
    z = np.asarray(z, dtype=U64)
    with np.errstate(over="ignore"):
        z = z + U64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
        return z ^ (z >> U64(31))


def dropout_key(dropout_seed, d, k):
    inner = splitmix64(U64(((d * FNV_PRIME) + k) & MASK64))
    return splitmix64(U64(dropout_seed & MASK64) ^ inner)


def dropout_keep(dropout_seed, d, k, n, ratio):
    """Boolean keep mask of n elements for Dropout node d at step k."""
    key = dropout_key(dropout_seed, d, k)
    with np.errstate(over="ignore"):
        u = splitmix64(key + np.arange(n, dtype=U64))
    uniform = (u >> U64(40)).astype(np.float64) * 2.0 ** -24
    return uniform >= float(np.float32(ratio))


def _splitmix64_int(z):
    # Plain Python integers, independent of the numpy version above.
    z = (z + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def self_check():
    vectors = {0: 0xE220A8397B1DCDAF, 1: 0x910A2DEC89025CC1,
               0xFFFFFFFFFFFFFFFF: 0xE4D971771B652C20}
    for z, want in vectors.items():
        got_np = int(splitmix64(U64(z)))
        got_int = _splitmix64_int(z)
        if got_np != want or got_int != want:
            raise AssertionError(f"splitmix64({z:#x}): numpy {got_np:#x}, "
                                 f"int {got_int:#x}, want {want:#x}")
    arr = splitmix64(np.array(list(vectors), dtype=U64))
    if [int(v) for v in arr] != list(vectors.values()):
        raise AssertionError("vectorized splitmix64 disagrees")
    if int(dropout_key(1234, 0, 0)) != 0x0D1825AE31E9066D:
        raise AssertionError("dropout_key(1234, 0, 0)")
    masks = {(1234, 0, 0): "1011111110110111",
             (1234, 0, 1): "1101110011110111",
             (1234, 1, 0): "0111011111011011"}
    for (seed, d, k), want in masks.items():
        keep = dropout_keep(seed, d, k, 16, 0.25)
        got = "".join("1" if b else "0" for b in keep)
        if got != want:
            raise AssertionError(f"dropout mask {(seed, d, k)}: {got} != "
                                 f"{want}")


class HashDropout(nn.Module):
    """Stands in for nn.Dropout with the counter-based mask above."""

    def __init__(self, d, ratio, dropout_seed):
        super().__init__()
        self.d = d
        self.ratio = np.float32(ratio)
        self.dropout_seed = dropout_seed
        self.step = 0
        # In a micro-batch (--microbatches): the whole batch's size and this
        # micro-batch's rows of it, whose mask rows it draws.
        self.batch = None
        self.rows = None

    def forward(self, x):
        if self.rows is None:
            keep = dropout_keep(self.dropout_seed, self.d, self.step,
                                x.numel(), self.ratio)
            keep = torch.from_numpy(keep).reshape(x.shape)
        else:
            whole = (self.batch,) + tuple(x.shape[1:])
            keep = dropout_keep(self.dropout_seed, self.d, self.step,
                                int(np.prod(whole)), self.ratio)
            keep = torch.from_numpy(keep.reshape(whole)[self.rows])
        denom = torch.tensor(np.float32(1.0) - self.ratio, dtype=x.dtype)
        return torch.where(keep, x / denom, torch.zeros((), dtype=x.dtype))


def microbatch_rows(batch, microbatches, dp):
    """The rows of the batch each micro-batch holds, in order: micro-batch
    m is the m-th block of each of the dp ranks' blocks of the batch."""
    per_rank = batch // dp
    size = per_rank // microbatches
    return [np.concatenate([r * per_rank + m * size + np.arange(size)
                            for r in range(dp)])
            for m in range(microbatches)]


class RunningStats:
    """BatchNorm running statistics as the exported ONNX model updates
    them: with the biased batch variance (torch's modules use the unbiased
    one), once per forward pass in training mode."""

    def __init__(self, model):
        self.state = {}
        for name, module in model.named_modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                self.state[name] = [module.running_mean.detach().clone(),
                                    module.running_var.detach().clone(),
                                    np.float32(1.0 - module.momentum)]
                module.register_forward_pre_hook(self._hook(name))

    def _hook(self, name):
        def update(module, inputs):
            if not module.training:
                return
            x = inputs[0].detach().double()
            dims = [0] + list(range(2, x.dim()))
            mean = x.mean(dims).float()
            var = x.var(dims, unbiased=False).float()
            mom = torch.tensor(self.state[name][2])
            one = torch.tensor(np.float32(1.0) - self.state[name][2])
            self.state[name][0] = mom * self.state[name][0] + one * mean
            self.state[name][1] = mom * self.state[name][1] + one * var
        return update

    def values(self):
        out = {}
        for name, (mean, var, _) in self.state.items():
            out[name + ".running_mean"] = mean.numpy()
            out[name + ".running_var"] = var.numpy()
        return out


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def make_data(model_name, samples, seed):
    rng = np.random.default_rng(seed)
    if model_name in zoo_models.MODELS:
        return zoo_models.make_data(model_name, samples, rng)
    if model_name in ("mlp", "mlp-wide", "mlp-bn", "cnn", "resnet", "convnet"):
        # Smooth class templates plus noise, and 30% random labels: learnable
        # (the losses decrease) without ever approaching 0, where a float32
        # cross-entropy loses its relative precision.
        templates = np.kron(rng.standard_normal((10, 1, 7, 7)),
                            np.ones((1, 1, 4, 4)))
        y = rng.integers(0, 10, samples, dtype=np.int64)
        x = templates[y] + rng.standard_normal((samples, 1, 28, 28))
        flip = rng.random(samples) < 0.3
        y = np.where(flip, rng.integers(0, 10, samples, dtype=np.int64), y)
        if model_name in ("mlp", "mlp-wide", "mlp-bn"):
            x = x.reshape(samples, 784)
        return {"x": x.astype(np.float32), "y": y.astype(np.int64)}
    cfg = export_models.GPTConfig()
    vocab, t = cfg.vocab_size, cfg.n_positions
    perm = rng.permutation(vocab)
    seq = np.empty((samples, t + 1), dtype=np.int64)
    seq[:, 0] = rng.integers(0, vocab, samples, dtype=np.int64)
    for j in range(1, t + 1):
        nxt = perm[seq[:, j - 1]]
        noise = rng.random(samples) < 0.1
        rnd = rng.integers(0, vocab, samples, dtype=np.int64)
        seq[:, j] = np.where(noise, rnd, nxt)
    return {"idx": np.ascontiguousarray(seq[:, :t]),
            "targets": np.ascontiguousarray(seq[:, 1:])}


def batch_indices(step, batch, samples):
    return (step * batch + np.arange(batch, dtype=np.int64)) % samples


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

def export(model, example, input_names, dynamic_axes, path):
    """Exports a copy of `model` like export_models.export and resets the
    traced-away buffers to `model`'s values. Returns the ONNX model."""
    snapshot = {k: v.detach().clone() for k, v in model.state_dict().items()}
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    clone = copy.deepcopy(model)
    clone.train()
    warnings.filterwarnings(
        "ignore", message=".*Removing mutation from node aten::add_ on block "
        "input: '.*num_batches_tracked'")
    torch.onnx.export(
        clone, example, path,
        input_names=input_names,
        output_names=["loss"],
        dynamic_axes=dynamic_axes,
        opset_version=export_models.OPSET,
        do_constant_folding=False,
        training=torch.onnx.TrainingMode.TRAINING)

    proto = onnx.load(path)
    if [o.name for o in proto.graph.output] != ["loss"]:
        raise RuntimeError(f"expected the single output 'loss', got "
                           f"{[o.name for o in proto.graph.output]}")
    if [i.name for i in proto.graph.input] != input_names:
        raise RuntimeError(f"expected inputs {input_names}, got "
                           f"{[i.name for i in proto.graph.input]}")
    inits = {i.name: i for i in proto.graph.initializer}
    for name, value in params.items():
        if name not in inits:
            raise RuntimeError(f"parameter {name} is not an initializer")
        if not np.array_equal(numpy_helper.to_array(inits[name]),
                              value.numpy()):
            raise RuntimeError(f"exported {name} differs from the model's")
    restored = []
    for name, init in inits.items():
        if name in params or name not in snapshot:
            continue
        want = snapshot[name].numpy()
        if not np.array_equal(numpy_helper.to_array(init), want):
            init.CopyFrom(numpy_helper.from_array(want, name))
            restored.append(name)
    if restored:
        onnx.save(proto, path)
    onnx.checker.check_model(proto)
    return proto, restored


def constant_value(graph, name):
    for init in graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            for attr in node.attribute:
                if attr.name == "value":
                    return numpy_helper.to_array(attr.t)
    raise RuntimeError(f"{name} is not a constant")


def replace_dropouts(model, graph, dropout_seed):
    """Swaps every nn.Dropout of `model` for a HashDropout numbered like its
    Dropout node in `graph`. Returns descriptions for config.json."""
    nodes = [n for n in graph.node if n.op_type == "Dropout"]
    modules = [(name, m) for name, m in model.named_modules()
               if isinstance(m, nn.Dropout)]
    if len(nodes) != len(modules):
        raise RuntimeError(f"{len(nodes)} Dropout nodes but {len(modules)} "
                           f"nn.Dropout modules")
    described = []
    for d, node in enumerate(nodes):
        if len(node.input) > 1 and node.input[1]:
            ratio = np.float32(constant_value(graph, node.input[1]))
        else:
            ratio = np.float32(0.5)
        if ratio == 0:
            # The identity in both programs (the stock models of the zoo
            # are built with dropout 0); nothing to replace.
            described.append({"d": d, "node": node.name, "ratio": 0.0})
            continue
        # torch names nodes after the module path, each level by its full
        # name: /dropout/Dropout, /body/body.5/Dropout.
        def scope(name):
            parts = name.split(".")
            return "".join("/" + ".".join(parts[:i + 1])
                           for i in range(len(parts))) + "/"
        owners = [(name, m) for name, m in modules
                  if node.name.startswith(scope(name))]
        if len(owners) != 1:
            raise RuntimeError(f"cannot match Dropout node {node.name} to a "
                               f"module")
        mod_name, mod = owners[0]
        if ratio != np.float32(mod.p):
            raise RuntimeError(f"{node.name}: ratio {ratio} != p {mod.p}")
        parent = model
        *path, leaf = mod_name.split(".")
        for part in path:
            parent = getattr(parent, part)
        setattr(parent, leaf, HashDropout(d, ratio, dropout_seed))
        described.append({"d": d, "node": node.name, "module": mod_name,
                          "ratio": float(ratio)})
    return described


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True,
                   choices=sorted(MODELS))
    p.add_argument("--optimizer", required=True, choices=["sgd", "adamw"])
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--lr", type=float,
                   help="learning rate (default 0.01 sgd, 0.001 adamw)")
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--dampening", type=float, default=0.0)
    p.add_argument("--weight-decay", type=float,
                   help="default: torch's, 0 for sgd, 0.01 for adamw")
    p.add_argument("--betas", default="0.9,0.999")
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--samples", type=int, help="data set size (default N*B)")
    p.add_argument("--lr-schedule", default="constant",
                   choices=["constant", "linear", "cosine"])
    p.add_argument("--warmup-steps", type=int, default=0)
    p.add_argument("--total-steps", type=int, default=0)
    p.add_argument("--min-lr-factor", type=float, default=0.0)
    p.add_argument("--clip-grad-norm", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dropout-seed", type=int, default=1234)
    p.add_argument("--microbatches", type=int, default=1,
                   help="PyTorch's gradient-accumulation loop: each step "
                        "runs M micro-batches in turn (see Micro-batches)")
    p.add_argument("--dp", type=int, default=1,
                   help="with --microbatches, the data-parallel ranks whose "
                        "m-th blocks form micro-batch m")
    p.add_argument("--running-stats", action="store_true",
                   help="also record the BatchNorm running statistics, "
                        "updated as ONNX defines it, with the parameters")
    p.add_argument("--verbose", action="store_true")
    opts = p.parse_args(argv)
    if opts.steps < 1 or opts.batch < 1:
        p.error("--steps and --batch must be positive")
    if opts.samples is None:
        opts.samples = opts.steps * opts.batch
    if opts.samples < 1:
        p.error("--samples must be positive")
    if opts.lr is None:
        opts.lr = 0.01 if opts.optimizer == "sgd" else 1e-3
    if opts.nesterov and (opts.optimizer != "sgd" or opts.momentum <= 0
                          or opts.dampening != 0):
        p.error("--nesterov needs sgd, --momentum > 0 and --dampening 0")
    if opts.weight_decay is None:
        opts.weight_decay = 0.0 if opts.optimizer == "sgd" else 1e-2
    try:
        b1, b2 = (float(b) for b in opts.betas.split(","))
    except ValueError:
        p.error("--betas wants B1,B2")
    opts.betas = (b1, b2)
    if not 0 <= opts.dropout_seed <= MASK64:
        p.error("--dropout-seed must fit in 64 bits")
    if opts.microbatches < 1 or opts.dp < 1 or \
            opts.batch % (opts.microbatches * opts.dp) != 0:
        p.error("--batch must be a multiple of --microbatches x --dp")
    return opts


def lr_factor(opts, step):
    """cleave.lr_schedule's factor at `step` (see its ODS description)."""
    if step < opts.warmup_steps:
        return (step + 1) / opts.warmup_steps
    if opts.lr_schedule == "constant":
        return 1.0
    if step >= opts.total_steps:
        return opts.min_lr_factor
    progress = (step - opts.warmup_steps) / (opts.total_steps - opts.warmup_steps)
    decay = 1 - progress if opts.lr_schedule == "linear" else \
        0.5 * (1 + math.cos(math.pi * progress))
    return opts.min_lr_factor + (1 - opts.min_lr_factor) * decay


def save_params(named, directory):
    os.makedirs(directory, exist_ok=True)
    for name, value in named.items():
        np.save(os.path.join(directory, name + ".npy"),
                value.astype(np.float32))


def main(argv=None):
    opts = parse_args(argv)
    start = time.time()
    self_check()
    log = print if opts.verbose else (lambda *a, **k: None)

    out = opts.out
    ref_dir = os.path.join(out, "reference")
    data_dir = os.path.join(out, "data")
    os.makedirs(ref_dir, exist_ok=True)
    os.makedirs(data_dir, exist_ok=True)

    # 1. Model, built exactly as export_models.py builds it.
    torch.manual_seed(opts.seed)
    model, _, input_names, dynamic_axes = MODELS[opts.model]()
    model.train()

    # 3. Data (before the export, whose example inputs are the step-0 batch).
    data = make_data(opts.model, opts.samples, opts.seed)
    for name in input_names:
        np.save(os.path.join(data_dir, name + ".npy"), data[name])

    def batch(step):
        sel = batch_indices(step, opts.batch, opts.samples)
        if opts.model in zoo_models.MODELS:
            return tuple(torch.from_numpy(zoo_models.take_samples(
                opts.model, data[n], sel)) for n in input_names)
        return tuple(torch.from_numpy(data[n][sel]) for n in input_names)

    # 2. Export with the initial weights.
    proto, restored = export(model, batch(0), input_names, dynamic_axes,
                             os.path.join(out, "model.onnx"))
    initial = {n: p.detach().numpy().copy()
               for n, p in model.named_parameters()}
    save_params(initial, os.path.join(ref_dir, "initial_params"))

    # 5. Deterministic dropout in the reference run.
    dropouts = replace_dropouts(model, proto.graph, opts.dropout_seed)
    hash_dropouts = [m for m in model.modules() if isinstance(m, HashDropout)]

    # 4. Training.
    params = [p for _, p in model.named_parameters()]
    if opts.optimizer == "sgd":
        optimizer = torch.optim.SGD(
            params, lr=opts.lr, momentum=opts.momentum,
            dampening=opts.dampening, weight_decay=opts.weight_decay,
            nesterov=opts.nesterov)
    else:
        optimizer = torch.optim.AdamW(
            params, lr=opts.lr, betas=opts.betas, eps=opts.eps,
            weight_decay=opts.weight_decay)

    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(opts, step))

    stats = RunningStats(model) if opts.running_stats else None
    if stats:
        save_params(stats.values(), os.path.join(ref_dir, "initial_params"))

    losses = []
    for step in range(opts.steps):
        for m in hash_dropouts:
            m.step = step
        optimizer.zero_grad(set_to_none=True)
        inputs = batch(step)
        if opts.microbatches == 1:
            loss = model(*inputs)
            value = float(loss.item())  # the float32 value, as a Python float
            loss.backward()
        else:
            # The accumulation loop: each micro-batch's mean loss, weighted
            # by its share of the batch, adds its gradients.
            total = torch.zeros(())
            for rows in microbatch_rows(opts.batch, opts.microbatches,
                                        opts.dp):
                for m in hash_dropouts:
                    m.batch, m.rows = opts.batch, rows
                loss = model(*(t[rows] for t in inputs)) * \
                    (len(rows) / opts.batch)
                loss.backward()
                total += loss.detach()
            value = float(total.item())
        if not np.isfinite(value):
            raise RuntimeError(f"step {step}: loss is {value}")
        losses.append(value)
        log(f"step {step}: loss {value:.7g}")
        if opts.clip_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(params, opts.clip_grad_norm)
        optimizer.step()
        scheduler.step()

    with open(os.path.join(ref_dir, "losses.json"), "w") as f:
        json.dump(losses, f)
        f.write("\n")
    save_params({n: p.detach().numpy() for n, p in model.named_parameters()},
                os.path.join(ref_dir, "params"))
    if stats:
        save_params(stats.values(), os.path.join(ref_dir, "params"))

    # 6. Everything that determined the run.
    config = {
        "model": opts.model,
        "optimizer": opts.optimizer,
        "steps": opts.steps,
        "batch": opts.batch,
        "samples": opts.samples,
        "lr": opts.lr,
        "lr_schedule": opts.lr_schedule,
        "warmup_steps": opts.warmup_steps,
        "total_steps": opts.total_steps,
        "min_lr_factor": opts.min_lr_factor,
        "clip_grad_norm": opts.clip_grad_norm,
        "weight_decay": opts.weight_decay,
        "seed": opts.seed,
        "dropout_seed": opts.dropout_seed,
        "inputs": {n: {"shape": list(data[n].shape[1:]),
                       "dtype": str(data[n].dtype)} for n in input_names},
        "batch_rule": "step k uses samples (k*batch + j) % samples, "
                      "j = 0..batch-1",
        "dropout": dropouts,
        "microbatches": opts.microbatches,
        "microbatch_dp": opts.dp,
        "running_stats": opts.running_stats,
        "dropout_hash": "splitmix64; key = splitmix64(dropout_seed ^ "
                        "splitmix64(d*0x100000001B3 + k)); u = "
                        "splitmix64(key + i); keep = (u>>40)*2^-24 >= ratio; "
                        "out = keep ? x/(1-ratio) : 0",
        "export_restored_buffers": restored,
        "parameters": [n for n, _ in model.named_parameters()],
        "opset": export_models.OPSET,
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
    }
    if opts.optimizer == "sgd":
        config.update(momentum=opts.momentum, dampening=opts.dampening,
                      nesterov=opts.nesterov)
    else:
        config.update(betas=list(opts.betas), eps=opts.eps)
    with open(os.path.join(ref_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    log(f"losses {losses[0]:.6g} -> {losses[-1]:.6g} in "
        f"{time.time() - start:.2f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
