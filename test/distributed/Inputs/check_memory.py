"""Checks ZeRO-3's memory claim from the programs' --print-memory output:
every rank's parameters + optimizer state are at most a quarter of the
single-rank program's (plus what does not divide by 4 and stays whole), and
its scratch (activations, gradients, gathered parameters) at most the
single-rank scratch plus the largest gathered parameter.

  check_memory.py --single single.mem --zero3 zero3.mem --ranks 4
      --largest-param-bytes N
"""
import argparse
import re
import sys

LINE = re.compile(r"rank (\d+): parameters and state (\d+) bytes, scratch (\d+) bytes")


def read(path):
    with open(path) as f:
        return [(int(m.group(2)), int(m.group(3)))
                for m in map(LINE.search, f) if m]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--single", required=True)
    p.add_argument("--zero3", required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--largest-param-bytes", type=int, required=True)
    p.add_argument("--whole-bytes", type=int, default=0,
                   help="bytes of tensors no dimension of which divides")
    a = p.parse_args()
    (single_persistent, single_scratch), = read(a.single)
    ranks = read(a.zero3)
    ok = len(ranks) == a.ranks
    limit = single_persistent // a.ranks + a.whole_bytes
    for rank, (persistent, scratch) in enumerate(ranks):
        good = persistent <= limit and \
            scratch <= single_scratch + a.largest_param_bytes
        ok &= good
        print(f"{'OK  ' if good else 'FAIL'} rank {rank}: parameters and "
              f"state {persistent} <= {limit} (single {single_persistent} / "
              f"{a.ranks}), scratch {scratch} <= {single_scratch} + "
              f"{a.largest_param_bytes}")
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
