#!/usr/bin/python3
"""Writes OUT/{gru,lstm,if,loop}.onnx: valid ONNX models whose loss goes
through a recurrent or control-flow operator (GRU, LSTM, If, Loop with
subgraphs), which cleave does not support."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2, 4])
loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
opset = [helper.make_opsetid("", 17)]
for op, gates, outputs in (("GRU", 3, ["y", "yh"]),
                           ("LSTM", 4, ["y", "yh", "yc"])):
    w = numpy_helper.from_array(np.full((1, 3 * gates, 4), 0.1, np.float32), "W")
    r = numpy_helper.from_array(np.full((1, 3 * gates, 3), 0.1, np.float32), "R")
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "W", "R"], outputs, hidden_size=3,
                          name="encoder_rnn"),
         helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)],
        op, [x], [loss], [w, r])
    onnx.save(helper.make_model(graph, opset_imports=opset),
              os.path.join(out, op.lower() + ".onnx"))

v = helper.make_tensor_value_info("v", TensorProto.FLOAT, [5, 2, 4])
cond = helper.make_tensor("c", TensorProto.BOOL, [], [True])
scale = numpy_helper.from_array(np.full((4,), 0.5, np.float32), "s")
then_g = helper.make_graph([helper.make_node("Mul", ["x", "s"], ["t"])],
                           "then", [], [helper.make_tensor_value_info(
                               "t", TensorProto.FLOAT, [5, 2, 4])])
else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else",
                           [], [helper.make_tensor_value_info(
                               "e", TensorProto.FLOAT, [5, 2, 4])])
graph = helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                      else_branch=else_g, name="gate"),
     helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)],
    "if", [x], [loss], [cond, scale])
onnx.save(helper.make_model(graph, opset_imports=opset),
          os.path.join(out, "if.onnx"))

body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Mul", ["v_in", "s"], ["v_out"])], "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []),
     helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [5, 2, 4])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [5, 2, 4])])
trips = helper.make_tensor("n", TensorProto.INT64, [], [3])
graph = helper.make_graph(
    [helper.make_node("Loop", ["n", "c", "x"], ["y"], body=body,
                      name="repeat"),
     helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)],
    "loop", [x], [loss], [trips, cond, scale])
onnx.save(helper.make_model(graph, opset_imports=opset),
          os.path.join(out, "loop.onnx"))
