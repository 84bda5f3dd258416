"""Checks the collectives a `cleave calibrate` cluster file holds for
structure and sanity (not speed): per group size of the ranks' mesh, the
three kinds at the probe's six sizes, bus bandwidths in (0, 1000) GB/s,
the time per call at 64 MiB above that at 4 KiB (from the comments),
inter_node repeating intra_node, device.comm_overlap in [-10, 1].

  check_calibrated_collectives.py local.yaml RANKS
"""
import re
import sys

import yaml

KINDS = ["all_reduce", "reduce_scatter", "all_gather"]
SIZES = [4096, 65536, 1048576, 4194304, 16777216, 67108864]


def groups_of(ranks):
    """The group sizes the probe measures: products of the ranks' prime
    factors, smallest first (2 and 4 of 4 ranks)."""
    factors, rest, p = [], ranks, 2
    while rest > 1:
        if rest % p == 0:
            factors.append(p)
            rest //= p
        else:
            p += 1
    sizes, product = [], 1
    for f in factors:
        product *= f
        sizes.append(product)
    return sizes


def main():
    path, ranks = sys.argv[1], int(sys.argv[2])
    text = open(path).read()
    cluster = yaml.safe_load(text)
    measured = cluster["intra_node"]["collectives"]
    problems = []
    if cluster["inter_node"] != cluster["intra_node"]:
        problems.append("inter_node differs from intra_node")
    if sorted(measured) != groups_of(ranks):
        problems.append(f"groups {sorted(measured)}, expected {groups_of(ranks)}")
    for group, kinds in measured.items():
        if list(kinds) != KINDS:
            problems.append(f"group {group}: kinds {list(kinds)}")
            continue
        for kind, points in kinds.items():
            if list(points) != SIZES:
                problems.append(f"group {group} {kind}: sizes {list(points)}")
            for size, gbs in points.items():
                if not 0 < gbs < 1000:
                    problems.append(f"group {group} {kind} {size}: {gbs} GB/s")
    overlap = cluster["device"]["comm_overlap"]
    if not -10 <= overlap <= 1:
        problems.append(f"comm_overlap {overlap}")
    # The comments' times: "#   all_reduce: 4096 12.6, ..., 67108864 17017.3".
    for group in measured:
        block = re.search(rf"groups of {group}, us per call.*\n((?:#   .*\n)+)",
                          text)
        if not block:
            problems.append(f"no times for groups of {group}")
            continue
        for line in block.group(1).splitlines():
            kind, times = line[1:].strip().split(": ")
            us = [float(p.split()[1]) for p in times.split(", ")]
            if not all(t > 0 for t in us) or not us[-1] > us[0]:
                problems.append(f"group {group} {kind}: times {us}")
    print(f"groups {sorted(measured)}: " + ", ".join(KINDS) +
          f" at {len(SIZES)} sizes, " +
          ("plausible" if not problems else "PROBLEMS: " + "; ".join(problems)))


if __name__ == "__main__":
    main()
