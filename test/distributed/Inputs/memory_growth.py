"""Prints how much the largest rank's scratch (--print-memory) grows from
one run to another: `memory_growth.py A.mem B.mem` -> "scratch grows
N.Nx (A bytes -> B bytes)"."""
import re
import sys

LINE = re.compile(r"rank \d+: parameters and state \d+ bytes, scratch (\d+) bytes")


def scratch(path):
    values = [int(m.group(1)) for m in map(LINE.search, open(path)) if m]
    if not values:
        sys.exit(f"{path}: no --print-memory lines")
    return max(values)


a, b = (scratch(p) for p in sys.argv[1:3])
print(f"scratch grows {b / a:.1f}x ({a} bytes -> {b} bytes)")
