#!/usr/bin/python3
"""Writes a small ONNX model that carries its own training step.

The inference graph computes a least-squares loss

  loss = ReduceSum((X @ W + B - T)^2)      X [8,4], T [8,2], W [4,2], B [2]

and training_info[0].algorithm holds one step of SGD with momentum in the
ai.onnx.preview.training style: a Gradient node (dloss/dW, dloss/dB), a
Momentum node, and an increment of the step count. update_binding writes the
new W, B, velocities and step count back to their initializers.

  /usr/bin/python3 test/models/make_training_info_model.py --out m.onnx

--initialization adds an initialization graph (Constant, Transpose, Mul,
Add) whose outputs initialization_binding puts into W, B and the
algorithm's learning rate R before training starts; --initialization
random draws W's values with RandomNormal instead.

--broken KIND writes a deliberately wrong variant for the importer's error
tests instead (the checks, the ONNX checker's and this script's own for
training_info, which the checker ignores, run on the good model only):

  bad-binding-key    an update_binding key names no initializer
  bad-binding-value  an update_binding value names no algorithm output
  bad-gradient-xs    the Gradient node's xs names an unknown tensor
  gradient-xs-twice  the Gradient node's xs names W twice
  bad-init-shape     the initialization graph's W is 2x4, W is 4x2
  bad-init-key       an initialization_binding key names no initializer
  bad-init-value     an initialization_binding value names no output
  init-unsupported   the initialization graph uses Hardmax (not supported)
  init-no-graph      initialization_binding without an initialization graph
  algo-init-shadow   the algorithm has an initializer named W, as the model
  algo-bad-attr      the Momentum node has an attribute Momentum does not know
"""

import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TRAINING_DOMAIN = "ai.onnx.preview.training"
BROKEN_KINDS = ("bad-binding-key", "bad-binding-value", "bad-gradient-xs",
                "gradient-xs-twice",
                "bad-init-shape", "bad-init-key", "bad-init-value",
                "init-unsupported", "init-no-graph", "algo-init-shadow",
                "algo-bad-attr")


def tensor_info(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def inference_graph():
    rng = np.random.RandomState(0)
    w = rng.standard_normal((4, 2)).astype(np.float32)
    b = rng.standard_normal((2,)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["XW"], name="matmul"),
        helper.make_node("Add", ["XW", "B"], ["pred"], name="add_bias"),
        helper.make_node("Sub", ["pred", "T"], ["diff"], name="residual"),
        helper.make_node("Mul", ["diff", "diff"], ["sq"], name="square"),
        helper.make_node(
            "Constant", [], ["sum_axes"], name="sum_axes",
            value=numpy_helper.from_array(np.array([0, 1], np.int64))),
        helper.make_node("ReduceSum", ["sq", "sum_axes"], ["loss"],
                         name="sum", keepdims=0),
    ]
    return helper.make_graph(
        nodes, "least_squares",
        inputs=[tensor_info("X", TensorProto.FLOAT, [8, 4]),
                tensor_info("T", TensorProto.FLOAT, [8, 2])],
        outputs=[tensor_info("loss", TensorProto.FLOAT, [])],
        initializer=[numpy_helper.from_array(w, "W"),
                     numpy_helper.from_array(b, "B")])


def algorithm_graph(broken):
    xs = ["W", "B"]
    if broken == "bad-gradient-xs":
        xs = ["W", "B_typo"]
    if broken == "gradient-xs-twice":
        xs = ["W", "W"]
    nodes = [
        helper.make_node(
            "Gradient", ["W", "B", "X", "T"], ["dW", "dB"], name="gradient",
            domain=TRAINING_DOMAIN, xs=xs, zs=["X", "T"], y="loss"),
        helper.make_node(
            "Momentum",
            ["R", "T_count", "W", "B", "dW", "dB", "V_W", "V_B"],
            ["W_new", "B_new", "V_W_new", "V_B_new"], name="momentum",
            domain=TRAINING_DOMAIN, alpha=0.9, beta=1.0, mode="standard",
            norm_coefficient=0.0),
        helper.make_node(
            "Constant", [], ["one"], name="one",
            value=numpy_helper.from_array(np.array(1, np.int64))),
        helper.make_node("Add", ["T_count", "one"], ["T_count_new"],
                         name="step_count"),
    ]
    initializers = [
        numpy_helper.from_array(np.array(0.1, np.float32), "R"),
        numpy_helper.from_array(np.array(0, np.int64), "T_count"),
        numpy_helper.from_array(np.zeros((4, 2), np.float32), "V_W"),
        numpy_helper.from_array(np.zeros((2,), np.float32), "V_B"),
    ]
    if broken == "algo-bad-attr":
        nodes[1].attribute.append(helper.make_attribute("decay_factor", 0.5))
    if broken == "algo-init-shadow":
        initializers.append(
            numpy_helper.from_array(np.zeros((4, 2), np.float32), "W"))
    outputs = [
        tensor_info("W_new", TensorProto.FLOAT, [4, 2]),
        tensor_info("B_new", TensorProto.FLOAT, [2]),
        tensor_info("V_W_new", TensorProto.FLOAT, [4, 2]),
        tensor_info("V_B_new", TensorProto.FLOAT, [2]),
        tensor_info("T_count_new", TensorProto.INT64, []),
    ]
    return helper.make_graph(nodes, "momentum_step", inputs=[],
                             outputs=outputs, initializer=initializers)


def update_binding(broken):
    binding = [("W", "W_new"), ("B", "B_new"), ("V_W", "V_W_new"),
               ("V_B", "V_B_new"), ("T_count", "T_count_new")]
    if broken == "bad-binding-key":
        binding[0] = ("W_missing", "W_new")
    elif broken == "bad-binding-value":
        binding[0] = ("W", "W_nonexistent")
    return binding


def initialization_graph(broken, random):
    """W = 0.5 * transpose(W0), B = B0 + 1, R = 0.05 (W0 from RandomNormal
    when `random`); bad-init-shape makes W's value 2x4 instead of 4x2,
    init-unsupported takes Hardmax of B0."""
    rng = np.random.RandomState(1)
    w0 = rng.standard_normal((2, 4)).astype(np.float32)
    b0 = rng.standard_normal((2,)).astype(np.float32)

    def constant(name, value):
        return helper.make_node("Constant", [], [name], name=name,
                                value=numpy_helper.from_array(value))
    w_shape = [2, 4] if broken == "bad-init-shape" else [4, 2]
    nodes = [
        helper.make_node("RandomNormal", [], ["W0"], name="random_w0",
                         shape=[2, 4], seed=1.0)
        if random else constant("W0", w0),
        constant("B0", b0),
        constant("half", np.array(0.5, np.float32)),
        constant("one_f", np.array(1.0, np.float32)),
        constant("R_init", np.array(0.05, np.float32)),
        helper.make_node("Transpose", ["W0"], ["W0_t"], name="transpose",
                         perm=[0, 1] if broken == "bad-init-shape" else [1, 0]),
        helper.make_node("Mul", ["W0_t", "half"], ["W_init"], name="scale"),
        helper.make_node("Add", ["B0", "one_f"], ["B_init"], name="shift"),
    ]
    if broken == "init-unsupported":
        nodes.insert(2, helper.make_node("Hardmax", ["B0"], ["B0_abs"], name="hardmax"))
        nodes[-1].input[0] = "B0_abs"
    outputs = [tensor_info("W_init", TensorProto.FLOAT, w_shape),
               tensor_info("B_init", TensorProto.FLOAT, [2]),
               tensor_info("R_init", TensorProto.FLOAT, [])]
    return helper.make_graph(nodes, "initialization", inputs=[],
                             outputs=outputs)


def initialization_binding(broken):
    binding = [("W", "W_init"), ("B", "B_init"), ("R", "R_init")]
    if broken == "bad-init-key":
        binding[0] = ("W_missing", "W_init")
    elif broken == "bad-init-value":
        binding[1] = ("B", "B_nonexistent")
    return binding


def make_model(broken=None, initialization=None):
    model = helper.make_model(
        inference_graph(),
        producer_name="cleave-test",
        opset_imports=[helper.make_opsetid("", 17),
                       helper.make_opsetid(TRAINING_DOMAIN, 1)])
    model.ir_version = 8
    with_init = initialization or broken in ("bad-init-shape", "bad-init-key",
                                             "bad-init-value",
                                             "init-unsupported")
    with_binding = with_init or broken == "init-no-graph"
    model.training_info.append(helper.make_training_info(
        algorithm_graph(broken), update_binding(broken),
        initialization_graph(broken, initialization == "random")
        if with_init else None,
        initialization_binding(broken) if with_binding else None))
    return model


def check_training_info(model):
    """The ONNX checker (1.12) ignores training_info, so check what the spec
    asks for by hand: the inference graph followed by the algorithm graph
    must be a valid graph, update_binding keys must name initializers and its
    values algorithm outputs, and a Gradient's inputs are its xs then zs."""
    graph = onnx.GraphProto()
    graph.CopyFrom(model.graph)
    for info in model.training_info:
        graph.MergeFrom(info.algorithm)  # concatenates nodes, inputs, ...
        initializers = {t.name for t in model.graph.initializer}
        initializers |= {t.name for t in info.algorithm.initializer}
        outputs = {o.name for o in info.algorithm.output}
        for entry in info.update_binding:
            if entry.key not in initializers:
                raise ValueError(f"update_binding key '{entry.key}' names no "
                                 "initializer")
            if entry.value not in outputs:
                raise ValueError(f"update_binding value '{entry.value}' names "
                                 "no algorithm output")
    for node in graph.node:
        if node.domain != TRAINING_DOMAIN or node.op_type != "Gradient":
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        names = [n.decode() for n in attrs.get("xs", []) + attrs.get("zs", [])]
        if names != list(node.input):
            raise ValueError(f"Gradient '{node.name}': xs + zs {names} differ "
                             f"from its inputs {list(node.input)}")
    combined = helper.make_model(graph, opset_imports=model.opset_import)
    combined.ir_version = model.ir_version
    onnx.checker.check_model(combined, full_check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output .onnx file")
    parser.add_argument("--broken", choices=BROKEN_KINDS,
                        help="write this deliberately wrong variant")
    parser.add_argument("--initialization", nargs="?", const="constant",
                        choices=("constant", "random"),
                        help="add an initialization graph")
    opts = parser.parse_args()
    model = make_model(opts.broken, opts.initialization)
    if not opts.broken:
        onnx.checker.check_model(model, full_check=True)
        check_training_info(model)
    onnx.save(model, opts.out)
    print(f"wrote {opts.out}" + (f" ({opts.broken})" if opts.broken else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
