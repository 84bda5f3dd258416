"""Prints the predicted step, bytes sent per rank and the hand-over sizes
of the plans stage-cut-bytes.test evaluates: the cut by work alone, the
cut weighing bytes, and the cut by hand at layer boundaries.

usage: check_stage_cut_bytes.py WORK.json LINK.json HAND.json
"""

import json
import sys


def plan(path):
    return json.load(open(path))["plans"][0]


def describe(label, p):
    predicted = p["predicted"]
    sizes = {c["bytes"] // c["count"] for c in p["collectives"]
             if c["kind"] == "send_recv"}
    print("%s: %.1f ms, %d MB sent per rank, %d size%s of hand-over" % (
        label, predicted["step_ms"], predicted["comm_bytes_per_rank"] // 10**6,
        len(sizes), "" if len(sizes) == 1 else "s"))


work, link, hand = (plan(path) for path in sys.argv[1:4])
describe("work alone", work)
describe("bytes weighed", link)
print("by hand at layer boundaries: %.1f ms" % hand["predicted"]["step_ms"])
print("bytes weighed at least as fast as by hand: %s" % (
    link["predicted"]["step_ms"] <= hand["predicted"]["step_ms"]))
