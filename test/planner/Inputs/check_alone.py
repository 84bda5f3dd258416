"""Checks that every layout a search predicted exactly (a plan, or a
rejected layout with a prediction that is not the rolled estimate) is
predicted the same, to the last digit, when evaluated alone: `cleave plan
--mesh ...` with the layout's own flags (the single-layout path, nothing
shared with other layouts, one thread).

usage: check_alone.py PLAN.json MODEL CLUSTER
"""

import json
import subprocess
import sys
import tempfile


def main():
    plan_path, model, cluster = sys.argv[1:4]
    plan = json.load(open(plan_path))
    exact = [p for p in plan["plans"] + plan["rejected"]
             if "predicted" in p and not p["predicted"]["estimated"]]
    differ = 0
    for p in exact:
        flags = [f for f in p["flags"] if not f.startswith("--input-shape")
                 and not f.startswith("--target")]
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run(["cleave", "plan", model, "--cluster", cluster,
                            "--global-batch", str(plan["global_batch"]),
                            "--threads", "1", "--json", out.name] + flags,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            alone = json.load(open(out.name))
        first = (alone["plans"] + alone["rejected"])[0]
        if first.get("predicted") != p["predicted"]:
            differ += 1
            print("DIFFERS:", " ".join(flags))
    print(f"{len(exact)} layouts predicted exactly, {differ} differ alone")


main()
