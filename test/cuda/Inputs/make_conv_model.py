#!/usr/bin/python3
"""Writes a model of ONNX Convs of every shape the cuda target's two paths
take, and a data set for it, for test/cuda/conv-emulation.test.

  make_conv_model.py OUT      writes OUT/convs.onnx and OUT/data/<input>.npy

Each Conv reads a graph input times a trained multiplier (so its input
gradient is computed too), and the loss is the sum over the Convs of the
mean of their squared outputs. The Convs, by name:

  cuDNN path (symmetric pads)
    stride2    2-d, strides 2, pads 1, bias
    grouped    2-d, group 2, dilations 2, pads 1
    pointwise  2-d, 1x1 kernel, bias
    seq1d      1-d depthwise (group 4), stride 2, pads 1, bias
    rect2d     2-d, 2x3 kernel on 5x6, strides [1, 2], dilations [2, 1],
               pads [1, 0] (a swap of the spatial dims would show)
    vol3d      3-d, strides [1, 2, 1], dilations [1, 1, 2], pads [1, 0, 2],
               bias
  im2col path (asymmetric pads, which cuDNN cannot express)
    asym       2-d, group 2, dilations 2, pads [1, 0, 0, 1]
    asym1d     1-d, stride 2, pads [0, 1], bias
    sameupper  2-d, 2x2 kernel, auto_pad SAME_UPPER (pads 0 before, 1
               after)

From numpy.random.default_rng(0), drawn in this order: the multipliers,
1 + N(0, 0.1^2); each Conv's weight, N(0, 0.3^2), then bias, N(0, 0.1^2);
the inputs, N(0, 1), 4 samples each.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH, SAMPLES = 2, 4

# Graph inputs: name -> per-sample shape.
INPUTS = {"img": (4, 5, 5), "seq": (4, 7), "rect": (2, 5, 6),
          "vol": (2, 4, 5, 6)}

# name: (input, weight shape, bias, attributes)
CONVS = {
    "stride2": ("img", (2, 4, 3, 3), True,
                dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "grouped": ("img", (4, 2, 2, 2), False,
                dict(group=2, dilations=[2, 2], pads=[1, 1, 1, 1])),
    "pointwise": ("img", (3, 4, 1, 1), True, {}),
    "seq1d": ("seq", (4, 1, 3), True, dict(group=4, strides=[2], pads=[1, 1])),
    "rect2d": ("rect", (2, 2, 2, 3), False,
             dict(strides=[1, 2], dilations=[2, 1], pads=[1, 0, 1, 0])),
    "vol3d": ("vol", (3, 2, 3, 2, 3), True,
              dict(strides=[1, 2, 1], dilations=[1, 1, 2],
                   pads=[1, 0, 2, 1, 0, 2])),
    "asym": ("img", (4, 2, 2, 2), False,
             dict(group=2, dilations=[2, 2], pads=[1, 0, 0, 1])),
    "asym1d": ("seq", (2, 4, 2), True, dict(strides=[2], pads=[0, 1])),
    "sameupper": ("rect", (2, 2, 2, 2), False, dict(auto_pad="SAME_UPPER")),
}


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    out = argv[1]
    rng = np.random.default_rng(0)
    nodes, initializers = [], []

    def param(name, values):
        initializers.append(numpy_helper.from_array(
            np.asarray(values, np.float32), name))

    for name, shape in INPUTS.items():
        param(f"m_{name}", 1 + 0.1 * rng.standard_normal(shape))
        nodes.append(helper.make_node("Mul", [name, f"m_{name}"],
                                      [f"{name}_scaled"], name=f"{name}_mul"))
    means = []
    for name, (source, wshape, bias, attrs) in CONVS.items():
        param(f"{name}_w", 0.3 * rng.standard_normal(wshape))
        operands = [f"{source}_scaled", f"{name}_w"]
        if bias:
            param(f"{name}_b", 0.1 * rng.standard_normal(wshape[0]))
            operands.append(f"{name}_b")
        nodes += [
            helper.make_node("Conv", operands, [name], name=name, **attrs),
            helper.make_node("Mul", [name, name], [f"{name}_sq"],
                             name=f"{name}_sq"),
            helper.make_node("ReduceMean", [f"{name}_sq"], [f"{name}_mean"],
                             name=f"{name}_mean", keepdims=0),
        ]
        means.append(f"{name}_mean")
    total = means[0]
    for i, mean in enumerate(means[1:]):
        nodes.append(helper.make_node("Add", [total, mean], [f"sum{i}"],
                                      name=f"sum{i}"))
        total = f"sum{i}"
    nodes.append(helper.make_node("Identity", [total], ["loss"], name="loss"))

    graph = helper.make_graph(
        nodes, "convs",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                       [BATCH, *shape])
         for name, shape in INPUTS.items()],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        initializer=initializers)
    model = helper.make_model(graph, producer_name="cleave-test",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    onnx.save(model, os.path.join(out, "convs.onnx"))
    for name, shape in INPUTS.items():
        np.save(os.path.join(out, "data", name + ".npy"),
                rng.standard_normal((SAMPLES, *shape)).astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
