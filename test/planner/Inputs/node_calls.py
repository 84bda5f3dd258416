"""Checks a plan's node_times (cleave plan --node-times) against a traced
step of its program, on a cluster where every call costs 1 ms and nothing
else costs anything: each node's predicted milliseconds are then its
predicted calls, to set beside the slices the trace names after it.

usage: node_calls.py PLAN.json TRACE.json

Prints whether the nodes' times add up to the plan's step, how many traced
names the prediction has no entry for, and each name whose predicted calls
differ from its traced slices.
"""
import collections
import json
import sys

plan = json.load(open(sys.argv[1]))["plans"][0]
events = json.load(open(sys.argv[2]))["traceEvents"]
steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "step"]
traced = collections.Counter(
    e["name"] for e in events
    if e.get("ph") == "X" and e.get("cat") != "step" and e.get("tid") == 0)
predicted = collections.defaultdict(float)
for node in plan["node_times"]:
    predicted[node["name"]] += node["ms"]
total = sum(predicted.values())
step = plan["predicted"]["step_ms"]
print("nodes add up to the step: %s (%.3f of %.3f ms)" %
      (abs(total - step) <= 1e-6 * step, total, step))
unknown = sorted(n for n in traced if n not in predicted)
print("traced names without a prediction: %d %s" % (len(unknown), unknown))
for name in sorted(set(predicted) | set(traced)):
    calls = traced[name] / len(steps)
    if round(predicted[name]) != calls:
        print("%s: predicted %.0f calls, traced %g" %
              (name, predicted[name], calls))
