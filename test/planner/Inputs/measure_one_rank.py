"""Shared by the checks that compare what a plan says one rank needs with
the rise of its resident set (check_blas_packing.py,
check_measured_libraries.py): runs commands, and plans a model on one rank,
compiles the plan and runs it with --print-memory-peak."""

import json
import os
import re
import subprocess
import sys


def run(args, env=None):
    """The command's output; exits naming it where it fails."""
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)} exited {p.returncode}:\n"
                 f"{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def within_option(default):
    """--within F from the arguments, else `default`."""
    args = sys.argv
    return float(args[args.index("--within") + 1]) if "--within" in args \
        else default


def plan_and_measure(model, cluster, out, batch, threads="1"):
    """Plans `model` on one rank of `cluster` at global batch `batch`,
    compiles the first plan into `out`, runs it for 2 steps on `threads`
    OpenMP threads; returns (the plan's predictions, `cleave plan`'s table,
    the rank's measured rise less file-backed pages, the run's report)."""
    os.makedirs(out, exist_ok=True)
    plan_json = os.path.join(out, "plan.json")
    table = run(["cleave", "plan", model, "--cluster", cluster, "--ranks",
                 "1", "--global-batch", batch, "--max-microbatches", "1",
                 "--json", plan_json])
    plan = json.load(open(plan_json))["plans"][0]
    program = os.path.join(out, "train")
    run(["cleave", "compile", model] + plan["flags"] + ["-o", program])
    env = dict(os.environ, OMP_NUM_THREADS=threads)
    report = run([program, "--synthetic", "--steps", "2",
                  "--print-memory-peak"], env)
    m = re.search(r"peak (\d+) bytes, of which file-backed (\d+)", report)
    if not m:
        sys.exit("FAILED: no --print-memory-peak line:\n" + report)
    return plan["predicted"], table, int(m.group(1)) - int(m.group(2)), report
