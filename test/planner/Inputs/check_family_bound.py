"""Checks the layouts `cleave plan` rejected by its memory bounds against
the compiler, each evaluated alone (cleave plan --mesh ..., partitioned
in full), which must not fit either:

  - the family bound (planner/FamilyMemoryBound.h): the layout the bound
    stands for (its mesh and strategy, one micro-batch of the size the
    reason names, full recomputation); one line per family;
  - the bound from a layout's one-micro-batch sibling (its scratch split
    into m micro-batches): the layout itself with full recomputation; one
    line per layout.

usage: check_family_bound.py PLAN.json MODEL CLUSTER [FLAG...]

The FLAGs (the search's training flags, --optimizer ...) join each
evaluation.
"""

import json
import re
import subprocess
import sys
import tempfile


def main():
    plan_path, model, cluster = sys.argv[1:4]
    training = sys.argv[4:]
    plan = json.load(open(plan_path))
    rejected = [p for p in plan["rejected"]
                if "(the smallest of its mesh and strategy)" in p.get("reason", "")]
    families = {}
    for p in rejected:
        key = (p["mesh_flag"], p["strategy"], p["pipeline_axis"])
        families.setdefault(key, p)
    print("rejected by the family bound:", len(rejected))
    for (mesh, strategy, pipeline), p in sorted(families.items()):
        samples = int(re.search(r"one micro-batch of (\d+) samples", p["reason"]).group(1))
        dp = p["mesh"].get("dp", 1)
        flags = ["--mesh", mesh, "--recompute", "full"]
        if strategy != "none":
            flags += ["--strategy", strategy]
        if pipeline:
            flags += ["--pipeline", pipeline, "--pipeline-schedule", "1f1b"]
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run(["cleave", "plan", model, "--cluster", cluster,
                            "--global-batch", str(samples * dp), "--json", out.name]
                           + flags + training, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            alone = json.load(open(out.name))
        exact = (alone["plans"] + alone["rejected"])[0]
        verdict = ("does not fit either" if exact.get("reason", "").startswith("does not fit")
                   else "FITS: the bound was wrong")
        print(mesh, strategy, pipeline or "-", samples, "samples:", verdict)
    split = [p for p in plan["rejected"]
             if "layout's memory" in p.get("reason", "") and "split into" in p["reason"]]
    print("rejected by the one-micro-batch bound:", len(split))
    for p in split:
        flags = [f for f in p["flags"] if not f.startswith("--input-shape")
                 and not f.startswith("--target")] + ["--recompute", "full"]
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run(["cleave", "plan", model, "--cluster", cluster,
                            "--global-batch", str(plan["global_batch"]),
                            "--json", out.name] + flags + training,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            alone = json.load(open(out.name))
        exact = (alone["plans"] + alone["rejected"])[0]
        verdict = ("does not fit either" if exact.get("reason", "").startswith("does not fit")
                   else "FITS: the bound was wrong")
        print(" ".join(flags), ":", verdict)


main()
