"""The libraries' own memory against the resident set measured.

Plans MODEL on one rank with a calibrated cluster file (its
onednn_primitive_bytes; MPI's memory counts only with more than one
rank), compiles the plan, runs it (--print-memory-peak, the file's threads)
and compares what the plan says the rank needs (plan, workspaces, inputs,
BLAS packing, libraries) with the measured rise of its resident set: within
--within of it, with and without the libraries' part.

usage: check_measured_libraries.py MODEL CLUSTER.yaml OUTDIR BATCH
                                   [--within F]
"""

import json
import os
import re
import subprocess
import sys


def run(args, env=None):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)} exited {p.returncode}:\n"
                 f"{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def main():
    model, cluster, out, batch = sys.argv[1:5]
    within = float(sys.argv[sys.argv.index("--within") + 1]) \
        if "--within" in sys.argv else 0.10
    os.makedirs(out, exist_ok=True)
    threads = re.search(r"^  threads: (\d+)", open(cluster).read(), re.M)
    plan_json = os.path.join(out, "plan.json")
    run(["cleave", "plan", model, "--cluster", cluster, "--ranks", "1",
         "--global-batch", batch, "--max-microbatches", "1",
         "--json", plan_json])
    plan = json.load(open(plan_json))["plans"][0]
    predicted = plan["predicted"]
    program = os.path.join(out, "train")
    run(["cleave", "compile", model] + plan["flags"] + ["-o", program])
    env = dict(os.environ,
               OMP_NUM_THREADS=threads.group(1) if threads else "1")
    report = run([program, "--synthetic", "--steps", "2",
                  "--print-memory-peak"], env)
    m = re.search(r"peak (\d+) bytes, of which file-backed (\d+);.*"
                  r"oneDNN primitives (\d+)", report)
    if not m:
        sys.exit("FAILED: no --print-memory-peak line:\n" + report)
    rise = int(m.group(1)) - int(m.group(2))
    needed = predicted["needed_bytes_per_rank"]
    libraries = predicted["library_bytes_per_rank"]
    ratio, without = needed / rise, (needed - libraries) / rise
    print(f"primitives created: {m.group(3)}")
    print(f"libraries predicted {libraries}; needed {needed}, measured "
          f"{rise}: {ratio:.3f}, without the libraries {without:.3f}")
    print("within 10%:" if within == 0.10 else f"within {within}:",
          abs(ratio - 1) <= within, "; without the libraries within 10%:"
          if within == 0.10 else "; without the libraries within:",
          abs(without - 1) <= within)


if __name__ == "__main__":
    main()
