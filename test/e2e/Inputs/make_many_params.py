"""Writes a model with eight small parameters p_0..p_7 (float[3], added to
the input one after another) and one larger w (float[3, 200]), each with
its own seeded random value, so that a file read for the wrong tensor
changes the losses.

usage: make_many_params.py OUT.onnx [--nul]
  --nul   name the eight 'p' followed by a NUL byte or a control character
          and a distinct tail ('p\\0a', 'p\\0b', ..., 'p\\x01', 'p\\n', ...):
          names that are equal up to their first NUL, or differ only in
          bytes a file name cannot show
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, nul = sys.argv[1], "--nul" in sys.argv[2:]
names = (["p\0a", "p\0b", "p\0c", "p\0d", "p\x01", "p\x1f", "p\n", "p\x7f"]
         if nul else ["p_%d" % i for i in range(8)])
rng = np.random.default_rng(0)
inits, nodes, h = [], [], "x"
for i, name in enumerate(names):
    inits.append(numpy_helper.from_array(
        rng.standard_normal(3).astype(np.float32), name))
    nodes.append(helper.make_node("Add", [h, name], ["h%d" % i], name="add%d" % i))
    h = "h%d" % i
inits.append(numpy_helper.from_array(
    (0.1 * rng.standard_normal((3, 200))).astype(np.float32), "w"))
nodes.append(helper.make_node("MatMul", [h, "w"], ["z"], name="matmul"))
nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", ["z", "y"], ["loss"],
                              name="loss"))
graph = helper.make_graph(
    nodes, "many_params",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
     helper.make_tensor_value_info("y", TensorProto.INT64, [4])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, out)
