#!/usr/bin/env python3
"""Compile time and binary size against the number of layers (issue 21).

For each layer count, scripts/make_gpt_skeleton.py writes a GPT decoder
(hidden 64, 4 heads, sequence 32, vocabulary 128: tiny on purpose, so that
the layer count and not the tensors' sizes is what grows), and the script
times `cleave compile` on it (wall seconds, peak memory of the process
tree as /usr/bin/time reports it):

  IR dp x tp     the IR pipeline alone (--compile-to=stages) on --mesh
                 dp=2,tp=2 --strategy megatron
  IR pp x dp x tp  the same with two pipeline stages (--mesh pp=2,dp=2,tp=2
                 --pipeline pp) and 4 micro-batches, 1F1B
  binary         the whole compile to a program on dp=2,tp=2 (g++ included)

and reports the binary's size, its code (.text) and its embedded data (the
initial values and the original model, each holding the weights once).
The weights are random (--data random), as a real model's are.

  /usr/bin/python3 bench/compile_bench.py [--layers 12,48,96,192] [--markdown]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DP_TP = ["--mesh", "dp=2,tp=2", "--strategy", "megatron"]
PP_DP_TP = ["--mesh", "pp=2,dp=2,tp=2", "--strategy", "megatron",
            "--pipeline", "pp", "--microbatches", "4",
            "--pipeline-schedule", "1f1b"]
COMMON = ["--input-shape", "batch=8", "--optimizer", "adamw"]


def timed(cmd):
    """(wall seconds, peak resident MB) of cmd, which must succeed."""
    out = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + cmd,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    m = re.search(r"TIME ([0-9.]+) ([0-9]+)", out.stderr)
    return float(m.group(1)), int(m.group(2)) / 1024


def section_sizes(binary):
    """Bytes of .text and of .rodata (where the embedded data lies)."""
    out = subprocess.run(["size", "-A", binary], capture_output=True,
                         text=True, check=True).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("."):
            sizes[parts[0]] = int(parts[1])
    return sizes.get(".text", 0), sizes.get(".rodata", 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="12,48,96,192")
    ap.add_argument("--cleave", default=os.path.join(ROOT, "build", "bin",
                                                     "cleave"))
    ap.add_argument("--markdown", action="store_true")
    opts = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for layers in [int(x) for x in opts.layers.split(",")]:
            model = os.path.join(work, f"gpt{layers}.onnx")
            subprocess.run(
                ["/usr/bin/python3",
                 os.path.join(ROOT, "scripts", "make_gpt_skeleton.py"),
                 "-o", model, "--layers", str(layers), "--hidden", "64",
                 "--heads", "4", "--seq", "32", "--vocab", "128",
                 "--data", "random"], check=True, capture_output=True)
            weights = os.path.getsize(model + ".data")
            ir, _ = timed([opts.cleave, "compile", model, *DP_TP, *COMMON,
                           "--compile-to=stages", "-o",
                           os.path.join(work, "ir.mlir")])
            ir_pp, _ = timed([opts.cleave, "compile", model, *PP_DP_TP,
                              *COMMON, "--compile-to=stages", "-o",
                              os.path.join(work, "ir-pp.mlir")])
            binary = os.path.join(work, f"train{layers}")
            full, peak = timed([opts.cleave, "compile", model, *DP_TP,
                                *COMMON, "-o", binary])
            text, rodata = section_sizes(binary)
            rows.append(dict(layers=layers, weights=weights, ir=ir,
                             ir_pp=ir_pp, full=full, peak=peak,
                             size=os.path.getsize(binary), text=text,
                             rodata=rodata))
            print(f"layers {layers}: IR {ir:.2f} s, IR pp {ir_pp:.2f} s, "
                  f"binary {full:.1f} s", file=sys.stderr)
    mb = 1 << 20
    header = ["layers", "weights MB", "IR dp x tp s", "IR pp x dp x tp s",
              "to a binary s", "peak MB", "binary MB", ".text MB",
              "embedded data MB"]
    table = [[str(r["layers"]), f"{r['weights'] / mb:.1f}", f"{r['ir']:.2f}",
              f"{r['ir_pp']:.2f}", f"{r['full']:.1f}", f"{r['peak']:.0f}",
              f"{r['size'] / mb:.1f}", f"{r['text'] / mb:.2f}",
              f"{r['rodata'] / mb:.1f}"] for r in rows]
    if opts.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---:|" * len(header))
        for row in table:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(row[i]) for row in table))
                  for i, h in enumerate(header)]
        for row in [header] + table:
            print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    print(f"\n{os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
