"""Writes tiny.onnxtxt with one more parameter, 'b.exp_avg', added to the
logits: the name AdamW gives the first moment of 'b'.

usage: make_state_clash.py TINY.onnxtxt OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, parser

model = parser.parse_model(open(sys.argv[1]).read())
graph = model.graph
graph.initializer.append(
    numpy_helper.from_array(np.full(2, 5.0, np.float32), "b.exp_avg"))
gemm = graph.node[0]
gemm.output[0] = "h0"
graph.node.insert(1, helper.make_node("Add", ["h0", "b.exp_avg"], ["h"]))
onnx.checker.check_model(model)
onnx.save(model, sys.argv[2])
