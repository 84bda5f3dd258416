#!/usr/bin/python3
"""Checks Cleave's gradients against central finite differences.

  /usr/bin/python3 test/gradcheck/gradcheck.py MODEL --cleave PATH
      --workdir DIR [--input-shape NAME=DIMS ...] [--eps 1e-2]
      [--rtol 2e-2] [--atol 1e-4] [--positive-inputs]
      [--int-range [NAME=]LO,HI ...] [--max-elements 64] [--seed 0]
      [--allow-zero-grad NAME ...] [--allow-kinks N]

MODEL (ONNX, binary or text) is compiled with plain SGD at lr 1
(`--optimizer sgd --lr 1`: no momentum, no weight decay), so one step
stores `param - grad` and the analytic gradient is `init - after`. The
program is run

  --steps 0 --dump-params DIR/init   the initial parameters (and states)
  --steps 1 --init DIR/init --dump-params DIR/after --log ...
                                     the analytic gradient, init - after

and then once per perturbed element and sign with `--steps 1 --init DIR/pert
--log`, reading the loss of step 0 (the forward pass before the update).
One more run from the unperturbed values must log the same loss bit for bit
(the differences compare separate runs; OpenMP and OpenBLAS run on one
thread). Then

  numeric = (L(v + h) - L(v - h)) / (h+ + h-),  h = eps * max(1, |v|)

where h+ and h- are the steps actually taken after rounding v +- h to
float32. At most --max-elements elements per tensor are checked (all of a
small tensor, else a seeded random choice). An element passes when

  |numeric - analytic| <= atol + rtol * max(|numeric|, |analytic|)

The loss is float32, so the finite difference carries rounding noise of
up to about 1e-7 * |L| / eps (1e-5 * |L| at the default eps) and a
truncation error of about eps^2 / 6 * |f'''|; keep the models' losses
O(1) and away from kinks (Relu at 0, MaxPool ties).

Inputs: the graph inputs the compiled program expects (names, dtypes and
shapes are read from the generated C++'s tensor table), one batch each
(the batch is the first dimension), seeded: float ~ N(0, 0.5^2), or
0.5 + |N(0, 0.5^2)| with --positive-inputs; integer inputs uniform in
[LO, HI) (--int-range, default 0,3; NAME=LO,HI for one input); bool inputs
uniform in {false, true}. Written to DIR/data.

Near a kink (Relu at 0, a MaxPool near-tie) the central difference
straddles two linear pieces: the one-sided slopes (L(v + h) - L(v)) / h+
and (L(v) - L(v - h)) / h- disagree, and a right gradient is the slope of
one of them. Up to --allow-kinks such elements per tensor (default 0) are
skipped and counted on the tensor's line; more fail.

A tensor whose gradient is below 10 * atol at every checked element fails
(such a check checks nothing) unless it is named with --allow-zero-grad.

Prints one line per parameter (`OK name ...` or `FAIL name ...`, followed
by the worst elements of a failure), then `PASS` or `FAILED`; exits 1 if
any check fails, 2 if the model cannot be compiled or run.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

# The runtime's dtypes (runtime/Program.h) as numpy types.
DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64,
          "I32": np.int32, "Bool": np.bool_}

SPEC = re.compile(r'\{"([^"]+)", "[^"]*", DType::(\w+), '
                  r'Shape\{([0-9, ]*)\}, Role::(\w+), ')


def die(message):
    print(f"gradcheck: error: {message}", file=sys.stderr)
    sys.exit(2)


# One thread for OpenMP and OpenBLAS: every run sums in the same order (the
# differences compare losses of separate runs), and starts faster.
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")


def run(cmd):
    result = subprocess.run(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=ENV)
    if result.returncode != 0:
        die(f"'{' '.join(cmd)}' exited with {result.returncode}:\n"
            f"{result.stdout}")
    return result.stdout


def read_specs(source):
    """[(name, dtype, shape, role)] from the generated program's table."""
    with open(source) as f:
        text = f.read()
    specs = []
    for name, dtype, dims, role in SPEC.findall(text):
        if dtype not in DTYPES:
            die(f"{source}: unknown dtype {dtype} of '{name}'")
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
        specs.append((name, DTYPES[dtype], shape, role))
    if not specs:
        die(f"{source}: found no tensor table")
    return specs


def parse_int_ranges(values):
    """{name or None: (lo, hi)} from LO,HI and NAME=LO,HI."""
    ranges = {None: (0, 3)}
    for value in values:
        name, _, bounds = value.rpartition("=")
        try:
            lo, hi = (int(x) for x in bounds.split(","))
        except ValueError:
            die(f"--int-range '{value}' is not [NAME=]LO,HI")
        if hi <= lo:
            die(f"--int-range '{value}': HI must exceed LO")
        ranges[name or None] = (lo, hi)
    return ranges


def make_data(specs, args, directory):
    rng = np.random.default_rng(args.seed)
    ranges = parse_int_ranges(args.int_range)
    os.makedirs(directory)
    for name, dtype, shape, role in specs:
        if role != "Input":
            continue
        if dtype in (np.float32, np.float64):
            x = rng.standard_normal(shape) * 0.5
            if args.positive_inputs:
                x = 0.5 + np.abs(x)
        elif dtype == np.bool_:
            x = rng.integers(0, 2, shape) != 0
        else:
            lo, hi = ranges.get(name, ranges[None])
            x = rng.integers(lo, hi, shape)
        np.save(os.path.join(directory, name + ".npy"),
                np.asarray(x, dtype=dtype).reshape(shape))


def step0_loss(log):
    with open(log) as f:
        for line in f:
            if line.strip():
                record = json.loads(line)
                if record.get("step") == 0:
                    return float(record["loss"])
    die(f"{log} has no loss for step 0")


def load_dir(directory, names):
    tensors = {}
    for name in names:
        path = os.path.join(directory, name + ".npy")
        if not os.path.exists(path):
            die(f"{path} was not written")
        tensors[name] = np.load(path)
    return tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--cleave", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--input-shape", action="append", default=[],
                        help="passed to cleave compile; repeatable")
    parser.add_argument("--eps", type=float, default=1e-2)
    parser.add_argument("--rtol", type=float, default=2e-2)
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--positive-inputs", action="store_true")
    parser.add_argument("--int-range", action="append", default=[])
    parser.add_argument("--max-elements", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allow-zero-grad", action="append", default=[])
    parser.add_argument("--allow-kinks", type=int, default=0)
    args = parser.parse_args()

    start = time.monotonic()
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    program = os.path.join(work, "train")
    compile_cmd = [args.cleave, "compile", args.model, "--optimizer", "sgd",
                   "--lr", "1", "--keep-source", "-o", program]
    for shape in args.input_shape:
        compile_cmd += ["--input-shape", shape]
    run(compile_cmd)
    specs = read_specs(program + ".cpp")
    params = [name for name, _, _, role in specs if role == "Param"]
    if not params:
        die("the model has no parameters")
    data = os.path.join(work, "data")
    make_data(specs, args, data)

    init_dir = os.path.join(work, "init")
    after_dir = os.path.join(work, "after")
    run([program, "--data", data, "--steps", "0", "--dump-params", init_dir,
         "--quiet"])
    init = load_dir(init_dir, params)
    log = os.path.join(work, "log.jsonl")
    run([program, "--data", data, "--steps", "1", "--init", init_dir,
         "--dump-params", after_dir, "--log", log, "--quiet"])
    after = load_dir(after_dir, params)
    loss = step0_loss(log)
    if not np.isfinite(loss):
        die(f"the loss is {loss}")
    runs = 2

    # Perturb a copy of the initial values; every run reads the whole dir.
    pert_dir = os.path.join(work, "pert")
    shutil.copytree(init_dir, pert_dir)
    pert_log = os.path.join(work, "pert.jsonl")

    def loss_with(name, value):
        np.save(os.path.join(pert_dir, name + ".npy"), value)
        if os.path.exists(pert_log):
            os.remove(pert_log)
        run([program, "--data", data, "--steps", "1", "--init", pert_dir,
             "--log", pert_log, "--quiet"])
        return step0_loss(pert_log)

    def tolerance(x, y):
        return args.atol + args.rtol * max(abs(x), abs(y))

    def close(x, y):
        return abs(x - y) <= tolerance(x, y)

    # The runs must be deterministic for their losses to be differenced.
    again = loss_with(params[0], init[params[0]])
    if again != loss:
        die(f"two runs from the same values logged the losses {loss!r} and "
            f"{again!r}; the program is not deterministic")
    runs += 1

    rng = np.random.default_rng(args.seed + 1)
    failed = False
    print(f"loss {loss:.9g}")
    for name in params:
        base = init[name]
        analytic = init[name].astype(np.float64) - after[name].astype(
            np.float64)
        size = base.size
        if size <= args.max_elements:
            chosen = np.arange(size)
        else:
            chosen = np.sort(rng.choice(size, args.max_elements,
                                        replace=False))
        bad, kinks = [], []
        worst = ratio = grad_max = 0.0
        for flat in chosen:
            index = np.unravel_index(flat, base.shape)
            v = float(base[index])
            h = args.eps * max(1.0, abs(v))
            value = base.copy()
            value[index] = np.float32(v + h)
            up = float(value[index]) - v
            plus = loss_with(name, value)
            value[index] = np.float32(v - h)
            down = v - float(value[index])
            minus = loss_with(name, value)
            runs += 2
            numeric = (plus - minus) / (up + down)
            forward, backward = (plus - loss) / up, (loss - minus) / down
            a = float(analytic[index])
            err = abs(numeric - a)
            worst = max(worst, err)
            ratio = max(ratio, err / tolerance(numeric, a))
            grad_max = max(grad_max, abs(numeric), abs(a))
            if close(numeric, a):
                continue
            # Within eps of a kink the one-sided slopes disagree and the
            # analytic gradient is the slope of one side.
            kink = not close(forward, backward) and (close(a, forward) or
                                                     close(a, backward))
            row = (err / tolerance(numeric, a), index, numeric, a, forward,
                   backward, kink)
            (kinks if kink else bad).append(row)
        np.save(os.path.join(pert_dir, name + ".npy"), base)
        if len(kinks) > args.allow_kinks:
            bad += kinks
        summary = (f"{name} max_abs_err {worst:.3g} err/tol {ratio:.2f} "
                   f"max_grad {grad_max:.3g} checked {len(chosen)}/{size}")
        if bad:
            failed = True
            print(f"FAIL {summary}: {len(bad)} elements off")
            for _, index, numeric, a, forward, backward, kink in sorted(
                    bad, key=lambda row: -row[0])[:8]:
                idx = ",".join(str(int(i)) for i in index)
                print(f"  [{idx}] numeric {numeric:.6g} analytic {a:.6g} "
                      f"(one-sided {forward:.6g} / {backward:.6g})"
                      f"{' kink?' if kink else ''}")
        elif (grad_max <= 10 * args.atol and
              name not in args.allow_zero_grad):
            failed = True
            print(f"FAIL {summary}: the gradient is below 10 * atol at every "
                  f"checked element, which checks nothing "
                  f"(--allow-zero-grad {name} if that is right)")
        else:
            skipped = f", {len(kinks)} at kinks skipped" if kinks else ""
            print(f"OK   {summary}{skipped}")
    elapsed = time.monotonic() - start
    print(f"{runs} runs in {elapsed:.1f}s", file=sys.stderr)
    print("FAILED" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
