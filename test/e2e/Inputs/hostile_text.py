"""Outside text never becomes code: a model whose graph, node, tensor and
doc strings hold '"', '\\', newlines, '*/', '??/', NUL and non-UTF-8 bytes,
compiled with a TMPDIR holding a quote, a newline and C++ that would create
a marker file if it ever reached the program's source, trains to the same
parameters (bitwise) as the same model with plain names, its dump files
are named by the documented escape (runtime/Npy.h), and its log and trace
are JSON that name the nodes as the model does (U+FFFD for stray bytes).

usage: hostile_text.py TINY.onnxtxt WORKDIR CLEAVE
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import parser

tiny, work, cleave = sys.argv[1:4]
# The C++ an unescaped splice would run: it creates this file.
marker = os.path.join(work, "PWNED")
payload = '"\n);}\n#include <cstdio>\nstatic int pwn = (std::fopen("%s", "w"), 0);\n//??/\n*/' % marker

# Placeholders of the hostile names' lengths, replaced byte for byte in the
# serialized model (Python's protobuf refuses non-UTF-8 strings).
hostile = {
    b"W_______": b'w"\\\n*/??',
    b"B_______": b"b\x00tail\xff\xfe",
    b"Y_______": b"y??/\n\x01\x7f*",
    # In a node's name: the log and trace write U+FFFD for stray bytes.
    b"N_______": b'n\xffod\xfe\x01"e',
}


def build(path, rename):
    model = parser.parse_model(open(tiny).read())
    graph = model.graph
    names = {"w": "W_______", "b": "B_______", "y": "Y_______"} if rename else {}
    for node in graph.node:
        node.input[:] = [names.get(n, n) for n in node.input]
        node.output[:] = [names.get(n, n) for n in node.output]
    for info in list(graph.input) + list(graph.output):
        info.name = names.get(info.name, info.name)
    for init in graph.initializer:
        init.name = names.get(init.name, init.name)
    if rename:
        graph.name = payload
        graph.doc_string = payload
        model.doc_string = payload
        graph.node[0].name = payload
        graph.node[1].name = "*/ ??/\n\\N_______"
    data = model.SerializeToString()
    for placeholder, name in hostile.items():
        assert len(placeholder) == len(name)
        data = data.replace(placeholder, name)
    open(path, "wb").write(data)


def escape(name):
    out = ""
    for i, c in enumerate(name):
        if c in b"/%" or c < 0x20 or c == 0x7F or (i == 0 and c == ord(".")):
            out += "%%%02X" % c
        else:
            out += chr(c) if c < 0x80 else bytes([c]).decode("latin-1")
    return out


def run(args, env=None):
    result = subprocess.run(args, env=env, capture_output=True)
    if result.returncode != 0:
        sys.exit("FAILED: %r\n%s" % (args, result.stderr.decode(errors="replace")))
    return result


evil_tmp = os.path.join(work, 'tmp"\n);system("touch %s");//' % marker)
os.makedirs(evil_tmp.encode())
env = dict(os.environ, TMPDIR=evil_tmp)
for variant in ("plain", "hostile"):
    d = os.path.join(work, variant)
    os.makedirs(os.path.join(d, "data"))
    build(os.path.join(d, "model.onnx"), variant == "hostile")
    run([cleave, "compile", os.path.join(d, "model.onnx"), "--keep-source",
         "-o", os.path.join(d, "train")], env=env)
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)
    y = np.array([0, 1] * 4, np.int64)
    label = hostile[b"Y_______"] if variant == "hostile" else b"y"
    np.save(os.path.join(d, "data", "x.npy"), x)
    with open(os.path.join(d.encode(), b"data", escape(label).encode("latin-1") + b".npy"), "wb") as f:
        np.save(f, y)
    run([os.path.join(d, "train"), "--data", os.path.join(d, "data"),
         "--steps", "3", "--dump-params", os.path.join(d, "params"), "--quiet",
         "--log", os.path.join(d, "log.jsonl"),
         "--trace", os.path.join(d, "trace.json")],
        env=env)

assert not os.path.exists(marker), "the payload ran"
source = open(os.path.join(work, "hostile", "train.cpp"), "rb").read()
assert evil_tmp.encode() not in source, "TMPDIR reached the source"
# Node names land in comments, escaped: never with their newlines.
assert b"\n#include <cstdio>\nstatic int pwn" not in source, "the payload reached the source"
# The log and the trace are JSON whatever the names (the node's name in the
# trace as it is in the model).
json.loads(open(os.path.join(work, "hostile", "log.jsonl"), encoding="utf-8").readline())
trace = json.load(open(os.path.join(work, "hostile", "trace.json"), encoding="utf-8"))
names = {e["name"] for e in trace["traceEvents"]}
assert payload in names, "the node's name is not in the trace"
assert '*/ ??/\n\\n\ufffdod\ufffd\x01"e' in names, names
files = sorted(os.listdir(os.path.join(work.encode(), b"hostile", b"params")))
expected = sorted(escape(n).encode("latin-1") + b".npy"
                  for n in (hostile[b"W_______"], hostile[b"B_______"]))
assert files == expected, (files, expected)
for plain, odd in (("w", b"W_______"), ("b", b"B_______")):
    a = np.load(os.path.join(work, "plain", "params", plain + ".npy"))
    with open(os.path.join(work.encode(), b"hostile", b"params",
                           escape(hostile[odd]).encode("latin-1") + b".npy"), "rb") as f:
        b = np.load(f)
    assert a.tobytes() == b.tobytes(), (plain, a, b)
print("hostile text: OK, %d files" % len(files))
