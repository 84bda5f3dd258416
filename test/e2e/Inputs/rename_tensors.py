"""Gives tiny.onnxtxt's tensors and nodes names with quotes, backslashes,
slashes, '..', '%' and a newline (ONNX allows any string), to check the
generated source quotes them and their files stay in their directory.

usage: rename_tensors.py IN.onnxtxt OUT.onnx
"""
import sys

import onnx
from onnx import parser

model = parser.parse_model(open(sys.argv[1]).read())
graph = model.graph
renames = {"w": 'w"eight\\', "b": "../sub/b%", "y": 'lab"els',
           "loss": "lo\\ss"}
for node in graph.node:
    node.input[:] = [renames.get(n, n) for n in node.input]
    node.output[:] = [renames.get(n, n) for n in node.output]
graph.node[0].name = 'gemm "1"\\'
graph.node[1].name = "cross\nentropy\\"
for info in list(graph.input) + list(graph.output):
    info.name = renames.get(info.name, info.name)
for init in graph.initializer:
    init.name = renames.get(init.name, init.name)
onnx.checker.check_model(model)
onnx.save(model, sys.argv[2])
