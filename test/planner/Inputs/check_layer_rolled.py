"""Compares, layout by layout, `cleave plan`'s prediction of a layout from
the model cut down to a few of its identical layers (--predict-from-layers
always; planner/LayerRolledStep.h) with its prediction partitioned in full
(--predict-from-layers never), and prints each relative error of the step
time, the peak memory per rank and the bytes sent per rank.

The search trusts an estimate not to be over the layout's own numbers by
more than kLayerRolledTimeTolerance and kLayerRolledMemoryTolerance (it
prunes a layout whose estimate, less that, is slower than the plans found,
and rejects one whose estimate, less that, does not fit); an estimate under
them only costs the search a full partition. So: the step at most
STEP_OVER above the exact one, the memory at most MEMORY_OVER, and both at
most UNDER below them.

usage: check_layer_rolled.py MODEL CLUSTER BATCH STEP_OVER MEMORY_OVER UNDER
       < LAYOUTS
(one layout's flags a line: --mesh ... [--pipeline ...])
"""

import json
import os
import subprocess
import sys
import tempfile


def predict(model, cluster, batch, flags, mode):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "plan.json")
        subprocess.run(["cleave", "plan", model, "--cluster", cluster,
                        "--global-batch", batch, "--json", path,
                        "--predict-from-layers", mode] + flags,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        plan = json.load(open(path))
    return (plan["plans"] + plan["rejected"])[0]["predicted"]


def main():
    model, cluster, batch = sys.argv[1:4]
    step_over, memory_over, under = map(float, sys.argv[4:7])
    over = {"step": step_over, "memory": memory_over}
    worst = {"step": [0.0, 0.0], "memory": [0.0, 0.0]}
    ok = True
    for line in sys.stdin:
        flags = line.split()
        if not flags:
            continue
        exact = predict(model, cluster, batch, flags, "never")
        rolled = predict(model, cluster, batch, flags, "always")
        errors = {}
        for name, key in (("step", "step_ms"), ("memory", "peak_bytes_per_rank"),
                          ("comm", "comm_bytes_per_rank")):
            errors[name] = (rolled[key] - exact[key]) / exact[key] if exact[key] else 0.0
        for name in ("step", "memory"):
            worst[name][0] = min(worst[name][0], errors[name])
            worst[name][1] = max(worst[name][1], errors[name])
        within = (exact["from_layers"] is None and rolled["from_layers"] is not None and
                  all(-under <= errors[name] <= over[name] for name in ("step", "memory")))
        ok &= within
        print("%-90s step %+6.2f%% memory %+6.2f%% comm %+6.2f%% %s" % (
            " ".join(flags), 100 * errors["step"], 100 * errors["memory"],
            100 * errors["comm"], "ok" if within else "OUT OF TOLERANCE"))
    print("range: step %+.2f%% to %+.2f%%, memory %+.2f%% to %+.2f%%" % (
        100 * worst["step"][0], 100 * worst["step"][1],
        100 * worst["memory"][0], 100 * worst["memory"][1]))
    print("ALL WITHIN TOLERANCE" if ok else "SOME OUT OF TOLERANCE")


main()
