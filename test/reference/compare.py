#!/usr/bin/python3
"""Compares a compiled Cleave training run with torch_train.py's reference.

  /usr/bin/python3 test/reference/compare.py --reference DIR/reference \\
      --losses LOG.jsonl --params PARAMDIR
      [--loss-rtol 1e-5] [--param-tol 1e-3] [--param-atol 1e-6]

LOG.jsonl has one JSON object per line, {"step": k, "loss": x} (other keys
and blank lines are ignored); PARAMDIR holds the trained parameters as
<name>.npy. The checks:

  losses  every reference step k must be logged exactly once, with
          |ours - ref| <= loss_rtol * |ref|; the worst step is reported.
  params  for every tensor of DIR/reference/params, with
          update = max|ref - initial| (initial from
          DIR/reference/initial_params):
          max|ours - ref| <= max(param_tol * update, param_atol)
          (param_atol, default 1e-6, is the whole allowance where the update
          is 0, and a floor for tensors whose update is only rounding noise,
          such as a conv bias feeding a training-mode BatchNorm, whose exact
          gradient is 0).

Prints one line per check (OK or FAIL with the step or tensor and the
numbers) and exits 1 if any check fails, 2 on unusable arguments.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

def read_log(path):
    """Returns ({step: loss}, [problems])."""
    losses, problems = {}, []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                step, loss = rec["step"], rec["loss"]
            except (ValueError, KeyError, TypeError) as e:
                problems.append(f"{path}:{lineno}: unreadable record ({e})")
                continue
            if not isinstance(step, int) or isinstance(step, bool):
                problems.append(f"{path}:{lineno}: step {step!r} is not an "
                                f"integer")
                continue
            if step in losses:
                problems.append(f"{path}:{lineno}: step {step} logged twice")
                continue
            try:
                losses[step] = float(loss)
            except (TypeError, ValueError):
                problems.append(f"{path}:{lineno}: loss {loss!r} of step "
                                f"{step} is not a number")
    return losses, problems


def check_losses(ref, ours, problems, rtol):
    ok = not problems
    for p in problems:
        print(f"FAIL losses: {p}")
    missing = [k for k in range(len(ref)) if k not in ours]
    if missing:
        ok = False
        shown = ", ".join(map(str, missing[:10]))
        more = f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""
        print(f"FAIL losses: {len(missing)} of {len(ref)} reference steps not "
              f"logged: {shown}{more}")
    extra = sorted(k for k in ours if not 0 <= k < len(ref))
    if extra:
        print(f"note losses: ignoring {len(extra)} logged steps outside the "
              f"reference's 0..{len(ref) - 1}: {extra[:10]}")

    worst = None  # (excess over the tolerance, step, ours, ref, |diff|)
    failed = []
    for k, b in enumerate(ref):
        if k not in ours:
            continue
        a = ours[k]
        diff = abs(a - b) if math.isfinite(a) else math.inf
        allowed = rtol * abs(b)
        excess = diff / allowed if allowed > 0 else (0 if diff == 0 else
                                                     math.inf)
        if worst is None or excess > worst[0]:
            worst = (excess, k, a, b, diff)
        if not diff <= allowed:
            failed.append(k)
    if worst is None:
        print("FAIL losses: nothing to compare")
        return False
    _, k, a, b, diff = worst
    rel = diff / abs(b) if b != 0 else (0.0 if diff == 0 else math.inf)
    detail = (f"worst step {k}: ours {a!r}, reference {b!r}, |diff| "
              f"{diff:.3g}, relative {rel:.3g} (rtol {rtol:g})")
    if failed:
        print(f"FAIL losses: {len(failed)} of {len(ref)} steps outside rtol, "
              f"first step {failed[0]}; {detail}")
        return False
    print(f"OK   losses: {len(ref)} steps; {detail}")
    return ok


def check_params(ref_dir, ours_dir, tol, atol):
    ref_params = os.path.join(ref_dir, "params")
    init_params = os.path.join(ref_dir, "initial_params")
    names = sorted(f[:-4] for f in os.listdir(ref_params)
                   if f.endswith(".npy"))
    if not names:
        print(f"FAIL params: no reference parameters in {ref_params}")
        return False
    ok = True
    for name in names:
        ref = np.load(os.path.join(ref_params, name + ".npy"))
        init = np.load(os.path.join(init_params, name + ".npy"))
        path = os.path.join(ours_dir, name + ".npy")
        if not os.path.exists(path):
            print(f"FAIL param {name}: {path} is missing")
            ok = False
            continue
        ours = np.load(path)
        if ours.shape != ref.shape:
            print(f"FAIL param {name}: shape {list(ours.shape)}, reference "
                  f"{list(ref.shape)}")
            ok = False
            continue
        ref64 = ref.astype(np.float64)
        ours64 = ours.astype(np.float64)
        update = float(np.max(np.abs(ref64 - init.astype(np.float64)),
                              initial=0.0))
        if np.all(np.isfinite(ours64)):
            diffs = np.abs(ours64 - ref64)
            at = int(np.argmax(diffs)) if diffs.size else 0
            diff = float(diffs.reshape(-1)[at]) if diffs.size else 0.0
        else:
            at = int(np.argmin(np.isfinite(ours64).reshape(-1)))
            diff = math.inf
        if tol * update >= atol:
            allowed = tol * update
            rule = f"{tol:g} x update {update:.3g}"
        else:
            allowed = atol
            rule = f"absolute {atol:g} (update {update:.3g})"
        where = np.unravel_index(at, ref.shape) if ref.size else ()
        where = "[" + ", ".join(str(int(i)) for i in where) + "]"
        ours_at = float(ours.reshape(-1)[at]) if ours.size else 0.0
        ref_at = float(ref.reshape(-1)[at]) if ref.size else 0.0
        detail = (f"max|diff| {diff:.3g} at {where} (ours {ours_at:.7g}, "
                  f"reference {ref_at:.7g}), allowed {allowed:.3g} = {rule}")
        if diff <= allowed:
            print(f"OK   param {name}: {detail}")
        else:
            print(f"FAIL param {name}: {detail}")
            ok = False
    extra = sorted(f[:-4] for f in os.listdir(ours_dir)
                   if f.endswith(".npy") and f[:-4] not in names)
    if extra:
        print(f"note params: {len(extra)} files without a reference ignored: "
              f"{extra[:10]}")
    return ok


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reference", required=True,
                   help="torch_train.py's DIR/reference")
    p.add_argument("--losses", required=True, help="LOG.jsonl")
    p.add_argument("--params", required=True,
                   help="directory of trained <name>.npy")
    p.add_argument("--loss-rtol", type=float, default=1e-5)
    p.add_argument("--param-tol", type=float, default=1e-3)
    p.add_argument("--param-atol", type=float, default=1e-6)
    opts = p.parse_args(argv)
    for path in (os.path.join(opts.reference, "losses.json"),
                 os.path.join(opts.reference, "params"),
                 os.path.join(opts.reference, "initial_params"),
                 opts.losses, opts.params):
        if not os.path.exists(path):
            print(f"error: {path} does not exist", file=sys.stderr)
            return 2

    with open(os.path.join(opts.reference, "losses.json")) as f:
        ref_losses = [float(v) for v in json.load(f)]
    ours, problems = read_log(opts.losses)
    ok = check_losses(ref_losses, ours, problems, opts.loss_rtol)
    ok = check_params(opts.reference, opts.params, opts.param_tol,
                      opts.param_atol) and ok
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
