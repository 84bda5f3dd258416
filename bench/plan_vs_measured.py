#!/usr/bin/python3
"""Cleave's planner against measurement on this machine (cpu target).

For each model: `cleave plan` on a calibrated cluster file (`cleave
calibrate`, or --cluster) ranks every layout the compiler can build for
--ranks ranks; every plan that fits is then compiled with its own flags
and run under mpirun on synthetic data. Reported per plan: predicted and
measured step time, predicted peak memory per rank and what the program
allocates (--print-memory), the predicted workspaces (oneDNN's and the
collectives' buffers) and what they hold, the predicted inputs (a rank's
blocks of the step's inputs and the synthetic batch), the predicted pages
of OpenBLAS's packing buffers (where the cluster file has them), the
resident set's measured rise (--print-memory-peak: the most of any rank,
file-backed pages excepted) against the plan plus the workspaces, inputs
and packing; per model: the median of |predicted/measured - 1|, the
Spearman rank correlation of the two orders, and how far the plan ranked
first is from the fastest measured. Where it calibrated this machine
itself, it calibrates again after the runs and prints how the rates moved
and the median error with the second calibration's predictions.

  /usr/bin/python3 bench/plan_vs_measured.py --markdown
  /usr/bin/python3 bench/plan_vs_measured.py --models mlp --ranks 2 \\
      --cluster local.yaml --keep /tmp/pvm
  /usr/bin/python3 bench/plan_vs_measured.py --memory-only --ranks 4 \\
      --cluster local.yaml          # every plan run once, memory only

A step time is (T(3N) - T(N)) / 2N from two timed runs of N and 3N steps
(N chosen from runs of 10 and 210 steps so that the short run takes about
--seconds, at most 20000 steps), which cancels start-up; the fastest of
--rounds such estimates is reported, the rounds passing over all plans in
turn, so that a plan's rounds lie minutes apart; plans whose binaries are
byte-identical (dp, ZeRO-1 and ZeRO-2 with plain SGD) pool their rounds. This machine's link
between cores changes speed for tens of seconds at a time (the vCPUs
move: bench/link_monitor.cpp); `cleave calibrate` keeps its fastest
rounds too, so both sides are the fast state. Timing environment as
bench/bench.py's: OMP_NUM_THREADS from the cluster's calibration, OpenBLAS
single-threaded inside OpenMP, OMP_WAIT_POLICY=PASSIVE, OPENBLAS_CORETYPE
SkylakeX where the CPU has AVX-512.

Models: mlp (test/models/export_models.py, 784-128-64-10, global batch 64),
wide (784-4096-4096-1024-10, 24.6M weights, global batch 64), transformer
(test/models/zoo's transformer_pre_norm, global batch 32), cnn
(export_models.py's CNN, global batch 64), gpt (export_models.py's GPT,
2 layers of width 32, sequence 16, global batch 16), resnet18
(torchvision's ResNet-18 at 32x32 from test/models/zoo, global batch 32),
convnet (export_models.py's KerasConvNet: Keras' MNIST convnet, its
second convolution on oneDNN's Winograd kernels, global batch 64).

Printed with each table: when it ran (UTC) and the load average at its
start and end (this machine is shared: other processes take cores).
"""

import argparse
import collections
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MPIRUN = ["mpirun", "--oversubscribe"] + (
    ["--allow-run-as-root"] if os.geteuid() == 0 else [])
MODELS = {"mlp": 64, "wide": 64, "transformer": 32, "cnn": 64, "gpt": 16,
          "resnet18": 32, "convnet": 64}


def export(name, out):
    """Writes out/<name>.onnx with a symbolic batch dimension `batch`: mlp,
    wide, transformer, or a zoo image model (resnet18, squeezenet1_1...)."""
    path = os.path.join(out, name + ".onnx")
    code = f"""
import sys, warnings, torch
sys.path.insert(0, {os.path.join(ROOT, 'test', 'models')!r})
sys.path.insert(0, {os.path.join(ROOT, 'test', 'models', 'zoo')!r})
import export_models, zoo_models
warnings.filterwarnings("ignore")
torch.manual_seed(0)
name = {name!r}
if name == "transformer":
    model, names, axes, _ = zoo_models.MODELS["transformer_pre_norm"]()
    args = (torch.randint(1, zoo_models.VOCAB, (2, zoo_models.SEQ)),
            torch.randint(0, zoo_models.VOCAB, (2, zoo_models.SEQ)))
elif name == "cnn":
    model = export_models.CNN()
    names = ["x", "y"]
    axes = {{"x": {{0: "batch"}}, "y": {{0: "batch"}}}}
    args = (torch.randn(2, 1, 28, 28), torch.randint(0, 10, (2,)))
elif name == "convnet":
    model = export_models.KerasConvNet()
    names = ["x", "y"]
    axes = {{"x": {{0: "batch"}}, "y": {{0: "batch"}}}}
    args = (torch.randn(2, 1, 28, 28), torch.randint(0, 10, (2,)))
elif name == "gpt":
    cfg = export_models.GPTConfig()
    model = export_models.GPT(cfg)
    names = ["idx", "targets"]
    axes = {{"idx": {{0: "batch"}}, "targets": {{0: "batch"}}}}
    args = (torch.randint(0, cfg.vocab_size, (2, cfg.n_positions)),
            torch.randint(0, cfg.vocab_size, (2, cfg.n_positions)))
elif name in zoo_models.MODELS:
    # A zoo image model (32x32).
    model, names, axes, _ = zoo_models.MODELS[name]()
    args = (torch.randn(2, 3, zoo_models.IMAGE_SIZE, zoo_models.IMAGE_SIZE),
            torch.randint(0, zoo_models.CLASSES, (2,)))
else:
    dims = (784, 128, 64, 10) if name == "mlp" else (784, 4096, 4096, 1024, 10)
    model = export_models.MLP(dims) if name == "mlp" else None
    if model is None:
        import torch.nn as nn
        class Wide(nn.Module):
            def __init__(self):
                super().__init__()
                layers = []
                for a, b in zip(dims[:-1], dims[1:]):
                    layers += [nn.Linear(a, b), nn.ReLU()]
                self.net = nn.Sequential(*layers[:-1])
                self.loss = nn.CrossEntropyLoss()
            def forward(self, x, y):
                return self.loss(self.net(x), y)
        model = Wide()
    names = ["x", "y"]
    axes = {{"x": {{0: "batch"}}, "y": {{0: "batch"}}}}
    args = (torch.randn(2, 784), torch.randint(0, 10, (2,)))
model.train()
torch.onnx.export(model, args, {path!r}, input_names=names,
                  output_names=["loss"], dynamic_axes=axes, opset_version=17,
                  do_constant_folding=False,
                  training=torch.onnx.TrainingMode.TRAINING)
"""
    subprocess.run(["/usr/bin/python3", "-c", code], check=True,
                   capture_output=True)
    return path


def timing_env(threads):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "GOMP_", "OPENBLAS_", "KMP_"))}
    env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1",
               OMP_WAIT_POLICY="PASSIVE")
    with open("/proc/cpuinfo") as f:
        if "avx512f" in f.read():
            env["OPENBLAS_CORETYPE"] = "SkylakeX"
    return env


def run(cmd, env=None):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n"
                           f"{p.stdout[-1500:]}{p.stderr[-1500:]}")
    return p


def timed(program, ranks, steps, env):
    start = time.perf_counter()
    run(MPIRUN + ["-np", str(ranks), program, "--synthetic", "--steps",
                  str(steps), "--quiet"], env)
    return time.perf_counter() - start


def steps_for(program, ranks, env, seconds):
    """How many steps a timed run takes: about `seconds` for the shorter
    run, from runs of 10 and 210 steps (start-up noise of mpirun is some
    10 ms: fewer steps apart would measure it)."""
    probe = timed(program, ranks, 210, env) - timed(program, ranks, 10, env)
    per = max(probe / 200, 1e-5)
    return int(min(max(20, seconds / per), 20000))


def step_estimate(program, ranks, env, n):
    """Seconds per step from runs of n and 3n steps."""
    t1 = timed(program, ranks, n, env)
    t3 = timed(program, ranks, 3 * n, env)
    return (t3 - t1) / (2 * n)


def memory_of(program, ranks, env):
    """The most any rank allocates (--print-memory: parameters and state
    plus scratch, the plan), holds in oneDNN workspaces and collective
    buffers, holds for its inputs (its blocks of them and the synthetic
    batch), and measures (--print-memory-peak: its resident set's rise,
    file-backed pages excepted)."""
    p = run(MPIRUN + ["-np", str(ranks), program, "--synthetic", "--steps",
                      "2", "--print-memory", "--print-memory-peak"], env)
    text = p.stdout + p.stderr
    allocated = [int(a) + int(b) for a, b in re.findall(
        r"rank \d+: parameters and state (\d+) bytes, scratch (\d+) bytes",
        text)]
    measured = re.findall(r"rank \d+: peak (\d+) bytes, of which "
                          r"file-backed (\d+);.*kernel workspaces (\d+); "
                          r"collective buffers (\d+); inputs (\d+)", text)
    return dict(allocated=max(allocated) if allocated else None,
                held=max((int(w) + int(c) for _, _, w, c, _ in measured),
                         default=None),
                held_inputs=max((int(i) for *_, i in measured),
                                default=None),
                rise=max((int(a) - int(b) for a, b, *_ in measured),
                         default=None))


def print_memory(name, batch, ranks, started, ended, rows, failed):
    """--memory-only's table of one model: each plan's predicted memory
    (the plan, workspaces, inputs, OpenBLAS's packing, the libraries' own
    memory: MPI's lists, oneDNN's primitives) against what the program
    holds and its resident set's measured rise, and how many plans are
    within 5% (and were without the libraries' memory)."""
    print(f"\n{name} (global batch {batch}, {ranks} ranks; {started} to "
          f"{ended}):")
    print("| # | flags | plan predicted / allocated | workspaces predicted "
          "/ held | inputs predicted / held | BLAS packing predicted | "
          "libraries' own predicted | predicted in all | measured rise | "
          "predicted/measured |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios, without = [], []
    for r in rows:
        # The most any stage needs (each stage its own parts), which the
        # columns' maxima over stages may overstate with stages.
        predicted = r["needed"]
        ratios.append(predicted / r["rise"])
        without.append((predicted - r["library"]) / r["rise"])
        print(f"| {r['rank']} | `{r['flags']}` | {r['peak']} / "
              f"{r['allocated']} | {r['workspace']} / {r['held']} | "
              f"{r['inputs']} / {r['held_inputs']} | {r['blas_packing']} | "
              f"{r['library']} | {predicted} | "
              f"{r['rise']} | {ratios[-1]:.3f} |", flush=True)
    for rank, flags, error in failed:
        print(f"| {rank} | `{flags}` | does not compile: {error} |")
    def summary(values):
        within = sum(abs(x - 1) <= 0.05 for x in values)
        return (f"{min(values):.3f}-{max(values):.3f}, median "
                f"{sorted(values)[len(values) // 2]:.3f}; {within} of "
                f"{len(values)} plans within 5%")
    if ratios:
        print(f"\n{name}: predicted/measured {summary(ratios)}")
        if without != ratios:
            print(f"{name}: without the libraries' own memory "
                  f"{summary(without)}")


def spearman(a, b):
    """Spearman's rank correlation: Pearson's of the ranks, tied values
    (identical programs, predicted and measured alike) at their average
    rank."""
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        start = 0
        while start < len(order):
            end = start
            while end + 1 < len(order) and v[order[end + 1]] == v[order[start]]:
                end += 1
            for pos in range(start, end + 1):
                r[order[pos]] = (start + end) / 2
            start = end + 1
        return r
    n = len(a)
    if n < 2:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else float("nan")


def drift(before, after):
    """The calibrated rates that moved between two cluster files."""
    def rates(path):
        text = open(path).read()
        found = {}
        for key, pattern in (("GEMM peak TFLOP/s", r"fp32: ([0-9.]+)"),
                             ("memory GB/s",
                              r"memory_bandwidth_gbs: ([0-9.]+)"),
                             ("op overhead us", r"op_overhead_us: ([0-9.]+)")):
            m = re.search(pattern, text)
            if m:
                found[key] = float(m.group(1))
        return found
    a, b = rates(before), rates(after)
    return "calibration before and after the runs: " + ", ".join(
        f"{k} {a[k]:g} -> {b[k]:g}" for k in a if k in b)


def error_with(opts, model, batch, cluster, rows):
    """The median error of the measured plans' steps as `cluster`
    predicts them (each plan's own flags evaluated)."""
    path = os.path.join(os.path.dirname(cluster), "after.plan.json")
    errors = []
    for r in rows:
        run([opts.cleave, "plan", model, "--cluster", cluster, "--ranks",
             str(opts.ranks), "--global-batch", str(batch), "--json", path]
            + r["flags"].split())
        with open(path) as f:
            predicted = json.load(f)["plans"][0]["predicted"]["step_ms"]
        errors.append(abs(predicted / r["measured"] - 1))
    errors.sort()
    return f"{errors[len(errors) // 2] * 100:.0f}%"


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--cluster", help="a cluster file (default: run "
                    "`cleave calibrate` with --ranks)")
    ap.add_argument("--cleave", default=os.path.join(ROOT, "build", "bin",
                                                     "cleave"))
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--keep", help="work directory to keep")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--memory-only", action="store_true",
                    help="run each plan once for its memory, untimed")
    opts = ap.parse_args()
    work = opts.keep or tempfile.mkdtemp(prefix="cleave-pvm-")
    os.makedirs(work, exist_ok=True)
    cluster = opts.cluster
    threads = max(1, (os.cpu_count() or 1) // opts.ranks)
    if cluster:
        with open(cluster) as f:
            m = re.search(r"with \d+ ranks x (\d+) threads", f.read())
            if m:
                threads = int(m.group(1))
    env = timing_env(threads)
    calibrated = not cluster
    def calibrate(path):
        # Measured in the environment the programs are timed in.
        run([opts.cleave, "calibrate", "-o", path, "--ranks",
             str(opts.ranks), "--threads", str(threads)], env)
    if calibrated:
        cluster = os.path.join(work, "local.yaml")
        calibrate(cluster)
    def now():
        return (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()) +
                ", load %.1f" % os.getloadavg()[0])
    print(f"started {now()}", flush=True)
    summary = []
    for name in opts.models.split(","):
        started = now()
        batch = MODELS[name]
        model = export(name, work)
        plan_json = os.path.join(work, name + ".plan.json")
        run([opts.cleave, "plan", model, "--cluster", cluster, "--ranks",
             str(opts.ranks), "--global-batch", str(batch), "--top",
             str(opts.top), "--json", plan_json])
        with open(plan_json) as f:
            plans = json.load(f)["plans"]
        rows, failed = [], []
        for plan in plans:
            program = os.path.join(work, f"{name}-{plan['rank']}")
            # A plan the compiler refuses is a planner bug: reported, not
            # timed.
            p = subprocess.run([opts.cleave, "compile", model] +
                               plan["flags"] + ["-o", program],
                               capture_output=True, text=True)
            if p.returncode != 0:
                error = next((line for line in p.stderr.splitlines()
                              if "error:" in line), p.stderr.strip())
                failed.append((plan["rank"], " ".join(
                    f for f in plan["flags"][1:]
                    if not f.startswith("--input-shape")), error))
                continue
            rows.append(dict(rank=plan["rank"], mesh=plan["mesh_flag"],
                             strategy=plan["strategy"],
                             mb=plan["microbatches"],
                             flags=" ".join(f for f in plan["flags"][1:]
                                            if not f.startswith(
                                                "--input-shape")),
                             predicted=plan["predicted"]["step_ms"],
                             comm=plan["predicted"]["exposed_comm_ms"],
                             peak=plan["predicted"]["peak_bytes_per_rank"],
                             workspace=plan["predicted"][
                                 "workspace_bytes_per_rank"],
                             inputs=plan["predicted"]["input_bytes_per_rank"],
                             blas_packing=plan["predicted"].get(
                                 "blas_packing_bytes_per_rank", 0),
                             library=plan["predicted"].get(
                                 "library_bytes_per_rank", 0),
                             needed=plan["predicted"][
                                 "needed_bytes_per_rank"],
                             **memory_of(program, opts.ranks, env),
                             program=program))
        if opts.memory_only:
            print_memory(name, batch, opts.ranks, started, now(), rows,
                         failed)
            continue
        for r in rows:
            r["steps"] = steps_for(r["program"], opts.ranks, env,
                                   opts.seconds)
            r["estimates"] = []
        # Rounds over all plans, so that a plan's rounds lie a pass over
        # the others apart: this host's link between cores changes speed
        # for tens of seconds at a time, and the fastest round, as the
        # calibration's, is the state both were measured in.
        for _ in range(opts.rounds):
            for r in rows:
                r["estimates"].append(step_estimate(
                    r["program"], opts.ranks, env, r["steps"]))
        # Plans that compile to the same binary (dp, ZeRO-1 and ZeRO-2 with
        # plain SGD) are one program: its rounds are pooled, so that the
        # same program is not reported at two speeds the host gave it.
        by_binary = collections.defaultdict(list)
        for r in rows:
            by_binary[file_digest(r["program"])].append(r)
        for same in by_binary.values():
            best = min(min(r["estimates"]) for r in same) * 1e3
            for r in same:
                r["measured"] = best
                r["same_as"] = [o["rank"] for o in same if o is not r]
        errors = sorted(abs(r["predicted"] / r["measured"] - 1) for r in rows)
        rho = spearman([r["predicted"] for r in rows],
                       [r["measured"] for r in rows])
        fastest = min(r["measured"] for r in rows)
        chosen = rows[0]["measured"]
        summary.append((name, len(rows), errors[len(errors) // 2], rho,
                        chosen / fastest - 1, len(failed), model, batch,
                        rows))
        print(f"\n{name} (global batch {batch}, {opts.ranks} ranks; "
              f"{started} to {now()}):")
        print("| # | flags | predicted ms (exposed comm) | "
              "measured ms | predicted/measured | predicted peak bytes | "
              "allocated bytes | predicted workspaces (oneDNN and "
              "collective buffers) | held | "
              "measured rise | predicted inputs | (peak + workspaces + "
              "inputs)/measured |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            same = (" (the same binary as " +
                    ", ".join(f"#{k}" for k in r["same_as"]) + ")"
                    if r["same_as"] else "")
            print(f"| {r['rank']} | `{r['flags']}`{same} | "
                  f"{r['predicted']:.3f} ({r['comm']:.3f}) | "
                  f"{r['measured']:.3f} | "
                  f"{r['predicted'] / r['measured']:.2f} | {r['peak']} | "
                  f"{r['allocated']} | {r['workspace']} | {r['held']} | "
                  f"{r['rise']} | "
                  f"{r['inputs']} | "
                  f"{(r['peak'] + r['workspace'] + r['inputs']) / r['rise']:.2f} |",
                  flush=True)
        for rank, flags, error in failed:
            print(f"| {rank} | `{flags}` | does not compile: {error} |")
    after = None
    if opts.memory_only:
        summary = []
    elif calibrated:
        # This host's speed drifts: the same calibration again after the
        # runs shows how far the machine moved while they ran, and how the
        # plans' predictions from it compare.
        after = os.path.join(work, "local-after.yaml")
        calibrate(after)
        print("\n" + drift(cluster, after))
    if summary:
        print_timing_summary(summary, after, opts)
    print(f"\ncluster file: {cluster}; work directory: {work}")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def print_timing_summary(summary, after, opts):
    """The timed runs' table: one row per model."""
    print("\n| model | plans run | median error of predicted step | "
          "Spearman | plan ranked first vs fastest measured | plans that "
          "do not compile |" + (" median error, calibrated after the runs |"
                               if after else ""))
    print("|---|---:|---:|---:|---:|---:|" + ("---:|" if after else ""))
    for name, n, err, rho, gap, bad, model, batch, rows in summary:
        line = (f"| {name} | {n} | {err * 100:.0f}% | {rho:.2f} | "
                f"+{gap * 100:.0f}% | {bad} |")
        if after:
            line += f" {error_with(opts, model, batch, after, rows)} |"
        print(line)


if __name__ == "__main__":
    sys.exit(main())
