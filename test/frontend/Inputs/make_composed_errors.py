"""Writes OUT/<case>.onnx: models whose composed operators (Resize, Einsum,
Clip, ConvTranspose, Pad, shape folding) are given values the importer must
refuse with a message naming the node, not crash on."""
import os
import sys

import onnx
from onnx import parser

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
head = '<ir_version: 8, opset_import: ["" : 17]>\n'
cases = {
    "resize-nearest-mode": '''g (float[1, 1, 2, 2] x) => (float[1, 1, 4, 4] y) {
  s = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize <mode = "nearest", nearest_mode = "round_to_odd"> (x, , s)
}''',
    "resize-zero-scale": '''g (float[1, 1, 2, 2] x) => (float[1, 1, 2, 2] y) {
  s = Constant <value = float[4] {1.0, 0.0, 1.0, 1.0}> ()
  y = Resize <mode = "linear"> (x, , s)
}''',
    "einsum-repeated-output": '''g (float[3, 3] x) => (float[3, 3] y) {
  y = Einsum <equation = "ij->ii"> (x)
}''',
    "clip-bounds-rank": '''g (float[4] x) => (float[4] y) {
  lo = Constant <value = float[1] {0.0}> ()
  y = Clip(x, lo)
}''',
    "conv-transpose-auto-pad": '''g (float[1, 2, 3, 3] x, float[2, 1, 2, 2] w) => (float[1, 1, 6, 6] y) {
  y = ConvTranspose <strides = [2, 2], auto_pad = "SAME_MIDDLE"> (x, w)
}''',
    "fold-overflow": '''g (float[2] x) => (float[2] y) {
  a = Constant <value = int64[1] {-9223372036854775808}> ()
  b = Constant <value = int64[1] {-1}> ()
  c = Div(a, b)
  y = Identity(x)
  z = Identity(c)
}''',
    "pad-wrap": '''g (float[2, 3] x) => (float[2, 5] y) {
  p = Constant <value = int64[4] {0, 1, 0, 1}> ()
  y = Pad <mode = "wrap"> (x, p)
}''',
    "pad-reflect-too-far": '''g (float[2, 3] x) => (float[2, 9] y) {
  p = Constant <value = int64[4] {0, 3, 0, 3}> ()
  y = Pad <mode = "reflect"> (x, p)
}''',
    "resize-cubic": '''g (float[1, 1, 2, 2] x) => (float[1, 1, 4, 4] y) {
  s = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize <mode = "cubic"> (x, , s)
}''',
    "einsum-diagonal": '''g (float[3, 3] x) => (float[3] y) {
  y = Einsum <equation = "ii->i"> (x)
}''',
    "global-pool-rank": '''g (float[2, 3] x) => (float[2, 3] y) {
  y = GlobalAveragePool(x)
}''',
}
for name, text in cases.items():
    model = parser.parse_model(head + text)
    onnx.save(model, os.path.join(out, name + ".onnx"))
