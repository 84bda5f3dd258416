"""Names tiny.onnxtxt's tensors and nodes after identifiers the generated
C++ already uses (runtime functions and types, C++ keywords and
alternative tokens, C library macros), to check that the emitter renames
its own identifiers around them.

usage: reserved_names.py IN.onnxtxt OUT.onnx
"""
import sys

import onnx
from onnx import parser

model = parser.parse_model(open(sys.argv[1]).read())
graph = model.graph
renames = {"x": "goto", "y": "errno", "w": "sendRecv", "b": "INFINITY",
           "h": "kNoPeer", "loss": "and"}
for node in graph.node:
    node.input[:] = [renames.get(n, n) for n in node.input]
    node.output[:] = [renames.get(n, n) for n in node.output]
graph.node[0].name = "StepContext"
graph.node[1].name = "meshCoord"
for info in list(graph.input) + list(graph.output):
    info.name = renames.get(info.name, info.name)
for init in graph.initializer:
    init.name = renames.get(init.name, init.name)
onnx.checker.check_model(model)
onnx.save(model, sys.argv[2])
