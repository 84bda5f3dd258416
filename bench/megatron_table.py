#!/usr/bin/python3
"""Cleave's cost model against Megatron-LM's published runs.

Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", SC'21, Table 1 (weak scaling on Selene, DGX
A100 80 GB nodes): for each GPT configuration, the paper's tensor (t),
pipeline (p) and data (d) parallel sizes, global batch and achieved
teraFLOP/s per GPU. All models: vocabulary 51,200, sequence 2,048, mixed
precision, activation recomputation; the paper counts
F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)) FLOPs per iteration (its
equation 3: forward, backward and the recomputed forward).

For each row this script writes a GPT skeleton of the row's shape
(scripts/make_gpt_skeleton.py, no weight data, Megatron-LM's per-head
q/k/v layout so that the fused projection splits over t), asks `cleave plan` for the
paper's own layout (`--mesh pp=p,dp=d,tp=t --strategy megatron --pipeline
pp`, micro-batches of --micro-batch-size samples, --schedule, `--recompute
full --precision bf16 --optimizer adamw`: Adam in mixed precision, as the
paper trains) on the `dgx-a100-80g` preset (or --cluster), and
turns the predicted step time into teraFLOP/s per GPU with the paper's F.
With --search it also lets `cleave plan` choose a layout for the same
GPUs and batch, and reports that plan's prediction.

  /usr/bin/python3 bench/megatron_table.py --markdown
  /usr/bin/python3 bench/megatron_table.py --rows 1.7B,18.4B --search

The cost model's efficiency constants are the preset's (planner/Cluster.cpp,
assumptions stated in the README), not fitted to these rows unless
--cluster names a file that is.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

VOCAB, SEQ = 51200, 2048
# Table 1 of the paper: parameters (billions), attention heads, hidden
# size, layers, t, p, GPUs, global batch, achieved teraFLOP/s per GPU.
TABLE1 = [
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142),
    ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138),
    ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
    ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148),
    ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
    ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163),
    ("1T", 160, 25600, 128, 8, 64, 3072, 3072, 163),
]


def paper_flops(batch, layers, hidden):
    """FLOPs per iteration as the paper counts them (its equation 3)."""
    return (96 * batch * SEQ * layers * hidden ** 2 *
            (1 + SEQ / (6 * hidden) + VOCAB / (16 * layers * hidden)))


def layout_flags(t, p, d, batch, mbs, schedule, virtual):
    mesh = ",".join(f"{a}={n}" for a, n in (("pp", p), ("dp", d), ("tp", t))
                    if n > 1) or "dp=1"
    flags = ["--mesh", mesh, "--strategy", "megatron" if t > 1 else "dp"]
    per_pipeline = batch // d
    microbatches = max(1, per_pipeline // mbs)
    if microbatches > 1:
        flags += ["--microbatches", str(microbatches)]
    if p > 1:
        flags += ["--pipeline", "pp", "--pipeline-schedule", schedule]
        if schedule == "interleaved":
            flags += ["--virtual-stages", str(virtual)]
    return flags, microbatches


def run_plan(cleave, model, cluster, gpus, batch, extra, out, timeout):
    start = time.perf_counter()
    try:
        p = subprocess.run([cleave, "plan", model, "--cluster", cluster,
                            "--ranks", str(gpus), "--global-batch",
                            str(batch), "--precision", "bf16", "--top", "1",
                            "--json", out] + extra,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"no answer in {timeout} s", timeout
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        return None, lines[-1] if lines else "failed", seconds
    with open(out) as f:
        result = json.load(f)
    if not result["plans"]:
        reason = result["rejected"][0].get("reason", "") \
            if result.get("rejected") else ""
        return None, "no plan fits: " + reason, seconds
    return result["plans"][0], "", seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", help="comma-separated row names (default all)")
    ap.add_argument("--cluster", default="dgx-a100-80g")
    ap.add_argument("--micro-batch-size", type=int, default=1)
    ap.add_argument("--schedule", default="1f1b",
                    choices=["gpipe", "1f1b", "interleaved"])
    ap.add_argument("--virtual-stages", type=int, default=2)
    ap.add_argument("--search", action="store_true",
                    help="also let cleave plan choose the layout")
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds allowed per cleave plan")
    ap.add_argument("--cleave", default=os.path.join(ROOT, "build", "bin",
                                                     "cleave"))
    ap.add_argument("--work", help="directory for the skeletons (kept)")
    ap.add_argument("--markdown", action="store_true")
    opts = ap.parse_args()
    work = opts.work or tempfile.mkdtemp(prefix="cleave-megatron-")
    os.makedirs(work, exist_ok=True)
    wanted = set(opts.rows.split(",")) if opts.rows else None
    head = ["model", "t", "p", "d", "GPUs", "batch", "micro-batches",
            "published TFLOP/s", "predicted step s", "predicted TFLOP/s",
            "predicted / published", "estimated", "plan s"]
    if opts.search:
        head += ["Cleave's plan", "its TFLOP/s", "search s"]
    print(f"cluster {opts.cluster}; schedule {opts.schedule}"
          + (f" (V={opts.virtual_stages})" if opts.schedule == "interleaved"
             else "") + f"; micro-batch size {opts.micro_batch_size}; "
          "bf16, full recomputation")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * 2 + "---:|" * (len(head) - 2))
    ratios = []
    for name, heads, hidden, layers, t, p, gpus, batch, published in TABLE1:
        if wanted and name not in wanted:
            continue
        d = gpus // (t * p)
        model = os.path.join(work, f"gpt-{name}.onnx")
        if not os.path.exists(model):
            subprocess.run(["/usr/bin/python3",
                            os.path.join(ROOT, "scripts",
                                         "make_gpt_skeleton.py"),
                            "-o", model, "--layers", str(layers), "--hidden",
                            str(hidden), "--heads", str(heads), "--seq",
                            str(SEQ), "--vocab", str(VOCAB), "--data", "none",
                            "--qkv-layout", "megatron"],
                           check=True, capture_output=True)
        flags, m = layout_flags(t, p, d, batch, opts.micro_batch_size,
                                opts.schedule, opts.virtual_stages)
        plan, why, seconds = run_plan(
            opts.cleave, model, opts.cluster, gpus, batch,
            flags + ["--recompute", "full", "--optimizer", "adamw"],
            os.path.join(work, f"{name}.json"), opts.timeout)
        flops = paper_flops(batch, layers, hidden)
        cells = [name, str(t), str(p), str(d), str(gpus), str(batch), str(m),
                 str(published)]
        if plan:
            step = plan["predicted"]["step_ms"] / 1e3
            tflops = flops / step / gpus / 1e12
            ratios.append(tflops / published)
            cells += [f"{step:.2f}", f"{tflops:.0f}",
                      f"{tflops / published:.2f}",
                      "yes" if plan["predicted"].get("estimated") else "no",
                      f"{seconds:.1f}"]
        else:
            cells += [why, "-", "-", "-", f"{seconds:.1f}"]
        if opts.search:
            # Micro-batch counts up to one sample each (powers of two).
            most = 1
            while most * 2 <= batch:
                most *= 2
            best, why2, seconds2 = run_plan(
                opts.cleave, model, opts.cluster, gpus, batch,
                ["--optimizer", "adamw", "--max-microbatches", str(most)],
                os.path.join(work, f"{name}.search.json"), opts.timeout)
            if best:
                tf = flops / (best["predicted"]["step_ms"] / 1e3) / gpus / 1e12
                flags = best["flags"]
                described = [best["mesh_flag"], best["strategy"],
                             f"mb={best['microbatches']}"]
                for flag in ("--pipeline-schedule", "--virtual-stages",
                             "--recompute"):
                    if flag in flags:
                        described.append(flags[flags.index(flag) + 1])
                cells += [" ".join(described), f"{tf:.0f}", f"{seconds2:.1f}"]
            else:
                cells += [why2, "-", f"{seconds2:.1f}"]
        print("| " + " | ".join(cells) + " |", flush=True)
    if ratios:
        ratios.sort()
        print(f"\npredicted / published: median {ratios[len(ratios) // 2]:.2f}, "
              f"range {ratios[0]:.2f}-{ratios[-1]:.2f} over {len(ratios)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
