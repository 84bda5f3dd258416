"""Checks that `cleave plan --json` files hold the same plans in the same
order with the same predictions (the timing of the search aside)."""

import json
import sys

docs = [json.load(open(path)) for path in sys.argv[1:]]
keys = [[(p["flags"], p["predicted"]) for p in d["plans"] + d["rejected"] if "predicted" in p]
        for d in docs]
for path, other in zip(sys.argv[2:], keys[1:]):
    if other != keys[0]:
        sys.exit(f"same_plans: {path} differs from {sys.argv[1]}")
print(f"{len(docs[0]['plans'])} plans, the same layouts and predictions in all "
      f"{len(docs)} files")
