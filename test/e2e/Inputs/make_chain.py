"""A chain of about N nodes with N/2 parameters: x -> MatMul(w) ->
(Tanh, Mul by a parameter) x N/2 -> SoftmaxCrossEntropyLoss. Compile time
must grow about linearly with N (issue 16: a 20,000-node chain took over a
minute to reach C++; every per-node step that scanned all nodes or all
arguments was quadratic).

usage: make_chain.py N OUT.onnx
"""
import sys
import numpy as np
import onnx
from onnx import helper, TensorProto, numpy_helper
n = int(sys.argv[1])
nodes = [helper.make_node("MatMul", ["x", "w"], ["h0"])]
inits = [numpy_helper.from_array(np.full((3, 2), 0.1, np.float32), "w")]
prev = "h0"
for i in range(n // 2):
    nodes.append(helper.make_node("Tanh", [prev], [f"t{i}"]))
    inits.append(numpy_helper.from_array(np.full((2,), 1.0, np.float32), f"s{i}"))
    nodes.append(helper.make_node("Mul", [f"t{i}", f"s{i}"], [f"h{i+1}"]))
    prev = f"h{i+1}"
nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", [prev, "y"], ["loss"]))
g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
    helper.make_tensor_value_info("y", TensorProto.INT64, [4])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[2])
