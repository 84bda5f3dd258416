"""Writes DIR/x.npy [16, 4, SIDE, SIDE] and DIR/y.npy [16] (labels 0-7):
the data of test/planner/Inputs/make_dead_taps.py's model."""

import os
import sys

import numpy as np

out, side = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(1)
os.makedirs(out, exist_ok=True)
np.save(os.path.join(out, "x.npy"), rng.normal(0, 1, (16, 4, side, side)).astype(np.float32))
np.save(os.path.join(out, "y.npy"), rng.integers(0, 8, 16).astype(np.int64))
