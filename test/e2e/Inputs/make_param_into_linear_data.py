"""Writes x.npy [4, 2] and y.npy [4] for Inputs/param-into-linear.onnxtxt."""
import sys

import numpy as np

rng = np.random.default_rng(0)
np.save(f"{sys.argv[1]}/x.npy", rng.standard_normal((4, 2)).astype(np.float32))
np.save(f"{sys.argv[1]}/y.npy", np.array([0, 1, 1, 0], dtype=np.int64))
