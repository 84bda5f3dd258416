#!/usr/bin/python3
"""Writes an inference model with RandomNormal (twice, same attributes) and
RandomUniform outputs of 20000 numbers each, for random.test.

  make_random_model.py OUT [--bad]   (--bad: RandomUniform with low > high)
"""
import sys

import onnx
from onnx import TensorProto, helper

bad = "--bad" in sys.argv
nodes = [
    helper.make_node("RandomNormal", [], ["normal"], name="normal", shape=[20000],
                     mean=1.0, scale=2.0, seed=3.0),
    helper.make_node("RandomNormal", [], ["normal2"], name="normal2",
                     shape=[20000], mean=1.0, scale=2.0, seed=3.0),
    helper.make_node("RandomUniform", [], ["uniform"], name="uniform",
                     shape=[20000], low=3.0 if bad else -1.0,
                     high=-1.0 if bad else 3.0),
]
outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [20000])
           for name in ("normal", "normal2", "uniform")]
graph = helper.make_graph(nodes, "random", [], outputs)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, sys.argv[1])
