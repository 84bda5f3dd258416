#!/usr/bin/python3
"""Writes a GPT training graph of any size as ONNX: the loss graph Cleave
trains (token and position embeddings, N pre-LayerNorm decoder blocks with
causal self-attention and a GELU MLP, a final LayerNorm, an output head and
cross entropy), laid out and named as GPT-2 exported by torch.onnx
(test/models/export_models.py: wte, wpe, h.N.attn.c_attn, ..., lm_head), so
that `--strategy megatron` recognises its blocks.

Weights are external data in one file beside the model, written as random
values (--data random, for models small enough to train), as a sparse
placeholder of the right size (--data sparse: no disk used), or not at all
(--data none): `cleave plan` reads only shapes. The batch dim of the
inputs is the symbolic `batch`.

  /usr/bin/python3 scripts/make_gpt_skeleton.py -o gpt175b.onnx \\
      --layers 96 --hidden 12288 --heads 96 --seq 2048 --vocab 51200 --data none

--qkv-layout chooses how the fused q/k/v projection's 3 * hidden outputs
are ordered: gpt2 (the default) as GPT-2's c_attn, all of q, then k, then
v, split before the heads; megatron as Megatron-LM's GPT, per head (its q,
k and v side by side), the heads exposed before the split, so that a
contiguous block of the outputs is whole heads and `--strategy megatron`
splits the projection over the tensor axis (it keeps GPT-2's whole).
"""

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="model file (.onnx)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--vocab", type=int, default=64)
    parser.add_argument("--data", choices=["random", "sparse", "none"], default="random",
                        help="the external data file: random values, a sparse "
                             "placeholder, or none written")
    parser.add_argument("--qkv-layout", choices=["gpt2", "megatron"], default="gpt2",
                        help="order of the fused q/k/v outputs: GPT-2's (q, k, v) "
                             "or Megatron-LM's (per head)")
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    if opts.hidden % opts.heads:
        sys.exit("make_gpt_skeleton: --hidden must be a multiple of --heads")
    for name in ("layers", "hidden", "heads", "seq", "vocab"):
        if getattr(opts, name) < 1:
            sys.exit(f"make_gpt_skeleton: --{name} must be at least 1")

    d, t, v, heads = opts.hidden, opts.seq, opts.vocab, opts.heads
    hd = d // heads
    data_name = os.path.basename(opts.output) + ".data"
    data_path = os.path.join(os.path.dirname(os.path.abspath(opts.output)), data_name)
    rng = np.random.default_rng(opts.seed)

    nodes, initializers = [], []
    weights = []  # (name, shape, init): external float tensors, in file order
    counter = [0]

    def const(values, dtype=np.int64):
        name = f"/const_{counter[0]}"
        counter[0] += 1
        nodes.append(helper.make_node(
            "Constant", [], [name], name=name,
            value=numpy_helper.from_array(np.array(values, dtype=dtype), name)))
        return name

    def node(op, inputs, name, n_out=1, **attrs):
        outputs = [f"{name}_output_{i}" for i in range(n_out)]
        nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs[0] if n_out == 1 else outputs

    def weight(name, shape, init):
        weights.append((name, shape, init))
        return name

    def linear(x, prefix, n_in, n_out, bias=True):
        w = weight(f"{prefix}.weight", [n_out, n_in], "normal")
        wt = node("Transpose", [w], f"/{prefix}/Transpose", perm=[1, 0])
        y = node("MatMul", [x, wt], f"/{prefix}/MatMul")
        if bias:
            b = weight(f"{prefix}.bias", [n_out], "zeros")
            y = node("Add", [b, y], f"/{prefix}/Add")
        return y

    def layer_norm(x, prefix):
        g = weight(f"{prefix}.weight", [d], "ones")
        b = weight(f"{prefix}.bias", [d], "zeros")
        return node("LayerNormalization", [x, g, b], f"/{prefix}/LayerNormalization",
                    axis=-1, epsilon=1e-5)

    # Embeddings.
    initializers.append(numpy_helper.from_array(
        np.arange(t, dtype=np.int64).reshape(1, t), "position_ids"))
    initializers.append(numpy_helper.from_array(
        np.tril(np.ones((t, t), dtype=bool)).reshape(1, 1, t, t), "attn.mask"))
    tok = node("Gather", [weight("wte.weight", [v, d], "normal"), "idx"], "/wte/Gather")
    pos = node("Gather", [weight("wpe.weight", [t, d], "normal"), "position_ids"],
               "/wpe/Gather")
    x = node("Add", [tok, pos], "/Add")

    heads_shape = const([-1, t, heads, hd])
    qkv_heads_shape = const([-1, t, heads, 3 * hd])
    merged_shape = const([-1, t, d])
    for i in range(opts.layers):
        p = f"h.{i}"
        # Attention.
        h = layer_norm(x, f"{p}.ln_1")
        qkv = linear(h, f"{p}.attn.c_attn", d, 3 * d)
        if opts.qkv_layout == "gpt2":
            q, k, vv = node("Split", [qkv, const([d, d, d])], f"/{p}/attn/Split", n_out=3,
                            axis=2)
            q = node("Reshape", [q, heads_shape], f"/{p}/attn/Reshape")
            k = node("Reshape", [k, heads_shape], f"/{p}/attn/Reshape_1")
            vv = node("Reshape", [vv, heads_shape], f"/{p}/attn/Reshape_2")
        else:
            per_head = node("Reshape", [qkv, qkv_heads_shape], f"/{p}/attn/Reshape")
            q, k, vv = node("Split", [per_head, const([hd, hd, hd])], f"/{p}/attn/Split",
                            n_out=3, axis=3)
        q = node("Transpose", [q], f"/{p}/attn/Transpose", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"/{p}/attn/Transpose_2", perm=[0, 2, 3, 1])
        vv = node("Transpose", [vv], f"/{p}/attn/Transpose_1", perm=[0, 2, 1, 3])
        att = node("MatMul", [q, k], f"/{p}/attn/MatMul")
        att = node("Mul", [att, const(1.0 / math.sqrt(hd), np.float32)], f"/{p}/attn/Mul")
        att = node("Where", ["attn.mask", att, const(float("-inf"), np.float32)],
                   f"/{p}/attn/Where")
        att = node("Softmax", [att], f"/{p}/attn/Softmax", axis=-1)
        y = node("MatMul", [att, vv], f"/{p}/attn/MatMul_1")
        y = node("Transpose", [y], f"/{p}/attn/Transpose_3", perm=[0, 2, 1, 3])
        y = node("Reshape", [y, merged_shape], f"/{p}/attn/Reshape_3")
        x = node("Add", [x, linear(y, f"{p}.attn.c_proj", d, d)], f"/{p}/Add")
        # MLP with GELU written out (opset 17 has no Gelu).
        h = layer_norm(x, f"{p}.ln_2")
        h = linear(h, f"{p}.mlp.c_fc", d, 4 * d)
        e = node("Erf", [node("Div", [h, const(math.sqrt(2.0), np.float32)],
                              f"/{p}/mlp/Div")], f"/{p}/mlp/Erf")
        e = node("Add", [e, const(1.0, np.float32)], f"/{p}/mlp/Add")
        h = node("Mul", [node("Mul", [h, e], f"/{p}/mlp/Mul"), const(0.5, np.float32)],
                 f"/{p}/mlp/Mul_1")
        x = node("Add", [x, linear(h, f"{p}.mlp.c_proj", 4 * d, d)], f"/{p}/Add_1")

    x = layer_norm(x, "ln_f")
    logits = linear(x, "lm_head", d, v, bias=False)
    scores = node("Reshape", [logits, const([-1, v])], "/Reshape")
    labels = node("Reshape", ["targets", const([-1])], "/Reshape_1")
    nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", [scores, labels], ["loss"],
                                  name="/loss_fn/SoftmaxCrossEntropyLoss",
                                  reduction="mean"))

    # External data: one file, 64-byte aligned offsets.
    offset = 0
    data = open(data_path, "wb") if opts.data != "none" else None
    for name, shape, init in weights:
        tensor = TensorProto()
        tensor.name = name
        tensor.data_type = TensorProto.FLOAT
        tensor.dims.extend(shape)
        tensor.data_location = TensorProto.EXTERNAL
        length = 4 * int(np.prod(shape))
        for key, value in (("location", data_name), ("offset", str(offset)),
                           ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        if opts.data == "random":
            data.seek(offset)
            if init == "normal":
                values = rng.normal(0.0, 0.02, size=shape).astype(np.float32)
            else:
                values = np.full(shape, 1.0 if init == "ones" else 0.0, np.float32)
            data.write(values.tobytes())
        offset += (length + 63) // 64 * 64
        initializers.append(tensor)
    if data:
        data.truncate(offset)  # sparse for --data sparse
        data.close()

    graph = helper.make_graph(
        nodes, "gpt",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, ["batch", t]),
         helper.make_tensor_value_info("targets", TensorProto.INT64, ["batch", t])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="cleave make_gpt_skeleton")
    model.ir_version = 8
    with open(opts.output, "wb") as f:
        f.write(model.SerializeToString())
    params = sum(int(np.prod(s)) for _, s, _ in weights)
    print(f"{opts.output}: {opts.layers} layers, hidden {d}, {heads} heads, seq {t}, "
          f"vocab {v}: {params} parameters ({params * 4} bytes of external data, "
          f"{opts.data})")


if __name__ == "__main__":
    main()
