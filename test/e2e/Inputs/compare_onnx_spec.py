#!/usr/bin/python3
"""Compares a training program's log and dumped tensors with
onnx_training_reference.py's output: each loss within 1e-5 relative, each
tensor within 1e-5 absolute + 1e-5 relative (float32 against a float64
reference of the same arithmetic)."""

import argparse
import json
import os
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--params", required=True)
    p.add_argument("--reference", required=True)
    a = p.parse_args()
    with open(os.path.join(a.reference, "losses.json")) as f:
        reference = json.load(f)
    with open(a.log) as f:
        ours = [json.loads(line)["loss"] for line in f]
    if len(ours) != len(reference):
        sys.exit(f"{len(ours)} logged steps, {len(reference)} in the reference")
    worst = max(abs(o - r) / abs(r) for o, r in zip(ours, reference))
    if worst > 1e-5:
        sys.exit(f"losses differ: worst relative difference {worst:.3g}")
    print(f"losses: {len(ours)} steps match (worst relative {worst:.2g})")
    for name in sorted(os.listdir(os.path.join(a.reference, "params"))):
        want = np.load(os.path.join(a.reference, "params", name))
        got = np.load(os.path.join(a.params, name))
        if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            sys.exit(f"{name}: max difference {np.abs(got - want).max():.3g}")
        print(f"{name[:-4]} matches")


if __name__ == "__main__":
    main()
