"""Gives tiny.onnxtxt's tensors and nodes names with quotes, backslashes,
slashes, '..', '%' and a newline (ONNX allows any string), to check the
generated source quotes them and their files stay in their directory.

usage: rename_tensors.py IN.onnxtxt OUT.onnx
"""
import sys

import onnx
from onnx import parser


def rename(in_path, out_path, renames, node_names):
    """Writes in_path's model with tensors renamed by `renames` and nodes
    named `node_names` in order, checked by ONNX's checker."""
    model = parser.parse_model(open(in_path).read())
    graph = model.graph
    for node in graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    for node, name in zip(graph.node, node_names):
        node.name = name
    for info in list(graph.input) + list(graph.output):
        info.name = renames.get(info.name, info.name)
    for init in graph.initializer:
        init.name = renames.get(init.name, init.name)
    onnx.checker.check_model(model)
    onnx.save(model, out_path)


if __name__ == "__main__":
    rename(sys.argv[1], sys.argv[2],
           {"w": 'w"eight\\', "b": "../sub/b%", "y": 'lab"els',
            "loss": "lo\\ss"},
           ['gemm "1"\\', "cross\nentropy\\"])
