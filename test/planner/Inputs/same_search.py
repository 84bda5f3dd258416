"""Compares `cleave plan` runs (PREFIX.json and PREFIX.txt each): the
--json apart from search.seconds, the table apart from the search time."""

import json
import re
import sys

runs = []
for prefix in sys.argv[1:]:
    doc = json.load(open(prefix + ".json"))
    assert doc["search"].pop("seconds") > 0
    text = re.sub(r"searched in [0-9.]+ s", "searched", open(prefix + ".txt").read())
    runs.append((doc, text))
for prefix, run in zip(sys.argv[2:], runs[1:]):
    if run[0] != runs[0][0]:
        sys.exit(f"{prefix}.json differs from {sys.argv[1]}.json")
    if run[1] != runs[0][1]:
        sys.exit(f"{prefix}.txt differs from {sys.argv[1]}.txt")
doc = runs[0][0]
estimated = sum(p["predicted"]["estimated"] for p in doc["plans"] + doc["rejected"]
                if "predicted" in p)
print(f"{len(doc['plans'])} plans, {len(doc['rejected'])} rejected, "
      f"{doc['search']['pruned']} pruned"
      + (f", {estimated} estimated" if estimated else "")
      + f": the same in all {len(runs)}")
