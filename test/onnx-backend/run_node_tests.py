#!/usr/bin/python3
"""Compiles every ONNX backend node test that import_node_tests.py selects
into an inference program, runs it on the test's stored inputs and compares
its outputs with the stored outputs (Debian's libonnx-testdata).

    run_node_tests.py --cleave build/bin/cleave [--markdown] [--failures]
                      [--filter REGEX] [--jobs N]

Each test is compiled with `cleave compile --inference` (shape-like inputs
frozen into Constant nodes from test_data_set_0, as import_node_tests.py does),
run as `prog --data DIR --steps 1 --dump-outputs OUT --quiet` on each
test_data_set_*'s input_k.pb, and every output_k.pb is compared with
OUT/<output>.npy: the dtype and the shape must be the same, floating-point
values must satisfy np.allclose(ours, ref, rtol=1e-4, atol=1e-5) with NaN
equal to NaN, integers and booleans must be equal. The stored outputs come
from ONNX's reference implementation, mostly in float32; rtol 1e-4 allows for
a different summation order in reductions, matrix products and convolutions
and for libm differences in exp/log/tanh/erf, atol 1e-5 for values that
cancel to near zero.

The ai.onnx.preview.training operators (Momentum, Adam, Adagrad) run too:
their node tests are plain graphs that apply one update.

Exit status is 1 when a test does not match and is not listed in
run-expected-failures.txt beside this script (each line: test name, a tab,
why), or when a listed test matches (the list must stay honest).
"""

import argparse
import collections
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import import_node_tests  # noqa: E402
from import_node_tests import NODE_TESTS  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
COMPILE_TIMEOUT_S, RUN_TIMEOUT_S = 300, 60

# Outcomes, in the order a test goes through them.
COMPILE_FAILED, RUN_FAILED, MISMATCH, MATCHED = (
    "compile", "run", "mismatch", "matched")


def read_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(tensor)


def first_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def compare(name, ours, ref):
    """Returns None when `ours` matches `ref`, else why not."""
    if ours.dtype != ref.dtype:
        return f"output '{name}': dtype {ours.dtype}, expected {ref.dtype}"
    if ours.shape != ref.shape:
        return f"output '{name}': shape {list(ours.shape)}, expected {list(ref.shape)}"
    if np.issubdtype(ref.dtype, np.floating):
        if np.allclose(ours, ref, rtol=RTOL, atol=ATOL, equal_nan=True):
            return None
        o, r = ours.astype(np.float64), ref.astype(np.float64)
        bad = ~np.isclose(o, r, rtol=RTOL, atol=ATOL, equal_nan=True)
        diff = np.where(bad, np.abs(o - r), 0)
        diff = np.where(np.isnan(diff), np.inf, diff)
        worst = np.unravel_index(np.argmax(diff), ref.shape) if ref.ndim else ()
        return (f"output '{name}': {int(bad.sum())} of {ref.size} values off, "
                f"max |diff| {float(diff.max()):.3g} at {list(worst)} "
                f"(ours {o[worst]!r}, expected {r[worst]!r})")
    if np.array_equal(ours, ref):
        return None
    bad = ours != ref
    worst = tuple(int(i[0]) for i in np.nonzero(bad)) if ref.ndim else ()
    return (f"output '{name}': {int(bad.sum())} of {ref.size} values differ, "
            f"first at {list(worst)} (ours {ours[worst]!r}, expected {ref[worst]!r})")


def run_test(cleave, test, ops, root):
    """Returns (test, outcome, message)."""
    workdir = os.path.join(root, test)
    os.mkdir(workdir)
    path = import_node_tests.freeze_constant_inputs(test, workdir)
    original = onnx.load(os.path.join(NODE_TESTS, test, "model.onnx"))
    model = onnx.load(path)
    fed = {vi.name for vi in model.graph.input}
    program = os.path.join(workdir, "prog")
    try:
        result = subprocess.run([cleave, "compile", "--inference", path, "-o", program],
                                capture_output=True, text=True, cwd=workdir,
                                timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return test, COMPILE_FAILED, f"timed out after {COMPILE_TIMEOUT_S} s"
    if result.returncode != 0:
        return test, COMPILE_FAILED, (f"exit {result.returncode}: "
                                      f"{first_line(result.stderr + result.stdout)}")

    data_sets = sorted(glob.glob(os.path.join(NODE_TESTS, test, "test_data_set_*")))
    frozen0 = {}
    for index, vi in enumerate(original.graph.input):
        if vi.name not in fed:
            frozen0[vi.name] = read_tensor(os.path.join(data_sets[0], f"input_{index}.pb"))
    ran = 0
    for data_set in data_sets:
        label = os.path.basename(data_set)
        data = os.path.join(workdir, label, "data")
        out = os.path.join(workdir, label, "out")
        os.makedirs(data)
        os.makedirs(out)
        frozen_differs = False
        for index, vi in enumerate(original.graph.input):
            value = read_tensor(os.path.join(data_set, f"input_{index}.pb"))
            if vi.name in fed:
                np.save(os.path.join(data, vi.name + ".npy"), value)
            elif not np.array_equal(value, frozen0[vi.name]):
                frozen_differs = True
        if frozen_differs:
            # The program was compiled for test_data_set_0's constants.
            continue
        ran += 1
        try:
            result = subprocess.run([program, "--data", data, "--steps", "1",
                                     "--dump-outputs", out, "--quiet"],
                                    capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return test, RUN_FAILED, f"{label}: timed out after {RUN_TIMEOUT_S} s"
        if result.returncode != 0:
            return test, RUN_FAILED, (f"{label}: exit {result.returncode}: "
                                      f"{first_line(result.stderr + result.stdout)}")
        for index, vi in enumerate(original.graph.output):
            ref = read_tensor(os.path.join(data_set, f"output_{index}.pb"))
            ours_path = os.path.join(out, vi.name + ".npy")
            if not os.path.exists(ours_path):
                return test, MISMATCH, f"{label}: output '{vi.name}' was not written"
            problem = compare(vi.name, np.load(ours_path), ref)
            if problem:
                return test, MISMATCH, f"{label}: {problem}"
    if not ran:
        return test, RUN_FAILED, "no data set has test_data_set_0's frozen inputs"
    return test, MATCHED, ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cleave", required=True)
    parser.add_argument("--markdown", action="store_true",
                        help="print the per-operator table for the README")
    parser.add_argument("--failures", action="store_true",
                        help="print each test that does not match, with why")
    parser.add_argument("--filter", metavar="REGEX",
                        help="run only the tests whose name this matches (re.search)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="tests compiled and run at once (default: the CPU count)")
    args = parser.parse_args()
    cleave = os.path.abspath(args.cleave) if os.sep in args.cleave else args.cleave

    here = os.path.dirname(os.path.abspath(__file__))
    expected = import_node_tests.read_expected_failures(
        os.path.join(here, "run-expected-failures.txt"))
    tests = import_node_tests.select_tests(cleave)
    unknown = sorted(set(expected) - set(tests))
    if args.filter:
        pattern = re.compile(args.filter)
        tests = {t: ops for t, ops in tests.items() if pattern.search(t)}
        unknown = []

    with tempfile.TemporaryDirectory(prefix="cleave-node-tests-") as root, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda t: run_test(cleave, t, tests[t], root), tests))

    per_op = collections.defaultdict(lambda: [0, 0, 0])
    unexpected, stale = [], []
    for test, outcome, message in results:
        for op in tests[test]:
            per_op[op][0] += 1
            per_op[op][1] += outcome not in (COMPILE_FAILED,)
            per_op[op][2] += outcome == MATCHED
        if outcome != MATCHED and test not in expected:
            unexpected.append((test, outcome, message))
        if outcome == MATCHED and test in expected:
            stale.append(test)
        if args.failures and outcome != MATCHED:
            note = " (expected)" if test in expected else ""
            print(f"FAIL {test} [{outcome}]{note}: {message}")

    ran = len(results)
    matched = sum(outcome == MATCHED for _, outcome, _ in results)
    if args.markdown:
        print("| operator | node tests | compiled | matched |")
        print("|---|---:|---:|---:|")
        for op in sorted(per_op):
            total, compiled, ok = per_op[op]
            print(f"| {op} | {total} | {compiled} | {ok} |")
    sys.stdout.flush()
    for test, outcome, message in unexpected:
        print(f"unexpected failure: {test} [{outcome}]: {message}", file=sys.stderr)
    for test in stale:
        print(f"listed in run-expected-failures.txt but matches: {test}", file=sys.stderr)
    for test in unknown:
        print(f"listed in run-expected-failures.txt but not a selected node test: {test}",
              file=sys.stderr)
    sys.stderr.flush()
    print(f"ran {ran} node tests: {matched} matched the stored outputs")
    return 1 if unexpected or stale or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
