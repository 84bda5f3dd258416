"""Writes an MLP whose forward multiply-adds and work disagree: four 64x64
MatMuls (batch 64) with ReLUs after the first two and, after the third, a
chain of six elementwise ops (Tanh, Sigmoid, Mul, twice) that multiply
little but read and write as many bytes as a MatMul each, then a
softmax cross-entropy loss.

  /usr/bin/python3 make_uneven_mlp.py OUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDTH = 64
BATCH = 64


def main():
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(
        (rng.standard_normal((WIDTH, WIDTH)) / 8).astype(np.float32),
        f"w{i}") for i in range(1, 5)]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="MatMul_1"),
        helper.make_node("Relu", ["h1"], ["r1"], name="Relu_1"),
        helper.make_node("MatMul", ["r1", "w2"], ["h2"], name="MatMul_2"),
        helper.make_node("Relu", ["h2"], ["r2"], name="Relu_2"),
        helper.make_node("MatMul", ["r2", "w3"], ["h3"], name="MatMul_3"),
        helper.make_node("Tanh", ["h3"], ["t1"], name="Tanh_1"),
        helper.make_node("Sigmoid", ["t1"], ["s1"], name="Sigmoid_1"),
        helper.make_node("Mul", ["t1", "s1"], ["m1"], name="Mul_1"),
        helper.make_node("Tanh", ["m1"], ["t2"], name="Tanh_2"),
        helper.make_node("Sigmoid", ["t2"], ["s2"], name="Sigmoid_2"),
        helper.make_node("Mul", ["t2", "s2"], ["m2"], name="Mul_2"),
        helper.make_node("MatMul", ["m2", "w4"], ["h4"], name="MatMul_4"),
        helper.make_node("SoftmaxCrossEntropyLoss", ["h4", "y"], ["loss"],
                         name="Loss"),
    ]
    graph = helper.make_graph(
        nodes, "uneven",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, WIDTH]),
         helper.make_tensor_value_info("y", TensorProto.INT64, [BATCH])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
