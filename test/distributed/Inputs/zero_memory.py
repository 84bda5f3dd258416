"""Checks ZeRO's memory claim on top of Megatron from the programs'
--print-memory output: on every rank, the parameters and state of the
Megatron+ZeRO program take exactly what Megatron alone holds there, with
each optimizer state block (and for stage 3 each parameter block) divided
by the data-parallel degree -- unless the block has no dimension that
tensor parallelism leaves whole and dp divides (a tp-split bias), which
stays whole over dp -- and less than Megatron alone.

Megatron alone's blocks come from its --dump-local directory, the gathered
shapes from its --dump-params directory (a block smaller than the gathered
tensor along a dimension is split there over tp).

  zero_memory.py --megatron M.mem --megatron-local DIR --megatron-params DIR
      --zero Z.mem --stage {1,2,3} --dp N
"""
import argparse
import os
import re
import sys

import numpy as np

LINE = re.compile(r"rank (\d+): parameters and state (\d+) bytes")
STATE_SUFFIXES = (".momentum_buffer", ".exp_avg", ".exp_avg_sq")


def read(path):
    with open(path) as f:
        return {int(m.group(1)): int(m.group(2))
                for m in map(LINE.search, f) if m}


def expected_bytes(local, params, stage, dp):
    total = 0
    for name in sorted(os.listdir(local)):
        block = np.load(os.path.join(local, name), mmap_mode="r")
        whole = np.load(os.path.join(params, name), mmap_mode="r").shape
        is_state = name[:-len(".npy")].endswith(STATE_SUFFIXES)
        split = is_state or stage == 3
        free = [d for d, (b, w) in enumerate(zip(block.shape, whole))
                if b == w and b % dp == 0]
        total += block.nbytes // dp if split and free else block.nbytes
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--megatron", required=True)
    p.add_argument("--megatron-local", required=True)
    p.add_argument("--megatron-params", required=True)
    p.add_argument("--zero", required=True)
    p.add_argument("--stage", type=int, choices=(1, 2, 3), required=True)
    p.add_argument("--dp", type=int, required=True)
    a = p.parse_args()
    megatron, zero = read(a.megatron), read(a.zero)
    ok = bool(zero) and sorted(zero) == sorted(megatron)
    if not ok:
        print(f"FAIL ranks: megatron {sorted(megatron)}, zero {sorted(zero)}")
    for rank in sorted(zero):
        want = expected_bytes(os.path.join(a.megatron_local, f"rank{rank}"),
                              a.megatron_params, a.stage, a.dp)
        good = zero[rank] == want and zero[rank] < megatron.get(rank, 0)
        ok &= good
        print(f"{'OK  ' if good else 'FAIL'} rank {rank}: parameters and "
              f"state {zero[rank]} bytes, expected {want}, megatron alone "
              f"{megatron.get(rank)}")
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
