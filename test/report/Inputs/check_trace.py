"""Reads a training program's --trace and checks it as Perfetto would show
it and against the program it came from:

  - one process per rank, named; every slice inside the slice of its step
    (on the step's thread, tid 0), and slices on a thread either disjoint
    or nested; the communication thread's slices (tid 1) are the started
    collectives and hand-overs, named after the op that started them;
  - the traced steps are the ones asked for;
  - per rank and step, the collectives (by kind) are the plan's for the
    rank's stage (count), and the bytes they carry add up to the program's
    own --print-comm counters;
  - every slice is named (ONNX node), send/recv slices name their peer.

usage: check_trace.py TRACE.json PLAN.json PRINT_COMM.txt
"""

import json
import re
import sys
from collections import defaultdict


def main():
    trace = json.load(open(sys.argv[1]))
    plan = json.load(open(sys.argv[2]))["plans"][0]
    comm = {int(r): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", rest)}
            for r, rest in re.findall(r"rank (\d+):((?: \w+=\d+)+)", open(sys.argv[3]).read())}
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    slices = [e for e in events if e["ph"] == "X"]
    ranks = sorted({e["pid"] for e in slices})
    print("program:", trace["otherData"])
    print("ranks: %s, named: %s" % (ranks, all(names.get(r) == "rank %d" % r for r in ranks)))
    steps = sorted({e["args"]["step"] for e in slices if e["cat"] == "step"})
    print("steps traced:", steps)

    # Nesting: on each thread, two slices are disjoint or one holds the
    # other (timestamps in microseconds, printed to 1 ns).
    eps = 0.002
    bad = 0
    outside = 0
    by_thread = defaultdict(list)
    for e in slices:
        by_thread[(e["pid"], e["tid"])].append(e)
    step_spans = {(e["pid"], e["args"]["step"]): (e["ts"], e["ts"] + e["dur"])
                  for e in slices if e["cat"] == "step"}
    for thread in by_thread.values():
        thread.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in thread:
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"] + eps:
                stack.pop()
            if stack and end > stack[-1] + eps:
                bad += 1
            stack.append(end)
        for e in thread:
            lo, hi = step_spans.get((e["pid"], e["args"]["step"]), (1, 0))
            if e["cat"] != "step" and not (lo - eps <= e["ts"] and e["ts"] + e["dur"] <= hi + eps):
                outside += 1
    print("slices: %d, partly overlapping: %d, outside their step: %d" % (len(slices), bad, outside))
    background = [e for e in slices if e["tid"] == 1]
    print("communication thread: %s slices, named after ops: %s, kinds: %s" % (
        "some" if background else "no",
        all(e["name"] and e["cat"] == "communication" for e in background),
        ", ".join(sorted({e["args"].get("op", "?") for e in background}))))
    slices_by_step = [e for e in slices if e["tid"] == 0]

    # The collectives against the plan's (per stage) and --print-comm.
    stages = {a: s for a, s in (item.split("=") for item in plan["mesh_flag"].split(","))}
    per_stage = len(ranks) // int(stages.get(plan["pipeline_axis"], 1))
    expected = defaultdict(lambda: defaultdict(int))
    for c in plan["collectives"]:
        expected[c["stage"]][c["kind"]] += c["count"]
    counts_ok = bytes_ok = True
    for rank in ranks:
        stage = rank // per_stage if plan["pipeline_axis"] else 0
        for step in steps:
            count = defaultdict(int)
            sent = defaultdict(int)
            for e in slices_by_step:
                # (A started all-reduce's wait is a slice of its own.)
                if e["pid"] == rank and e["args"]["step"] == step and e["cat"] == "collective" \
                        and not e["args"]["op"].endswith(" wait"):
                    count[e["args"]["op"]] += 1
                    sent[e["args"]["op"]] += e["args"]["bytes"]
            if dict(count) != dict(expected[stage]):
                counts_ok = False
                print("rank %d step %d: %s, the plan: %s" % (rank, step, dict(count), dict(expected[stage])))
            measured = {k: v for k, v in comm[rank].items() if v}
            if {k: v for k, v in sent.items() if v} != measured:
                bytes_ok = False
                print("rank %d step %d: bytes %s, --print-comm %s" % (rank, step, dict(sent), measured))
    print("collectives per step match the plan: %s; bytes match --print-comm: %s" % (counts_ok, bytes_ok))

    unnamed = [e for e in slices if not e["name"]]
    transfers = [e for e in slices if e["args"].get("op") == "send_recv"]
    peers_ok = all(e["args"]["peer"] != e["pid"] and e["args"]["peer"] in ranks and
                   e["args"]["peer"] % per_stage == e["pid"] % per_stage for e in transfers)
    kinds = sorted({e["args"]["op"] for e in slices if "op" in e["args"]})
    print("unnamed slices: %d; send/recv slices: %d, peers in the other stage: %s" % (
        len(unnamed), len(transfers), peers_ok))
    print("kinds:", ", ".join(kinds))
    print("phases:", ", ".join(sorted({e["cat"] for e in slices})))
    nodes = sorted({e["name"] for e in slices if e["args"].get("op") == "gemm"})
    print("a GEMM slice:", nodes[0] if nodes else "none")


if __name__ == "__main__":
    main()
