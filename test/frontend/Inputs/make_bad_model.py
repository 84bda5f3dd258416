#!/usr/bin/python3
"""Writes small ONNX models (valid or deliberately broken) for the importer's
error tests; each KIND is one model, built with onnx.helper.

  make_bad_model.py truncated OUT             first half of a valid model
  make_bad_model.py not-onnx OUT              plain text, not protobuf
  make_bad_model.py empty OUT                 a zero-byte file
  make_bad_model.py named-unsupported OUT     Hardmax node named 'gate'
  make_bad_model.py named-shape-error OUT     MatMul 'proj' of [2,3] x [4,5]
  make_bad_model.py named-ok OUT              valid: MatMul 'proj', Relu 'act'
  make_bad_model.py external OUT LOCATION [OFFSET]
      initializer 'W' [4,3] float stored externally at LOCATION (48 bytes)
  make_bad_model.py weights OUT [NBYTES]      external data file for 'W'
  make_bad_model.py short-raw-data OUT        Slice 'cut' whose axes, the
      Constant 'axes', are an int64[1] of 1 byte of raw_data
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def info(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def model(nodes, inputs, outputs, initializer=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=list(initializer))
    m = helper.make_model(graph, producer_name="cleave-test",
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def relu_model():
    return model([helper.make_node("Relu", ["X"], ["Y"], name="act")],
                 [info("X", [2, 4])], [info("Y", [2, 4])])


def external_model(location, offset):
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "W")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset),
                       ("length", "48")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    return model([helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")],
                 [info("X", [2, 4])], [info("Y", [2, 3])], [w])


def main(argv):
    kind, out = argv[1], argv[2]
    if kind == "truncated":
        data = relu_model().SerializeToString()
        # Sanity: the whole model is valid; only its first half is written.
        onnx.checker.check_model(relu_model())
        open(out, "wb").write(data[:len(data) // 2])
    elif kind == "not-onnx":
        open(out, "w").write("this is a plain text file, not an ONNX model\n"
                             "weights: 1 2 3\n")
    elif kind == "empty":
        open(out, "wb").close()
    elif kind == "named-unsupported":
        onnx.save(model(
            [helper.make_node("Relu", ["X"], ["H"], name="act"),
             helper.make_node("Hardmax", ["H"], ["Y"], name="gate")],
            [info("X", [2, 4])], [info("Y", [2, 4])]), out)
    elif kind == "named-shape-error":
        onnx.save(model(
            [helper.make_node("Relu", ["A"], ["R"], name="act"),
             helper.make_node("MatMul", ["R", "B"], ["Y"], name="proj")],
            [info("A", [2, 3]), info("B", [4, 5])], [info("Y", [2, 5])]), out)
    elif kind == "named-ok":
        w = numpy_helper.from_array(np.ones((4, 3), np.float32), "W")
        onnx.save(model(
            [helper.make_node("MatMul", ["X", "W"], ["H"], name="proj"),
             helper.make_node("Relu", ["H"], ["Y"], name="act")],
            [info("X", [2, 4])], [info("Y", [2, 3])], [w]), out)
    elif kind == "external":
        offset = argv[4] if len(argv) > 4 else "0"
        onnx.save(external_model(argv[3], offset), out)
    elif kind == "short-raw-data":
        axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
        axes.raw_data = b"\x01"  # an int64 needs 8 bytes
        starts = numpy_helper.from_array(np.array([0], np.int64), "starts")
        ends = numpy_helper.from_array(np.array([2], np.int64), "ends")
        onnx.save(model(
            [helper.make_node("Constant", [], ["a"], name="axes", value=axes),
             helper.make_node("Slice", ["X", "starts", "ends", "a"], ["Y"],
                              name="cut")],
            [info("X", [2, 4])], [info("Y", [2, 2])], [starts, ends]), out)
    elif kind == "weights":
        nbytes = int(argv[3]) if len(argv) > 3 else 48
        open(out, "wb").write(np.ones((4, 3), np.float32).tobytes()[:nbytes])
    else:
        sys.exit(f"unknown kind '{kind}'")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
