"""Checks each rank's measured memory (the program's --print-memory-peak)
against the compiler's plan (--print-memory, and the plan of the rank's
own stage that --print-memory-peak prints beside the measurement).

  measured_memory.py DIR [--scale-plan F]

DIR holds SCHEDULE-M-RECOMPUTE.out for SCHEDULE in gpipe, 1f1b, M in 2, 8
and RECOMPUTE in none, full: the stdout of a pp=2 run with --print-memory
--print-memory-peak. For every run and rank:

  - the plan printed beside the measurement agrees with --print-memory:
    the same parameters and state, and the scratch of the largest stage,
    which every rank allocates, is the largest rank's own;
  - measured = peak - file-backed (the program's image and libraries,
    which the plan does not hold) lies within -5% and +5% + 1 MiB of the
    planned parameters, state and stage scratch. The 1 MiB is what no plan
    holds and does not grow with the activations: OpenBLAS's GEMM packing
    buffer (in /proc/PID/smaps, 524 KiB touched on this model with the
    kernels OpenBLAS picks on the test machine, Cooperlake; 384 KiB with
    OPENBLAS_CORETYPE=Haswell) and MPI's and the heap's bookkeeping:
    610-710 KiB in all (470-570 KiB with Haswell's kernels). Where
    transparent huge pages are always on, a write can bring a 2 MiB page
    to the arena's end, whose last stretch a stage need not fill: 2 MiB
    more.

Across runs, activation memory (measured minus parameters and state):

  - from m=2 to m=8 it grows as planned (ratios within 5%), and 1F1B's
    stays flat (at most 1.25x; the plan's growth is the first-fit arena's
    fragmentation) while GPipe's grows with m (at least 2.5x);
  - full recomputation lowers the measured peak by the planned difference
    (within 5% of it).

--scale-plan multiplies every planned number: a plan 20% off must fail.

With DIR/checkpointed.out (the 1F1B m=2 run writing a checkpoint after
every step), every rank but rank 0 is within its plan's bounds there too:
checkpoints gather the model on rank 0 alone, and no other rank holds a
whole copy of it.
"""
import argparse
import os
import re
import sys

MIB = 1 << 20


def unplanned_allowance():
    """1 MiB, and a huge page more where the kernel hands them out unasked."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            always = "[always]" in f.read()
    except OSError:
        always = False
    return MIB + (2 * MIB if always else 0)
PLANNED = re.compile(r"rank (\d+): parameters and state (\d+) bytes, "
                     r"scratch (\d+) bytes")
MEASURED = re.compile(r"rank (\d+): peak (\d+) bytes, of which file-backed "
                      r"(\d+); planned (\d+) \(parameters and state (\d+), "
                      r"scratch of its stage (\d+)\)")
SCHEDULES, MICROBATCHES, RECOMPUTE = ("gpipe", "1f1b"), (2, 8), ("none", "full")


class Run:
    def __init__(self, path, scale):
        text = open(path).read()
        allocated = {int(r): (int(p), int(s))
                     for r, p, s in PLANNED.findall(text)}
        self.ranks = {}
        for r, peak, file, planned, persistent, scratch in MEASURED.findall(text):
            self.ranks[int(r)] = dict(
                measured=int(peak) - int(file), file=int(file),
                planned=int(planned) * scale,
                persistent=int(persistent) * scale,
                scratch=int(scratch) * scale)
        if not allocated or sorted(allocated) != sorted(self.ranks):
            sys.exit(f"{path}: no --print-memory or --print-memory-peak "
                     f"lines for every rank")
        self.consistent = all(
            allocated[r][0] * scale == self.ranks[r]["persistent"]
            for r in allocated) and max(
            v["scratch"] for v in self.ranks.values()) == max(
            s for _, s in allocated.values()) * scale

    def activations(self, rank):
        v = self.ranks[rank]
        return v["measured"] - v["persistent"], v["planned"] - v["persistent"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--scale-plan", type=float, default=1.0)
    a = p.parse_args()
    runs = {(s, m, r): Run(os.path.join(a.dir, f"{s}-{m}-{r}.out"),
                           a.scale_plan)
            for s in SCHEDULES for m in MICROBATCHES for r in RECOMPUTE}
    ok = True
    allowance = unplanned_allowance()

    def report(good, text):
        nonlocal ok
        ok &= good
        print(f"{'OK  ' if good else 'FAIL'} {text}")

    print("| schedule | m | recompute | rank | planned MB | measured MB |"
          " measured - planned KiB |")
    print("|---|---|---|---|---|---|---|")
    for (s, m, r), run in runs.items():
        for rank, v in sorted(run.ranks.items()):
            print(f"| {s} | {m} | {r} | {rank} | {v['planned'] / 1e6:.2f} | "
                  f"{v['measured'] / 1e6:.2f} | "
                  f"{(v['measured'] - v['planned']) / 1024:+.0f} |")
    for (s, m, r), run in runs.items():
        report(run.consistent, f"{s} m={m} {r}: the plans beside the "
               f"measurement are --print-memory's")
        for rank, v in sorted(run.ranks.items()):
            over = v["measured"] - v["planned"]
            report(-0.05 * v["planned"] <= over <= 0.05 * v["planned"] + allowance,
                   f"{s} m={m} {r} rank {rank}: measured {v['measured']} "
                   f"bytes, planned {v['planned']:.0f} ({over / 1024:+.0f} "
                   f"KiB)")
    for s in SCHEDULES:
        for rank in runs[(s, 2, "none")].ranks:
            (m2, p2), (m8, p8) = (runs[(s, m, "none")].activations(rank)
                                  for m in MICROBATCHES)
            grows, planned = m8 / m2, p8 / p2
            shape = grows <= 1.25 if s == "1f1b" else grows >= 2.5
            report(abs(grows - planned) <= 0.05 * planned and shape,
                   f"{s} rank {rank}: activations m=2 -> 8 grow {grows:.2f}x "
                   f"measured, {planned:.2f}x planned "
                   f"({'at most 1.25x' if s == '1f1b' else 'at least 2.5x'})")
    for s in SCHEDULES:
        for m in MICROBATCHES:
            none, full = runs[(s, m, "none")], runs[(s, m, "full")]
            for rank in none.ranks:
                saved = none.ranks[rank]["measured"] - full.ranks[rank]["measured"]
                planned = none.ranks[rank]["planned"] - full.ranks[rank]["planned"]
                report(saved > 0 and abs(saved - planned) <= 0.05 * planned,
                       f"{s} m={m} rank {rank}: full recomputation saves "
                       f"{saved} bytes measured, {planned:.0f} planned")
    checkpointed = os.path.join(a.dir, "checkpointed.out")
    if os.path.exists(checkpointed):
        run = Run(checkpointed, a.scale_plan)
        for rank, v in sorted(run.ranks.items()):
            if rank == 0:
                continue
            over = v["measured"] - v["planned"]
            report(-0.05 * v["planned"] <= over <= 0.05 * v["planned"] + allowance,
                   f"1f1b m=2 none, a checkpoint every step, rank {rank}: "
                   f"measured {v['measured']} bytes, planned "
                   f"{v['planned']:.0f} ({over / 1024:+.0f} KiB)")
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
