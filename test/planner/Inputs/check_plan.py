"""Compiles a plan of `cleave plan --json` with exactly its flags, runs the
program under mpirun and checks the plan's predictions against what the
compiler and the program report:

  - comm_bytes_per_rank: the most bytes any rank sends per step, equal to
    the byte to `cleave compile --print-comm` and to the program's own
    --print-comm counters;
  - comm_bytes_by_kind: that rank's bytes per collective kind, likewise;
  - peak_bytes_per_rank: the most any rank holds, parameters and state
    plus scratch, equal to what the program's --print-memory reports;
  - on the cpu target, memory_by_stage[].workspace: the bytes each rank's
    kernels hold in workspaces of their own (oneDNN's convolutions, the
    strided products' gather buffer) and its collectives
    in buffers of their own (memory_by_stage[].collective_buffers), and
    memory_by_stage[].inputs: the bytes its step's inputs hold (its blocks
    of them, the --synthetic batch they are copied from), each equal to
    what the program's --print-memory-peak reports for it (and
    workspace_bytes_per_rank, input_bytes_per_rank the most of any rank);
    with --primitives-counted (a cluster file whose
    onednn_primitive_bytes is 1 and which has no comm_library_bytes),
    memory_by_stage[].libraries: the oneDNN primitives each rank creates,
    equal to the count its --print-memory-peak reports.

usage: check_plan.py PLAN.json INDEX MODEL OUTDIR [--rejected] [--also FLAG]
                     [--threads N] [--measured-bound] [--primitives-counted]

--also FLAG adds FLAG to the plan's (--cuda-host-emulation: a cuda-target
plan built to run on the host). --threads: OpenMP threads per rank
(default 1). --measured-bound: the measured rise of each rank's resident
set (its peak less file-backed pages) is at most its plan plus its
workspaces and inputs plus 1 MiB that no plan holds (OpenBLAS's packing buffer,
MPI's bookkeeping; 2 MiB more where transparent huge pages are always on,
as in test/distributed/Inputs/measured_memory.py), and where it has
workspaces, more than its plan plus that 1 MiB (the plan alone falls
short).
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


MEASURED = re.compile(r"rank (\d+): peak (\d+) bytes, of which file-backed "
                      r"(\d+); planned (\d+) .*; kernel workspaces (\d+); "
                      r"collective buffers (\d+); inputs (\d+); "
                      r"oneDNN primitives (\d+)")


def unplanned_allowance():
    try:
        always = "[always]" in open(
            "/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        always = False
    return (1 << 20) + ((2 << 20) if always else 0)


def stage_of(plan, rank):
    """The pipeline stage of `rank` in the plan's mesh (row-major over the
    axes in mesh_flag's order); 0 without stages."""
    axis = plan.get("pipeline_axis")
    if not axis:
        return 0
    sizes = [(a, int(n)) for a, n in
             (part.split("=") for part in plan["mesh_flag"].split(","))]
    stride = 1
    for a, n in reversed(sizes):
        if a == axis:
            return rank // stride % n
        stride *= n
    return 0


def check_workspaces(plan, text, failures, bound, primitives_counted):
    """The cpu target's kernel workspaces, collective buffers, inputs,
    oneDNN primitives and measured memory, per rank."""
    measured = {int(m.group(1)): [int(g) for g in m.groups()[1:]]
                for m in MEASURED.finditer(text)}
    stages = plan["memory_by_stage"]
    most = most_inputs = 0
    for rank, (peak, file, planned, kernels, collectives, inputs,
               primitives) in sorted(measured.items()):
        stage = stages[stage_of(plan, rank)]
        predicted = stage["workspace"]
        buffers = stage["collective_buffers"]
        most = max(most, kernels + collectives)
        most_inputs = max(most_inputs, inputs)
        rise = peak - file
        print(f"  rank {rank}: kernel workspaces predicted "
              f"{predicted - buffers}, held {kernels}; collective buffers "
              f"predicted {buffers}, held {collectives}; inputs predicted "
              f"{stage['inputs']}, held {inputs}; measured {rise} bytes, "
              f"planned {planned}")
        if kernels != predicted - buffers:
            failures.append(f"rank {rank}'s kernel workspaces differ")
        if collectives != buffers:
            failures.append(f"rank {rank}'s collective buffers differ")
        if inputs != stage["inputs"]:
            failures.append(f"rank {rank}'s inputs differ")
        if primitives_counted:
            print(f"  rank {rank}: oneDNN primitives predicted "
                  f"{stage['libraries']}, created {primitives}")
            if primitives != stage["libraries"]:
                failures.append(f"rank {rank}'s oneDNN primitives differ")
        beside = predicted + stage["inputs"]
        if bound and rise > planned + beside + unplanned_allowance():
            failures.append(f"rank {rank} measured more than its plan, "
                            "workspaces and inputs")
        if bound and kernels and rise <= planned + unplanned_allowance():
            failures.append(f"rank {rank} measured no more than its plan")
    if most != plan["predicted"]["workspace_bytes_per_rank"]:
        failures.append("workspace_bytes_per_rank differs from the most any "
                        "rank holds")
    if most_inputs != plan["predicted"]["input_bytes_per_rank"]:
        failures.append("input_bytes_per_rank differs from the most any "
                        "rank holds")


def option(name):
    """The value after `name` in the arguments, or None."""
    args = sys.argv
    return args[args.index(name) + 1] if name in args[:-1] else None


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
    # --print-memory-peak measures the host's memory: the cpu target's.
    cuda = "--cuda-host-emulation" in also
    threads = int(option("--threads") or 1)
    ranks = 1
    for size in plan["mesh"].values():
        ranks *= size
    run = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "--timeout", "600",
         "-x", f"OMP_NUM_THREADS={threads}", "-np", str(ranks), program,
         "--synthetic",
         "--steps", "1", "--quiet", "--print-memory", "--print-comm"]
        + ([] if cuda else ["--print-memory-peak"]),
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
    if not cuda:
        check_workspaces(plan, run.stdout, failures,
                         "--measured-bound" in sys.argv,
                         "--primitives-counted" in sys.argv)
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
