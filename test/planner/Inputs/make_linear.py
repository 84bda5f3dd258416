"""Writes linear.onnx: scores = x W^T (x [batch, K], W [N, K]), softmax
cross entropy against y: a model whose training step is two GEMMs of
2 * batch * K * N operations each (the forward product and W's gradient;
x is data, so no input gradient) and a few elementwise ops."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, k, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
w = numpy_helper.from_array(np.random.default_rng(0).normal(0, 0.02, (n, k)).astype(np.float32), "W")
nodes = [helper.make_node("Transpose", ["W"], ["Wt"], name="t", perm=[1, 0]),
         helper.make_node("MatMul", ["x", "Wt"], ["scores"], name="fc"),
         helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "y"], ["loss"], name="ce")]
graph = helper.make_graph(
    nodes, "linear",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k]),
     helper.make_tensor_value_info("y", TensorProto.INT64, ["batch"])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, out)
