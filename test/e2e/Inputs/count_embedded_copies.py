"""Prints how many times the binary holds each float initializer's bytes.

  count_embedded_copies.py MODEL.onnx BINARY

For every float initializer of at least 256 bytes: "<name>: <n> copies". A
program embeds each parameter's initial value once (the model it keeps for
--export-onnx has them stripped).
"""
import sys

import onnx
from onnx import numpy_helper

model = onnx.load(sys.argv[1])
binary = open(sys.argv[2], "rb").read()
for init in model.graph.initializer:
    data = numpy_helper.to_array(init)
    if data.dtype.kind != "f" or data.nbytes < 256:
        continue
    # 256 bytes from the middle of the tensor: unique to it.
    raw = data.tobytes()
    probe = raw[len(raw) // 2 - 128:len(raw) // 2 + 128]
    print(f"{init.name}: {binary.count(probe)} copies")
