"""Compiles a plan of `cleave plan --json` with exactly its flags, runs the
program under mpirun and checks the plan's predictions against what the
compiler and the program report:

  - comm_bytes_per_rank: the most bytes any rank sends per step, equal to
    the byte to `cleave compile --print-comm` and to the program's own
    --print-comm counters;
  - comm_bytes_by_kind: that rank's bytes per collective kind, likewise;
  - peak_bytes_per_rank: the most any rank holds, parameters and state
    plus scratch, equal to what the program's --print-memory reports.

usage: check_plan.py PLAN.json INDEX MODEL OUTDIR [--rejected] [--also FLAG]

--also FLAG adds FLAG to the plan's (--cuda-host-emulation: a cuda-target
plan built to run on the host).
"""

import json
import os
import re
import shutil
import subprocess
import sys


def parse_comm(text):
    ranks = {}
    for m in re.finditer(r"rank (\d+):((?: \w+=\d+)+)", text):
        ranks[int(m.group(1))] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return ranks


def parse_memory(text):
    return {int(r): (int(p), int(s)) for r, p, s in re.findall(
        r"rank (\d+): parameters and state (\d+) bytes, scratch (\d+) bytes", text)}


def main():
    plan_file, index, model, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    doc = json.load(open(plan_file))
    plan = doc["rejected" if "--rejected" in sys.argv else "plans"][index]
    predicted = plan["predicted"]
    os.makedirs(out, exist_ok=True)
    program = os.path.join(out, "train")
    cleave = shutil.which("cleave")
    also = [sys.argv[i + 1] for i, arg in enumerate(sys.argv) if arg == "--also"]
    compiled = subprocess.run([cleave, "compile", model, *plan["flags"], *also, "--print-comm",
                               "-o", program], capture_output=True, text=True)
    if compiled.returncode != 0:
        sys.exit("cleave compile failed:\n" + compiled.stderr)
    ranks = 1
    for size in plan["mesh"].values():
        ranks *= size
    run = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "--timeout", "600",
         "-x", "OMP_NUM_THREADS=1", "-np", str(ranks), program, "--synthetic",
         "--steps", "1", "--quiet", "--print-memory", "--print-comm"],
        capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("the program failed:\n" + run.stdout + run.stderr)

    failures = []
    memory = parse_memory(run.stdout)
    if len(memory) != ranks:
        failures.append(f"--print-memory reported {len(memory)} ranks, expected {ranks}")
    peak = max(p + s for p, s in memory.values())
    print(f"mesh {plan['mesh']} strategy {plan['strategy']} microbatches "
          f"{plan['microbatches']}: peak bytes per rank predicted "
          f"{predicted['peak_bytes_per_rank']}, --print-memory {peak}")
    if peak != predicted["peak_bytes_per_rank"]:
        failures.append("peak memory differs")
    for source, text in (("cleave compile --print-comm", compiled.stdout),
                         ("the program's --print-comm", run.stdout)):
        comm = parse_comm(text)
        if ranks > 1 and len(comm) != ranks:
            failures.append(f"{source} reported {len(comm)} ranks, expected {ranks}")
            continue
        busiest = max(comm.values(), key=lambda kinds: sum(kinds.values())) if comm else {}
        total = sum(busiest.values())
        print(f"  bytes sent per rank predicted {predicted['comm_bytes_per_rank']}, "
              f"{source} {total}")
        if total != predicted["comm_bytes_per_rank"]:
            failures.append(f"comm bytes differ from {source}")
        for kind, count in busiest.items():
            if predicted["comm_bytes_by_kind"][kind] != count:
                failures.append(f"{kind} bytes differ from {source}")
    if failures:
        sys.exit("check_plan: " + "; ".join(failures))
    print("  OK")


if __name__ == "__main__":
    main()
