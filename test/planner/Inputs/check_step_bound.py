"""Checks a search that pruned against the same search that could not.

Usage: check_step_bound.py PRUNED.json EXHAUSTIVE.json K

The first search kept K plans and skipped layouts its bounds showed could
not be among them; the second kept so many that it skipped none. Prints
whether the first K plans agree (layout and every predicted number), how
many layouts the first search skipped, and whether every layout the
exhaustive search predicted takes at least the analytic bound
(search.compute_bound_ms over its ranks, stretched by its pipeline's
bubble (p - 1) / (m V + p - 1)): a step below it would make the bound
prune a plan it must not.
"""
import json
import sys


def flag(flags, name, default):
    return flags[flags.index(name) + 1] if name in flags else default


def main():
    pruned, exhaustive = (json.load(open(p)) for p in sys.argv[1:3])
    k = int(sys.argv[3])
    same = [a["flags"] == b["flags"] and a["predicted"] == b["predicted"]
            for a, b in zip(pruned["plans"][:k], exhaustive["plans"][:k])]
    print(f"top {k} the same: {all(same) and len(same) == k}")
    print(f"pruned: {pruned['search']['pruned']}, exhaustive pruned: "
          f"{exhaustive['search']['pruned']}")
    bound = exhaustive["search"]["compute_bound_ms"]
    below = 0
    checked = 0
    for layout in exhaustive["plans"] + exhaustive["rejected"]:
        if "predicted" not in layout:
            continue
        mesh = layout["mesh"]
        ranks = 1
        for size in mesh.values():
            ranks *= size
        flags = layout["flags"]
        p = mesh.get(layout.get("pipeline_axis") or "", 1)
        m = layout["microbatches"]
        v = int(flag(flags, "--virtual-stages", "1"))
        bubble = (p - 1) / (m * v + p - 1) if p > 1 else 0
        least = bound / ranks / (1 - bubble)
        checked += 1
        if layout["predicted"]["step_ms"] < least * (1 - 1e-9):
            below += 1
            print("BELOW", " ".join(flags), layout["predicted"]["step_ms"],
                  least)
    print(f"bound {bound > 0}: {checked} layouts checked, {below} below it")


if __name__ == "__main__":
    main()
