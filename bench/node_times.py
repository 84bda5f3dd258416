#!/usr/bin/python3
"""A plan's predicted time per ONNX node next to a traced run's.

  cleave plan model.onnx --cluster local.yaml --ranks 2 --mesh dp=2 \\
      --strategy dp --global-batch 64 --json plan.json --node-times
  cleave compile model.onnx ... -o train      # the plan's flags
  mpirun -np 2 ./train --synthetic --steps 60 --trace trace.json \\
      --trace-steps 20:59 --quiet
  /usr/bin/python3 bench/node_times.py plan.json trace.json [--plan 0]
      [--rank 0] [--top 25]

Both sides name a node's work as the emitter names its ops: the ONNX
node's name, with "/grad" for its backward ops. The traced side is the
rank's step thread (compute and blocking communication: what the step
waits for), per traced step; the predicted side is the plan's
`node_times` for the rank's pipeline stage (`--stage`, default 0). Rows
are sorted by how far apart the two are, then the totals: what the
prediction misses shows as traced time with little predicted, and the
other way round. A fused loop is traced under one node's name while the
prediction splits its time over the ops it fused, so look at the totals
of neighbouring rows too.
"""

import argparse
import collections
import json
import sys


def traced_per_step(path, rank):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    mine = [e for e in events
            if e.get("ph") == "X" and e.get("pid") == rank
            and e.get("tid") == 0]
    steps = [e for e in mine if e.get("cat") == "step"]
    if not steps:
        sys.exit(f"{path}: no traced step of rank {rank}")
    per_node = collections.defaultdict(float)
    for e in mine:
        if e.get("cat") != "step":
            per_node[e["name"]] += e["dur"] / 1e3
    n = len(steps)
    step_ms = sorted(e["dur"] / 1e3 for e in steps)[n // 2]
    return {k: v / n for k, v in per_node.items()}, step_ms, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("plan_json")
    ap.add_argument("trace")
    ap.add_argument("--plan", type=int, default=0,
                    help="index in the JSON's plans (default 0, the first)")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--stage", type=int, default=0)
    ap.add_argument("--top", type=int, default=25)
    opts = ap.parse_args()
    with open(opts.plan_json) as f:
        plans = json.load(f)["plans"]
    plan = plans[opts.plan]
    if "node_times" not in plan:
        sys.exit(f"{opts.plan_json}: plan {opts.plan} has no node_times "
                 "(give cleave plan --node-times)")
    predicted = collections.defaultdict(float)
    for node in plan["node_times"]:
        if node["stage"] == opts.stage:
            predicted[node["name"]] += node["ms"]
    traced, step_ms, steps = traced_per_step(opts.trace, opts.rank)
    names = set(predicted) | set(traced)
    rows = sorted(names, key=lambda k: -abs(traced.get(k, 0) -
                                            predicted.get(k, 0)))
    print(f"plan {opts.plan} ({' '.join(plan['flags'])}): predicted step "
          f"{plan['predicted']['step_ms']:.3f} ms; traced step (median of "
          f"{steps}) {step_ms:.3f} ms, rank {opts.rank}")
    print(f"{'node':60s} {'predicted ms':>12s} {'traced ms':>10s} "
          f"{'traced/predicted':>16s}")
    for name in rows[:opts.top]:
        p, t = predicted.get(name, 0.0), traced.get(name, 0.0)
        ratio = f"{t / p:.2f}" if p > 0 else "-"
        print(f"{name[:60]:60s} {p:12.4f} {t:10.4f} {ratio:>16s}")
    p_total, t_total = sum(predicted.values()), sum(traced.values())
    print(f"{'all nodes':60s} {p_total:12.4f} {t_total:10.4f} "
          f"{t_total / p_total if p_total else 0:16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
