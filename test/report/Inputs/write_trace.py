"""Writes a trace in the format of a training program's --trace (Chrome
trace-event JSON: one process per rank, "otherData" naming the program)
for a pipeline of STAGES stages over RANKS ranks: per rank, two steps of
forward and backward passes of two micro-batches and one collective.

usage: write_trace.py OUT.json MODEL MESH RANKS STAGES
"""

import json
import sys


def main():
    out, model, mesh, ranks, stages = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    events = []
    per_stage = ranks // stages
    for rank in range(ranks):
        stage = rank // per_stage
        events.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0,
                       "args": {"name": "rank %d" % rank}})
        for step in range(2):
            t = 1000.0 * step + 50 * stage
            for mb in range(2):
                events.append({"ph": "X", "name": "forward", "cat": "forward", "pid": rank, "tid": 0,
                               "ts": t, "dur": 40, "args": {"step": step, "stage": stage, "microbatch": mb}})
                t += 50
            for mb in range(2):
                events.append({"ph": "X", "name": "backward", "cat": "backward", "pid": rank, "tid": 0,
                               "ts": t + 100, "dur": 80, "args": {"step": step, "stage": stage, "microbatch": mb}})
                t += 90
            events.append({"ph": "X", "name": "grads", "cat": "collective", "pid": rank, "tid": 0,
                           "ts": t + 120, "dur": 30, "args": {"step": step, "op": "all_reduce", "bytes": 4096}})
    json.dump({"traceEvents": events, "displayTimeUnit": "ms",
               "otherData": {"model": model, "mesh": mesh, "ranks": ranks}}, open(out, "w"))


if __name__ == "__main__":
    main()
