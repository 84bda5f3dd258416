"""One plain-SGD step (lr 0.1) of Inputs/param-into-linear.onnxtxt in numpy,
against the parameters a compiled program dumped: q and w are both trained,
and w's gradient must use q's value before q's update.

  check_param_into_linear.py DATA_DIR PARAMS_DIR
"""
import sys

import numpy as np

data, params = sys.argv[1:3]
x = np.load(f"{data}/x.npy").astype(np.float64)
y = np.load(f"{data}/y.npy")
q = np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, -0.1, 0.2,
              -0.3]).reshape(4, 3)
w = np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6]).reshape(2, 3)
z = q @ w.T + x
p = np.exp(z - z.max(1, keepdims=True))
p /= p.sum(1, keepdims=True)
dz = p.copy()
dz[np.arange(len(y)), y] -= 1
dz /= len(y)
want = {"q": q - 0.1 * dz @ w, "w": w - 0.1 * dz.T @ q}
for name, value in want.items():
    err = np.abs(np.load(f"{params}/{name}.npy") - value).max()
    print(f"{'OK' if err < 1e-6 else 'FAIL'} {name} {err:.1e}")
