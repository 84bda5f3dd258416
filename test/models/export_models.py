#!/usr/bin/python3
"""Exports Cleave's reference training models from PyTorch to ONNX.

Each model's forward pass computes its own training loss, so every exported
graph has exactly one output, the scalar `loss`, and its parameters keep their
PyTorch state_dict names as initializers:

  mlp  784-128-64-10 MLP, cross-entropy; the batch dimension is symbolic
       (`batch`), to be bound with the importer's --input-shape flag
  mlp-bn  the MLP with BatchNorm1d after its first layer and Dropout after
       its second, exported in training mode with a static batch
  cnn  small MNIST CNN with BatchNorm and Dropout, exported in training mode
  resnet  one residual block, relu(bn(conv(h)) + h), in training mode
  gpt  tiny GPT-2-style decoder (pre-LayerNorm, Erf GELU, causal mask buffer)
  gpt-tied  the same with GPT-2's tied token embedding and output head

After each export the script runs the ONNX checker and shape inference and
prints the op types and initializer names; any failure exits non-zero.

Needs Debian's Python (python3-torch, python3-onnx):

  /usr/bin/python3 test/models/export_models.py --out /tmp/models
  /usr/bin/python3 test/models/export_models.py --out /tmp/models --only gpt
"""

import argparse
import math
import os
import sys
import warnings

import onnx
import torch
import torch.nn as nn

OPSET = 17


class MLP(nn.Module):
    def __init__(self, dims=(784, 128, 64, 10)):
        super().__init__()
        self.fc1 = nn.Linear(dims[0], dims[1])
        self.fc2 = nn.Linear(dims[1], dims[2])
        self.fc3 = nn.Linear(dims[2], dims[3])
        self.relu = nn.ReLU()
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        h = self.relu(self.fc1(x))
        h = self.relu(self.fc2(h))
        return self.loss_fn(self.fc3(h), y)


class MLPBatchNorm(nn.Module):
    """784-128-64-10 with BatchNorm1d(128) and Dropout(0.25): the MLP's
    layers, so that pipeline stages can cut it between its linear layers."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.bn1 = nn.BatchNorm1d(128)
        self.fc2 = nn.Linear(128, 64)
        self.dropout = nn.Dropout(0.25)
        self.fc3 = nn.Linear(64, 10)
        self.relu = nn.ReLU()
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        h = self.relu(self.bn1(self.fc1(x)))
        h = self.dropout(self.relu(self.fc2(h)))
        return self.loss_fn(self.fc3(h), y)


class CNN(nn.Module):
    """Keras' MNIST example, shrunk: 28x28 -> 28 -> 14 -> 12 -> 6."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3)
        # Without padding count_include_pad changes nothing numerically, but
        # True (the default) makes torch 1.13 emit a no-op Pad before the
        # AveragePool.
        self.pool2 = nn.AvgPool2d(2, count_include_pad=False)
        self.flatten = nn.Flatten()
        self.dropout = nn.Dropout(0.25)
        self.fc = nn.Linear(16 * 6 * 6, 10)
        self.relu = nn.ReLU()
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        h = self.pool1(self.relu(self.bn1(self.conv1(x))))
        h = self.pool2(self.relu(self.conv2(h)))
        h = self.dropout(self.flatten(h))
        return self.loss_fn(self.fc(h), y)


class KerasConvNet(nn.Module):
    """Keras' MNIST convnet example at full size: 3x3 convolutions 1 -> 32
    -> 64 channels on 28x28 (no padding), ReLU, 2x2 max-pool, dropout
    0.25, Linear 9216 -> 128, ReLU, dropout 0.5, Linear 128 -> 10.
    `convs` (in, out, kernel) and `dense` (widths) as bench/bench.py gives
    them."""

    def __init__(self, convs=((1, 32, 3), (32, 64, 3)),
                 dense=(64 * 12 * 12, 128, 10)):
        super().__init__()
        layers = []
        for cin, cout, k in convs:
            layers += [nn.Conv2d(cin, cout, k), nn.ReLU()]
        layers += [nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
                   nn.Linear(dense[0], dense[1]), nn.ReLU(), nn.Dropout(0.5),
                   nn.Linear(dense[1], dense[2])]
        self.body = nn.Sequential(*layers)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        return self.loss_fn(self.body(x), y)


class ResNet(nn.Module):
    """One residual block, relu(bn(conv(h)) + h): 28x28 -> 14 -> 7."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, stride=2, padding=1)
        self.bn_stem = nn.BatchNorm2d(8)
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(8 * 7 * 7, 10)
        self.relu = nn.ReLU()
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x, y):
        h = self.relu(self.bn_stem(self.stem(x)))
        h = self.relu(self.bn(self.conv(h)) + h)
        h = self.flatten(self.pool(h))
        return self.loss_fn(self.fc(h), y)


class GPTConfig:
    vocab_size = 64
    n_positions = 16
    d_model = 32
    n_head = 2
    n_layer = 2


def gelu(x):
    # Written out: opset 17 has no Gelu op, so this exports as Div/Erf/Add/Mul.
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.d_model = cfg.d_model
        self.head_dim = cfg.d_model // cfg.n_head
        self.c_attn = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.c_proj = nn.Linear(cfg.d_model, cfg.d_model)
        # A buffer rather than a mask computed per call, so the graph holds a
        # constant instead of Range/Trilu arithmetic.
        mask = torch.tril(torch.ones(cfg.n_positions, cfg.n_positions))
        self.register_buffer(
            "mask", mask.bool().view(1, 1, cfg.n_positions, cfg.n_positions))
        # A float32 scalar: a Python float here would export as a double
        # Constant that ONNX's Where rejects.
        self.neg_inf = torch.tensor(float("-inf"))

    def forward(self, x):
        b, t, d = x.shape
        hd = self.head_dim
        q, k, v = self.c_attn(x).split(self.d_model, dim=2)
        q = q.reshape(b, t, self.n_head, hd).transpose(1, 2)
        k = k.reshape(b, t, self.n_head, hd).transpose(1, 2)
        v = v.reshape(b, t, self.n_head, hd).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = torch.where(self.mask[:, :, :t, :t], att, self.neg_inf)
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
        return self.c_proj(y)


class MLPBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.d_model, 4 * cfg.d_model)
        self.c_proj = nn.Linear(4 * cfg.d_model, cfg.d_model)

    def forward(self, x):
        return self.c_proj(gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLPBlock(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """GPT-2 layout and names (wte, wpe, h.N, ln_f, lm_head), no dropout so
    that a PyTorch reference run is deterministic."""

    def __init__(self, cfg, tied=False):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.n_positions, cfg.d_model)
        # Position ids as a buffer (as Hugging Face's BERT/GPT-2 do), so no
        # Range op is exported.
        self.register_buffer("position_ids",
                             torch.arange(cfg.n_positions).view(1, -1))
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if tied:
            # GPT-2's weight tying: the output head is the token embedding.
            self.lm_head.weight = self.wte.weight
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(self.position_ids[:, :t])
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return self.loss_fn(logits.reshape(-1, logits.shape[-1]),
                            targets.reshape(-1))


def make_mlp():
    x = torch.randn(4, 784)
    y = torch.randint(0, 10, (4,))
    dynamic = {"x": {0: "batch"}, "y": {0: "batch"}}
    return MLP(), (x, y), ["x", "y"], dynamic


def make_mlp_wide():
    # fc1 (5376x784) and fc2 (800x5376) hold over 2^22 weights each, so at a
    # batch of 16 or 28-32 their forward products, and fc2's input gradient
    # with its SGD update, run the runtime's own kernels
    # (runtime/SkinnyGemm.h) instead of OpenBLAS.
    x = torch.randn(4, 784)
    y = torch.randint(0, 10, (4,))
    dynamic = {"x": {0: "batch"}, "y": {0: "batch"}}
    return MLP((784, 5376, 800, 10)), (x, y), ["x", "y"], dynamic


def make_mlp_bn():
    x = torch.randn(8, 784)
    y = torch.randint(0, 10, (8,))
    return MLPBatchNorm(), (x, y), ["x", "y"], None


def make_cnn():
    x = torch.randn(8, 1, 28, 28)
    y = torch.randint(0, 10, (8,))
    return CNN(), (x, y), ["x", "y"], None


def make_resnet():
    x = torch.randn(8, 1, 28, 28)
    y = torch.randint(0, 10, (8,))
    return ResNet(), (x, y), ["x", "y"], None


def make_gpt():
    cfg = GPTConfig()
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.n_positions))
    targets = torch.randint(0, cfg.vocab_size, (2, cfg.n_positions))
    return GPT(cfg), (idx, targets), ["idx", "targets"], None


def make_gpt_tied():
    cfg = GPTConfig()
    idx = torch.randint(0, cfg.vocab_size, (2, cfg.n_positions))
    targets = torch.randint(0, cfg.vocab_size, (2, cfg.n_positions))
    return GPT(cfg, tied=True), (idx, targets), ["idx", "targets"], None


def make_convnet():
    x = torch.randn(8, 1, 28, 28)
    y = torch.randint(0, 10, (8,))
    return KerasConvNet(), (x, y), ["x", "y"], None


MODELS = {"mlp": make_mlp, "mlp-wide": make_mlp_wide, "mlp-bn": make_mlp_bn,
          "cnn": make_cnn, "resnet": make_resnet, "convnet": make_convnet,
          "gpt": make_gpt, "gpt-tied": make_gpt_tied}


def export(name, out_dir):
    torch.manual_seed(0)
    model, args, input_names, dynamic_axes = MODELS[name]()
    model.train()
    # BatchNorm's num_batches_tracked counter only matters with momentum=None;
    # torch drops its update from the graph and says so on every export.
    warnings.filterwarnings(
        "ignore", message=".*Removing mutation from node aten::add_ on block "
        "input: '.*num_batches_tracked'")
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(
        model, args, path,
        input_names=input_names,
        output_names=["loss"],
        dynamic_axes=dynamic_axes,
        opset_version=OPSET,
        do_constant_folding=False,
        training=torch.onnx.TrainingMode.TRAINING)

    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    graph = inferred.graph
    if [o.name for o in graph.output] != ["loss"]:
        raise RuntimeError(f"{name}: expected the single output 'loss', got "
                           f"{[o.name for o in graph.output]}")

    def describe(values):
        out = []
        for v in values:
            t = v.type.tensor_type
            dims = [d.dim_param or str(d.dim_value) for d in t.shape.dim]
            elem = onnx.TensorProto.DataType.Name(t.elem_type).lower()
            out.append(f"{v.name}: {elem}[{', '.join(dims)}]")
        return ", ".join(out)

    print(f"{name}: {path} (opset {OPSET})")
    print("  inputs:", describe(graph.input))
    print("  outputs:", describe(graph.output))
    print("  ops:", sorted({n.op_type for n in graph.node}))
    print("  initializers:", [i.name for i in graph.initializer])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--only", choices=sorted(MODELS),
                        help="export just this model")
    opts = parser.parse_args()
    os.makedirs(opts.out, exist_ok=True)
    for name in [opts.only] if opts.only else MODELS:
        export(name, opts.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
