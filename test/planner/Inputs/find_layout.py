"""Finds a layout in `cleave plan --json`'s plans or rejected list by the
flags that build it, and prints `LIST: FLAGS`; exits 1 when it is not
there, or (rejected) when its reason lacks REASON.

usage: find_layout.py PLAN.json plans|rejected "FLAGS" [REASON]
"""

import json
import sys


def main():
    path, where, flags = sys.argv[1:4]
    reason = sys.argv[4] if len(sys.argv) > 4 else None
    with open(path) as f:
        plan = json.load(f)
    wanted = flags.split()
    for entry in plan[where]:
        # The flags after the batch binding, exactly.
        got = [f for f in entry["flags"] if not f.startswith("--input-shape")]
        if got != wanted:
            continue
        if reason is not None and reason not in entry.get("reason", ""):
            print(f"{where}: {flags}: reason is {entry.get('reason')!r}")
            return 1
        print(f"{where}: {flags}")
        return 0
    print(f"{flags} is not among the {len(plan[where])} {where}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
