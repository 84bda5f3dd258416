#!/usr/bin/python3
"""Imports every ONNX backend node test (Debian's libonnx-testdata) whose
graph uses only operators cleave supports, and reports per operator how many
import cleanly with `cleave import --inference`.

Cleave compiles static programs, so inputs that ONNX allows at run time but
that fix shapes or attributes (Reshape's shape, Slice's starts, ReduceSum's
axes, Dropout's ratio, ...) must be compile-time constants. For tests that
feed those as graph inputs, this script first freezes them into Constant
nodes holding the test's own input data (test_data_set_0), as a user would
when exporting.

    import_node_tests.py --cleave build/bin/cleave [--markdown] [--failures]

Exit status is 1 when a test fails to import and is not listed in
expected-failures.txt beside this script (each line: test name, a tab, why),
or when a listed test imports (the list must stay honest).
"""

import argparse
import collections
import concurrent.futures
import os
import subprocess
import sys
import tempfile

import onnx
import onnx.helper

NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
TRAINING_DOMAIN = "ai.onnx.preview.training"


def op_name(node):
    if node.domain == TRAINING_DOMAIN:
        return TRAINING_DOMAIN + "." + node.op_type
    return node.op_type


# Inputs at these positions must be constants for a static compiler.
CONSTANT_POSITIONS = {
    "Reshape": {1}, "Expand": {1}, "Split": {1}, "Squeeze": {1},
    "Unsqueeze": {1}, "ReduceSum": {1}, "Slice": {1, 2, 3, 4},
    "Dropout": {1, 2},
}


def freeze_constant_inputs(test, workdir):
    """Returns the path of the model to import: the test's own, or a copy whose
    constant-position graph inputs are Constant nodes."""
    path = os.path.join(NODE_TESTS, test, "model.onnx")
    model = onnx.load(path)
    frozen = set()
    for node in model.graph.node:
        for i in CONSTANT_POSITIONS.get(node.op_type, ()):
            if i < len(node.input) and node.input[i]:
                frozen.add(node.input[i])
    inputs = [vi.name for vi in model.graph.input]
    frozen &= set(inputs)
    if not frozen:
        return path
    constants = []
    for index, name in enumerate(inputs):
        if name not in frozen:
            continue
        tensor = onnx.TensorProto()
        with open(os.path.join(NODE_TESTS, test, "test_data_set_0",
                               f"input_{index}.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        constants.append(onnx.helper.make_node("Constant", [], [name], value=tensor,
                                               name=f"frozen_{name}"))
    kept = [vi for vi in model.graph.input if vi.name not in frozen]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    nodes = constants + list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    frozen_path = os.path.join(workdir, test + ".onnx")
    onnx.save(model, frozen_path)
    return frozen_path


def supported_ops(cleave):
    return set(subprocess.run([cleave, "import", "--list-supported-ops"],
                              check=True, capture_output=True, text=True).stdout.split())


def select_tests(cleave):
    """Returns {test name: set of operators} for every node test whose graph
    uses only operators cleave supports."""
    supported = supported_ops(cleave)
    tests = {}
    for test in sorted(os.listdir(NODE_TESTS)):
        model = onnx.load(os.path.join(NODE_TESTS, test, "model.onnx"),
                          load_external_data=False)
        ops = {op_name(n) for n in model.graph.node}
        if ops and ops <= supported:
            tests[test] = ops
    return tests


def read_expected_failures(path):
    """Returns {test name: reason} from a file of `name<TAB>reason` lines."""
    expected = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, _, why = line.rstrip("\n").partition("\t")
                expected[name] = why
    return expected


def import_test(cleave, test, workdir):
    path = freeze_constant_inputs(test, workdir)
    result = subprocess.run([cleave, "import", "--inference", path, "-o", os.devnull],
                            capture_output=True, text=True)
    first_line = (result.stderr.strip().splitlines() or [""])[0]
    return test, result.returncode, first_line


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cleave", required=True)
    parser.add_argument("--markdown", action="store_true",
                        help="print the per-operator table for the README")
    parser.add_argument("--failures", action="store_true",
                        help="print each failing test with its first error line")
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    expected = read_expected_failures(os.path.join(here, "expected-failures.txt"))
    tests = select_tests(args.cleave)

    with tempfile.TemporaryDirectory() as workdir, \
            concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        results = list(pool.map(lambda t: import_test(args.cleave, t, workdir), tests))

    per_op = collections.defaultdict(lambda: [0, 0])
    unexpected, stale = [], []
    for test, code, message in results:
        for op in tests[test]:
            per_op[op][0] += 1
            per_op[op][1] += code == 0
        if code != 0 and test not in expected:
            unexpected.append((test, code, message))
        if code == 0 and test in expected:
            stale.append(test)
        if args.failures and code != 0:
            print(f"FAIL {test} (exit {code}): {message}")

    passed = sum(code == 0 for _, code, _ in results)
    if args.markdown:
        print("| operator | node tests | imported |")
        print("|---|---:|---:|")
        for op in sorted(per_op):
            total, ok = per_op[op]
            print(f"| {op} | {total} | {ok} |")
    print(f"imported {passed} of {len(results)} node tests")
    for test, code, message in unexpected:
        print(f"unexpected failure: {test} (exit {code}): {message}", file=sys.stderr)
    for test in stale:
        print(f"listed in expected-failures.txt but imports: {test}", file=sys.stderr)
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main())
