"""Compares, layout by layout, `cleave plan`'s rolled estimate of a
micro-batched layout (--max-unrolled-ops 0: predicted from the same layout
with 2 micro-batches of the same size) with its exact prediction (the
step partitioned with its micro-batches unrolled), and prints each
relative error and whether it is within the tolerances the planner uses
(planner/Planner.cpp, kRolledTolerance, kInterleavedTolerance):

  - step_ms: within STEP (both ways);
  - peak_bytes_per_rank: at most MEMORY under the exact one (an estimate
    under by more could let a plan that does not fit through) and at most
    MEMORY over it;
  - comm_bytes_per_rank: within COMM.

usage: check_rolled.py MODEL CLUSTER BATCH STEP MEMORY COMM < LAYOUTS
(one layout's flags a line: --mesh ... --microbatches M ...)
"""

import json
import os
import subprocess
import sys
import tempfile


def predict(model, cluster, batch, flags, extra):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "plan.json")
        subprocess.run(["cleave", "plan", model, "--cluster", cluster,
                        "--global-batch", batch, "--json", path] + flags + extra,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        plan = json.load(open(path))
    return (plan["plans"] + plan["rejected"])[0]["predicted"]


def main():
    model, cluster, batch = sys.argv[1:4]
    step_tol, memory_tol, comm_tol = map(float, sys.argv[4:7])
    worst = {"step": 0.0, "memory": 0.0, "comm": 0.0}
    ok = True
    for line in sys.stdin:
        flags = line.split()
        if not flags:
            continue
        exact = predict(model, cluster, batch, flags, [])
        rolled = predict(model, cluster, batch, flags, ["--max-unrolled-ops", "0"])
        errors = {}
        for name, key in (("step", "step_ms"), ("memory", "peak_bytes_per_rank"),
                          ("comm", "comm_bytes_per_rank")):
            errors[name] = (rolled[key] - exact[key]) / exact[key] if exact[key] else 0.0
            worst[name] = max(worst[name], abs(errors[name]))
        within = (not exact["estimated"] and rolled["estimated"] and
                  abs(errors["step"]) <= step_tol and
                  abs(errors["memory"]) <= memory_tol and
                  abs(errors["comm"]) <= comm_tol)
        ok &= within
        print("%-80s step %+6.2f%% memory %+6.2f%% comm %+6.2f%% %s" % (
            " ".join(flags), 100 * errors["step"], 100 * errors["memory"],
            100 * errors["comm"], "ok" if within else "OUT OF TOLERANCE"))
    print("worst: step %.2f%% memory %.2f%% comm %.2f%%" % (
        100 * worst["step"], 100 * worst["memory"], 100 * worst["comm"]))
    print("ALL WITHIN TOLERANCE" if ok else "SOME OUT OF TOLERANCE")


main()
