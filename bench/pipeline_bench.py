#!/usr/bin/python3
"""Pipeline stages: step time of one model trained three ways by Cleave.

  /usr/bin/python3 bench/pipeline_bench.py [--layers 8] [--width 1024]
      [--input-features N] [--batch 256] [--microbatches 8]
      [--virtual-stages 2] [--steps 10] [--rounds 1] [--markdown]

The model: an MLP of `layers` Linear+ReLU layers of `width` features and a
cross-entropy loss, exported from PyTorch. Its first layer computes no
input gradient (the data needs none), so with `width` input features it is
a third lighter than the others and two stages of whole layers cannot be
equal (23 thirds of a layer: 11 against 12). With `--input-features N`
(N much smaller than `width`) a narrow first layer takes the data in and
`layers` equal layers follow, which two stages split evenly: the bubble of
the schedule alone.

  single    one rank, one thread;
  pp=2      2 ranks (one thread each), `--mesh pp=2 --pipeline pp`: the
            layers in two stages that run one after the other (naive model
            parallelism: the memory is split, the time is not);
  pp=2, mbN the same with `--microbatches N`, in each schedule: GPipe
            (every forward pass, then every backward pass), 1F1B, and
            interleaved 1F1B with V chunks of layers per stage.

The bubble: one rank running the same micro-batches (gradient
accumulation) does twice a stage's work; the share of a pipelined step
beyond half of that is the bubble (with the transfers), next to the
schedule's ideal (p - 1) / (m V + p - 1). Each pipelined run is also
traced (`--trace`), and each stage's idle share of that step
(no compute slice running: the bubble and the waits for hand-overs, as
its timeline shows them) is listed per stage (steps 2-4 traced), and that idle time over the
stage's compute time next to (p - 1) / (m V), the bubble fraction of
Narayanan et al. (2021) (V = 1 for GPipe and 1F1B).

With --rounds R every configuration is timed R times, the configurations
taking turns, and the fastest of each is listed (the host's other load
only ever slows a run down); the load average (1 minute) is printed before
and after, so that a table says how quiet the host was.

The ideal speed-up of p stages over one rank is p m V / (m V + p - 1) (all
stages busy but for the fill and drain); "of ideal" is the measured
speed-up over one rank without micro-batches as a share of it.

All train with SGD (lr 0.01) on synthetic data, the same global batch,
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 and the same OpenBLAS; seconds
per step come from rank 0's progress lines after the first fifth of the
steps (bench.run_cleave). The ideal for 2 stages of equal work is 2x
single's speed less the pipeline's fill and drain (N + 1 slots of work for
2N: at most 2N / (N + 1), 1.6x for N = 4).

There is no PyTorch column: Debian's PyTorch 1.13 has no CPU pipeline
(torch.distributed.pipeline.sync.Pipe places stages on CUDA devices).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench  # noqa: E402  (export and progress-line parsing)

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def environment():
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OMP_WAIT_POLICY="PASSIVE", LD_LIBRARY_PATH=bench.OPENBLAS_DIR)
    return env


def export_deep_mlp(layers, width, batch, path, input_features=None):
    import contextlib
    import io
    import torch
    import torch.nn as nn

    class DeepMLP(nn.Module):
        def __init__(self):
            super().__init__()
            stem = ([nn.Linear(input_features, width), nn.ReLU()]
                    if input_features else [])
            self.layers = nn.Sequential(*stem, *[
                m for _ in range(layers)
                for m in (nn.Linear(width, width), nn.ReLU())])
            self.loss_fn = nn.CrossEntropyLoss()

        def forward(self, x, y):
            return self.loss_fn(self.layers(x), y)

    torch.manual_seed(0)
    args = (torch.randn(batch, input_features or width),
            torch.randint(0, width, (batch,)))
    model = DeepMLP().train()
    with contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        torch.onnx.export(model, args, path, input_names=["x", "y"],
                          output_names=["loss"], opset_version=bench.OPSET,
                          do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING)


def compile_program(model, flags, ranks, work, name):
    """The program's command (a launcher script under mpirun for ranks >
    1)."""
    binary = os.path.join(work, name)
    subprocess.run([os.path.join(ROOT, "build", "bin", "cleave"), "compile",
                    model, "--optimizer", "sgd", "--lr", str(bench.LR),
                    *flags, "-o", binary], check=True)
    if ranks > 1:
        launcher = os.path.join(work, name + ".sh")
        with open(launcher, "w") as f:
            f.write("#!/bin/sh\nexec " + " ".join(
                MPIRUN + ["-np", str(ranks), binary]) + ' "$@"\n')
        os.chmod(launcher, 0o755)
        binary = launcher
    return binary


def trace_idle(binary, work, name):
    """Each stage's idle share of three traced steps and its idle over
    compute time, and the first traced step's timelines."""
    trace = os.path.join(work, name + ".trace.json")
    subprocess.run([binary, "--synthetic", "--steps", "5", "--quiet",
                    "--trace", trace, "--trace-steps", "2:5"],
                   env=environment(), check=True)
    with open(trace) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return idle_by_rank(events), timelines(events)


def timelines(events, columns=96):
    """From a trace's events, each rank's first traced step as a line of
    `columns` characters over one time axis shared by the ranks (from the
    earliest rank's start of that step to the latest one's end): in each
    column what the rank spent most of it on, F forward, B backward, U
    optimizer update, o other work of the step, and . nothing (the bubble,
    waits for hand-overs)."""
    steps = [e for e in events if e.get("cat") == "step"]
    first = min(e["args"]["step"] for e in steps)
    steps = {e["pid"]: e for e in steps if e["args"]["step"] == first}
    start = min(e["ts"] for e in steps.values())
    end = max(e["ts"] + e["dur"] for e in steps.values())
    width = (end - start) / columns
    marks = {"forward": "F", "backward": "B", "update": "U", "other": "o"}
    lines = []
    for pid in sorted(steps):
        spent = [dict() for _ in range(columns)]
        for e in events:
            mark = marks.get(e.get("cat"))
            if e.get("ph") != "X" or e["pid"] != pid or mark is None or \
                    e.get("args", {}).get("step") != first:
                continue
            lo, hi = e["ts"], e["ts"] + e["dur"]
            for c in range(max(0, int((lo - start) / width)),
                           min(columns, int((hi - start) / width) + 1)):
                a, b = start + c * width, start + (c + 1) * width
                overlap = min(hi, b) - max(lo, a)
                if overlap > 0:
                    spent[c][mark] = spent[c].get(mark, 0) + overlap
        line = "".join(
            max(cell, key=cell.get) if cell and sum(cell.values()) >= width / 2
            else "." for cell in spent)
        lines.append(f"stage {pid}: {line}")
    return lines, (end - start) / 1e3


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def idle_by_rank(events):
    """Per rank, from its traced step: the share of the step spent in no
    compute slice (forward, backward, update, other: the bubble and the
    waits for hand-overs, as the timeline shows them), and that idle time
    over the rank's compute time, Megatron's bubble fraction, whose ideal
    is (p - 1) / (m V)."""
    # Summed over the traced steps: (step time, compute time) per rank.
    totals = {}
    for step in (e for e in events if e.get("cat") == "step"):
        busy = sum(e["dur"] for e in events
                   if e.get("ph") == "X" and e["pid"] == step["pid"]
                   and e.get("cat") in ("forward", "backward", "update",
                                        "other")
                   and step["ts"] <= e["ts"] <= step["ts"] + step["dur"])
        span, work = totals.get(step["pid"], (0, 0))
        totals[step["pid"]] = (span + step["dur"], work + busy)
    return [(1 - work / span, (span - work) / work)
            for span, work in (totals[rank] for rank in sorted(totals))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--input-features", type=int, default=None,
                        help="a first layer from this many features to "
                        "width before the `layers` equal ones (default: "
                        "none, the data has width features)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--virtual-stages", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--timelines", action="store_true",
                        help="also print each pipeline's traced step, one "
                        "line per stage")
    opts = parser.parse_args()
    m, v, p = opts.microbatches, opts.virtual_stages, 2
    rows = []
    load_before = load_average()
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "mlp.onnx")
        export_deep_mlp(opts.layers, opts.width, opts.batch, model,
                        opts.input_features)
        stages = ["--mesh", "pp=2", "--pipeline", "pp"]
        micro = ["--microbatches", str(m)]
        # (label, flags, ranks, chunks per stage V; None: not a pipeline)
        runs = [("single", [], 1, None),
                (f"single, {m} micro-batches", micro, 1, None),
                ("pp=2", stages, 2, None),
                (f"pp=2, {m} micro-batches, GPipe", stages + micro, 2, 1),
                (f"pp=2, {m} micro-batches, 1F1B",
                 stages + micro + ["--pipeline-schedule", "1f1b"], 2, 1),
                (f"pp=2, {m} micro-batches, interleaved V={v}",
                 stages + micro + ["--pipeline-schedule", "interleaved",
                                   "--virtual-stages", str(v)], 2, v)]
        programs = [compile_program(model, flags, ranks, work, f"run{i}")
                    for i, (_, flags, ranks, _) in enumerate(runs)]
        best = [float("inf")] * len(runs)
        for _ in range(opts.rounds):
            for i, (label, _, _, _) in enumerate(runs):
                seconds = bench.run_cleave(programs[i], opts.steps,
                                           opts.batch,
                                           environment())["step_s"]
                best[i] = min(best[i], seconds)
                print(f"{label}: {seconds * 1e3:.1f} ms/step",
                      file=sys.stderr)
        drawn = []
        for i, (label, flags, ranks, chunks) in enumerate(runs):
            idle = None
            if "--pipeline" in flags:
                idle, (lines, ms) = trace_idle(programs[i], work, f"run{i}")
                drawn.append((label, lines, ms))
            rows.append((label, ranks, best[i], chunks, idle))
    load_after = load_average()
    single = rows[0][2]
    # A stage's work is half of one rank running the same micro-batches;
    # the rest of a pipelined step is the bubble (and the transfers).
    work_per_stage = rows[1][2] / p
    if opts.markdown:
        print("| configuration | ranks | ms/step | speed vs single | "
              "of ideal | bubble measured | bubble ideal | "
              "idle per stage (trace) | idle / compute per stage (trace) | "
              "(p-1)/(mV) |")
        print("|---|---:|---:|---:|---:|---:|---:|---|---|---:|")
    for label, ranks, seconds, chunks, idle in rows:
        bubble = ["", "", "", "", "", ""]
        if chunks is not None:
            # The share of the step (p - 1) / (m V + p - 1), and over the
            # compute time (p - 1) / (m V) (Megatron's bubble fraction).
            ideal = p * m * chunks / (m * chunks + p - 1)
            bubble = [f"{100 * single / seconds / ideal:.0f}%",
                      f"{100 * (1 - work_per_stage / seconds):.0f}%",
                      f"{100 * (p - 1) / (m * chunks + p - 1):.0f}%", "", "",
                      f"{100 * (p - 1) / (m * chunks):.1f}%"]
        if idle is not None:
            bubble[3] = " / ".join(f"{100 * share:.0f}%" for share, _ in idle)
            bubble[4] = " / ".join(f"{100 * ratio:.1f}%" for _, ratio in idle)
        cells = [label, str(ranks), f"{seconds * 1e3:.1f}",
                 f"{single / seconds:.2f}x", *bubble]
        print(("| " + " | ".join(cells) + " |") if opts.markdown
              else "  ".join(cells))
    print()
    stem = (f"a first layer from {opts.input_features} features, then "
            if opts.input_features else "")
    print(f"MLP of {stem}{opts.layers} layers of {opts.width}, global batch "
          f"{opts.batch}, {opts.steps} steps, best of {opts.rounds} "
          f"round(s), load average {load_before:.2f} before and "
          f"{load_after:.2f} after; one thread per rank, OpenBLAS from "
          f"{bench.OPENBLAS_DIR}. Bubble measured: 1 - (one rank with the "
          f"same micro-batches / 2) / the step. Idle per stage: the share of a "
          f"traced step (--trace) each stage spends in no compute slice; "
          f"idle / compute: that time over the stage's compute time, against "
          f"(p-1)/(mV) (V = 1 but for interleaved).")
    if opts.timelines:
        print()
        print("Traced steps (F forward, B backward, U update, o other, "
              ". no compute), each over its own step's time:")
        print("```")
        for label, lines, ms in drawn:
            print(f"{label} ({ms:.1f} ms)")
            for line in lines:
                print("  " + line)
        print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main())
