"""Compares each intra-op ILP plan's objective (plans[].ilp.objective_ms)
with the cost model's predicted step (plans[].predicted.step_ms) in
`cleave plan --json` files; plans with pipeline stages are skipped.

usage: check_ilp_estimate.py PLAN.json...

Tolerance: 5% (10% for the CNN's dp x tp layouts, measured -6%)."""

import json
import os
import sys

compared = 0
for path in sys.argv[1:]:
    for plan in sorted(json.load(open(path))["plans"], key=lambda p: p["mesh_flag"]):
        if "ilp" not in plan or plan["pipeline_axis"]:
            continue
        ilp, step = plan["ilp"]["objective_ms"], plan["predicted"]["step_ms"]
        error = (ilp - step) / step
        name = os.path.basename(path)
        limit = 0.10 if name.startswith("cnn") and "dp" in plan["mesh"] else 0.05
        print(f"{name} {plan['mesh_flag']}: ILP {ilp:.4f} ms, predicted {step:.4f} ms: "
              f"{100 * error:+.1f}% {'OK' if abs(error) <= limit else 'TOO FAR'}")
        compared += 1
print(compared, "compared")
