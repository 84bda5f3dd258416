"""Reads a pipelined cuda program's run (its stderr and --print-memory):
each stage's first rank reports its device block, whose scratch must be
that rank's own scratch from --print-memory (in MiB, as the report rounds
it). Prints one line per stage and the ratio check; exits 1 on a
mismatch."""
import re
import sys

text = open(sys.argv[1]).read()
reserved = [float(m.group(1)) for m in re.finditer(
    r"GPU \d+ \(host emulation\): needs [\d.]+ MiB of device memory "
    r"\(parameters and state [\d.]+ MiB, scratch ([\d.]+) MiB", text)]
planned = {int(m.group(1)): int(m.group(2)) for m in re.finditer(
    r"rank (\d+): parameters and state \d+ bytes, scratch (\d+) bytes", text)}
if len(reserved) != 2 or len(planned) != 4:
    sys.exit(f"expected 2 device reports and 4 ranks, read {reserved} and {planned}")
# With mesh pp=2,dp=2 (row-major), ranks 0 and 1 are stage 0, 2 and 3 stage 1.
stages = {0: planned[0], 1: planned[2]}
if planned[0] != planned[1] or planned[2] != planned[3]:
    sys.exit(f"ranks of one stage plan different scratch: {planned}")
for stage, rank in ((0, 0), (1, 2)):
    mib = f"{stages[stage] / 1048576:.1f}"
    if mib not in (f"{r:.1f}" for r in reserved):
        sys.exit(f"no device report with stage {stage}'s scratch {mib} MiB: {reserved}")
    print(f"stage {stage} reserves scratch of rank {rank}: {mib} MiB")
if stages[1] < 1.5 * stages[0]:
    sys.exit(f"stage 1's scratch {stages[1]} is not well above stage 0's {stages[0]}")
print(f"stage 1's scratch is at least 1.5x stage 0's ({stages[1] / stages[0]:.2f}x)")
