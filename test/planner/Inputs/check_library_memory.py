"""MPI's own memory in `cleave plan`'s predictions.

A cpu cluster file's device.comm_library_bytes (what `cleave calibrate`
measures MPI keeping for itself on a rank) is counted once on every rank
of a plan of more than one rank, and on none of a single-rank plan: in
library_bytes_per_rank, in memory_by_stage[].libraries and in
needed_bytes_per_rank (the fit). (The model has no convolution: no
oneDNN primitive adds to it.)

usage: check_library_memory.py PLAN-2-RANKS.json PLAN-1-RANK.json BYTES
"""

import json
import sys


def main():
    many, one, library = sys.argv[1], sys.argv[2], int(sys.argv[3])
    plans = json.load(open(many))["plans"]
    each = [p["predicted"]["library_bytes_per_rank"] for p in plans]
    stages = [m["libraries"] for p in plans for m in p["memory_by_stage"]]
    # needed = the stage needing most: its parts, the library among them
    # (workspace includes the collective buffers). Estimated plans are
    # rolled from other programs' stages.
    counted = all(
        p["predicted"]["needed_bytes_per_rank"] == max(
            sum(v for k, v in m.items() if k != "collective_buffers")
            for m in p["memory_by_stage"])
        for p in plans if not p["predicted"]["estimated"])
    print(f"{len(plans)} plans on 2 ranks: library on every rank:",
          all(b == library for b in each + stages), "; in what they need:",
          counted)
    single = json.load(open(one))["plans"]
    print(f"{len(single)} plans on 1 rank: library:",
          sorted({p["predicted"]["library_bytes_per_rank"]
                  for p in single}))


if __name__ == "__main__":
    main()
