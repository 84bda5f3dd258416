"""Writes OUT for SIDE [CHANNELS]: x [batch, 4, SIDE, SIDE] -> a 1x1
convolution to CHANNELS (default 8) channels -> a 3x3 convolution with
padding 1 (CHANNELS -> CHANNELS) -> flatten -> softmax cross entropy
against y. The 3x3 convolution runs forward, for its input gradient and
for its weight gradient: 3 products of 2 * batch * SIDE^2 * CHANNELS^2 * 9
operations. On a 1x1 image only its centre tap ever reads the input (the
last stage of a CNN on small images); on 2x2 every tap does at some output
position."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, side = sys.argv[1], int(sys.argv[2])
channels = int(sys.argv[3]) if len(sys.argv) > 3 else 8
rng = np.random.default_rng(0)
wa = numpy_helper.from_array(rng.normal(0, 0.2, (channels, 4, 1, 1)).astype(np.float32), "Wa")
wb = numpy_helper.from_array(rng.normal(0, 0.2, (channels, channels, 3, 3)).astype(np.float32), "Wb")
nodes = [helper.make_node("Conv", ["x", "Wa"], ["a"], name="pointwise"),
         helper.make_node("Conv", ["a", "Wb"], ["b"], name="dead_taps",
                          pads=[1, 1, 1, 1]),
         helper.make_node("Flatten", ["b"], ["scores"], name="flatten"),
         helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "y"], ["loss"], name="ce")]
graph = helper.make_graph(
    nodes, "dead_taps",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, side, side]),
     helper.make_tensor_value_info("y", TensorProto.INT64, ["batch"])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], [wa, wb])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, out)
