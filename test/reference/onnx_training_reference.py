#!/usr/bin/python3
"""A numpy implementation of the ONNX training spec for the model that
test/models/make_training_info_model.py builds: the least-squares loss
sum((X @ W + B - T)^2), its Gradient (the analytic derivative), and the
ai.onnx.preview.training Momentum operator exactly as the operator's spec
defines it, with T_count incremented and update_binding applied every step;
an initialization graph, if the model has one, sets its bound initializers
first.

    onnx_training_reference.py --model M.onnx --data DIR --steps N --out DIR

Writes DIR/losses.json (the loss of each step's forward pass, before its
update) and DIR/params/<name>.npy for every bound tensor after N steps.
Step k uses samples (k*B .. k*B+B-1) mod S of DIR/X.npy and DIR/T.npy.
"""

import argparse
import json
import os

import numpy as np
import onnx
from onnx import numpy_helper


def run_initialization(info):
    """The initialization graph's outputs by the initializer each is bound
    to (ONNX runs it once when training starts); only the ops the test
    model uses."""
    values = {}
    for node in info.initialization.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a)
                 for a in node.attribute}
        ins = [values[name] for name in node.input]
        if node.op_type == "Constant":
            out = numpy_helper.to_array(attrs["value"])
        elif node.op_type == "Transpose":
            out = np.transpose(ins[0], attrs["perm"])
        elif node.op_type == "Mul":
            out = ins[0] * ins[1]
        elif node.op_type == "Add":
            out = ins[0] + ins[1]
        elif node.op_type == "RandomNormal":
            # The numbers are the implementation's: NaN until --initial
            # gives the program's own.
            out = np.full(attrs["shape"], np.nan, np.float32)
        else:
            raise ValueError(f"no reference for {node.op_type}")
        values[node.output[0]] = out
    return {entry.key: values[entry.value]
            for entry in info.initialization_binding}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--initial", help="take the bound tensors' initial values "
                   "from DIR/<name>.npy (an initialization graph with random "
                   "ops, whose numbers ONNX leaves to the implementation)")
    a = p.parse_args()
    model = onnx.load(a.model)
    info = model.training_info[0]
    state = {i.name: numpy_helper.to_array(i).copy()
             for i in list(model.graph.initializer) + list(info.algorithm.initializer)}
    state.update(run_initialization(info))
    for entry in info.initialization_binding if a.initial else []:
        path = os.path.join(a.initial, entry.key + ".npy")
        if os.path.exists(path):
            state[entry.key] = np.load(path)
    momentum = next(n for n in info.algorithm.node if n.op_type == "Momentum")
    attrs = {x.name: x for x in momentum.attribute}
    alpha, beta = attrs["alpha"].f, attrs["beta"].f
    norm, mode = attrs["norm_coefficient"].f, attrs["mode"].s.decode()
    X, T = np.load(os.path.join(a.data, "X.npy")), np.load(os.path.join(a.data, "T.npy"))
    batch = model.graph.input[0].type.tensor_type.shape.dim[0].dim_value
    losses = []
    for k in range(a.steps):
        rows = [(k * batch + j) % len(X) for j in range(batch)]
        x, t = X[rows].astype(np.float64), T[rows].astype(np.float64)
        W, B = state["W"].astype(np.float64), state["B"].astype(np.float64)
        residual = x @ W + B - t
        losses.append(float(np.float32((residual ** 2).sum())))
        grads = {"W": x.T @ (2 * residual), "B": (2 * residual).sum(0)}
        # ONNX Momentum: R and T are the algorithm's R and T_count.
        r, count = float(state["R"]), int(state["T_count"])
        for name in ("W", "B"):
            x_, g, v = state[name].astype(np.float64), grads[name], state["V_" + name].astype(np.float64)
            g_reg = norm * x_ + g
            beta_adj = beta if count > 0 else 1.0
            v_new = alpha * v + beta_adj * g_reg
            x_new = x_ - r * (g_reg + alpha * v_new) if mode == "nesterov" else x_ - r * v_new
            state[name], state["V_" + name] = x_new.astype(np.float32), v_new.astype(np.float32)
        state["T_count"] = np.array(count + 1, dtype=np.int64)
    os.makedirs(os.path.join(a.out, "params"), exist_ok=True)
    with open(os.path.join(a.out, "losses.json"), "w") as f:
        json.dump(losses, f)
    for entry in info.update_binding:
        np.save(os.path.join(a.out, "params", entry.key + ".npy"), state[entry.key])


if __name__ == "__main__":
    main()
