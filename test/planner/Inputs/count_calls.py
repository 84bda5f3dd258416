"""Compares the calls a plan predicts (its step time over 1 ms per op: the
cluster makes every op's roofline time nothing and its overhead 1 ms) with
the calls a traced step of the program made (its slices).

usage: count_calls.py PLAN.json TRACE.json [--within FRACTION]
"""
import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("plan")
parser.add_argument("trace")
parser.add_argument("--within", type=float)
args = parser.parse_args()

predicted = json.load(open(args.plan))["plans"][0]["predicted"]["step_ms"]
events = json.load(open(args.trace))["traceEvents"]
calls = [e for e in events if e.get("ph") == "X" and e.get("cat") != "step"]
if args.within is None:
    print("predicted %d calls, traced %d calls" % (round(predicted), len(calls)))
else:
    error = abs(predicted - len(calls)) / len(calls)
    print("predicted %.0f calls, traced %d calls: %s" %
          (predicted, len(calls),
           "within %d%%" % round(100 * args.within) if error <= args.within
           else "off by %.0f%%" % (100 * error)))
