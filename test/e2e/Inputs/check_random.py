#!/usr/bin/python3
"""Checks random.test's draws: check_random.py RUN1 RUN2 (--dump-outputs
directories). Tolerances are about 5 standard errors of 20000 samples."""
import os
import sys

import numpy as np


def load(run, name):
    return np.load(os.path.join(run, name + ".npy")).astype(np.float64)


def main():
    run1, run2 = sys.argv[1], sys.argv[2]
    ok = True
    normal = load(run1, "normal")
    mean, std = normal.mean(), normal.std()
    good = abs(mean - 1) < 0.05 and abs(std - 2) < 0.04
    ok &= good
    print(f"normal: mean {mean:.4f} within 0.05 of 1, std {std:.4f} within "
          f"2% of 2" if good else f"FAIL normal: mean {mean}, std {std}")
    differ = not np.array_equal(normal, load(run1, "normal2"))
    ok &= differ
    print("normal, second op with the same attributes: different numbers"
          if differ else "FAIL the two RandomNormal ops drew the same numbers")
    uniform = load(run1, "uniform")
    target_std = 4 / np.sqrt(12)
    good = (uniform.min() >= -1 and uniform.max() < 3 and
            abs(uniform.mean() - 1) < 0.05 and
            abs(uniform.std() - target_std) < 0.02 * target_std)
    ok &= good
    print("uniform: all in [-1, 3), mean within 0.05 of 1, std within 2% of "
          f"{target_std:.4f}" if good else
          f"FAIL uniform: min {uniform.min()} max {uniform.max()} mean "
          f"{uniform.mean()} std {uniform.std()}")
    same = all(np.array_equal(load(run1, n), load(run2, n))
               for n in ("normal", "normal2", "uniform"))
    ok &= same
    print("second run: the same numbers" if same else
          "FAIL a second run drew other numbers")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
