#!/usr/bin/python3
"""Checks an exported model (ONNX checker) and that onnxruntime's loss on a
batch equals the training program's logged loss for that step (1e-5
relative)."""

import argparse
import json
import sys

import onnx


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--step", type=int, required=True)
    p.add_argument("--ort", required=True)
    p.add_argument("--model", required=True)
    a = p.parse_args()
    model = onnx.load(a.model)
    onnx.checker.check_model(model)
    dynamic = any(d.dim_param for i in model.graph.input
                  for d in i.type.tensor_type.shape.dim)
    print("exported model valid;", "dynamic dims kept" if dynamic else "static dims")
    with open(a.log) as f:
        losses = {e["step"]: e["loss"] for e in map(json.loads, f)}
    with open(a.ort) as f:
        ort = json.load(f)["loss"][0]
    ours = losses[a.step]
    if abs(ort - ours) > 1e-5 * abs(ours):
        sys.exit(f"onnxruntime loss {ort} != step {a.step} loss {ours}")
    print(f"onnxruntime loss {ort:.8g} matches step {a.step} ({ours:.8g})")


if __name__ == "__main__":
    main()
