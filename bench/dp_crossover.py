#!/usr/bin/python3
"""Where data parallelism across two devices starts to pay, by global batch.

The classic data-parallel result: splitting a small CNN's batch over two
nodes linked by Ethernet loses at small batches (each step all-reduces
every gradient, whatever the batch) and wins at large ones (the compute
halves). `cleave plan` predicts both sides from the compiled step:

  predicted (default): for each global batch, the step of one device
  (`cleave plan --nodes 1`) against data parallelism over two (`--mesh
  dp=2 --strategy dp`) and the best plan `cleave plan --nodes 2` finds,
  on --cluster (default bench/clusters/t4-10gbe.yaml: one T4 per node,
  10 GbE). Prints throughput and where the best two-device plan first beats
  one device.

  --measure: the same comparison on this machine (cpu target, a cluster
  file from `cleave calibrate --ranks 2 --threads 1` unless --cluster is
  given): each layout is also compiled with the plan's flags and timed
  under mpirun (one thread per rank), so the predicted crossover stands
  next to the measured one.

  /usr/bin/python3 bench/dp_crossover.py --markdown
  /usr/bin/python3 bench/dp_crossover.py --measure --model mobilenet_v2 \\
      --batches 2,4,8,16,32,64 --markdown

Models: the zoo's torchvision models at 32x32 (test/models/zoo), e.g.
resnet18, mobilenet_v2, squeezenet1_1 (no BatchNorm).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import plan_vs_measured as pvm  # noqa: E402  (timing under mpirun)


def plan(cleave, model, cluster, devices, batch, work, extra=()):
    """The first plan of `cleave plan` (its JSON entry), or None with the
    reason when nothing fits."""
    out = os.path.join(work, f"plan-{devices}-{batch}-{len(extra)}.json")
    p = subprocess.run([cleave, "plan", model, "--cluster", cluster,
                        "--ranks", str(devices), "--global-batch", str(batch),
                        "--top", "1", "--json", out] + list(extra),
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    with open(out) as f:
        plans = json.load(f)["plans"]
    return (plans[0], "") if plans else (None, "no plan fits")


def describe(entry):
    """A plan in a few words: mesh, preset, a bucket size it sets."""
    text = entry["mesh_flag"] + " " + entry["strategy"]
    flags = entry["flags"]
    if "--bucket-mb" in flags:
        text += f", {flags[flags.index('--bucket-mb') + 1]} MB buckets"
    return text


def measure(cleave, model, entry, ranks, env, work, seconds, rounds):
    program = os.path.join(work, f"prog-{ranks}-{abs(hash(tuple(entry['flags'])))}")
    pvm.run([cleave, "compile", model] + entry["flags"] + ["-o", program])
    return pvm.step_seconds(program, ranks, env, seconds, rounds) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batches", default="8,32,128,512,1024,2048,4096,8192")
    ap.add_argument("--cluster")
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--cleave", default=os.path.join(ROOT, "build", "bin",
                                                     "cleave"))
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", help="work directory to keep")
    ap.add_argument("--markdown", action="store_true")
    opts = ap.parse_args()
    work = opts.keep or tempfile.mkdtemp(prefix="cleave-crossover-")
    os.makedirs(work, exist_ok=True)
    env = pvm.timing_env(1)
    cluster = opts.cluster
    if not cluster and opts.measure:
        cluster = os.path.join(work, "local.yaml")
        pvm.run([opts.cleave, "calibrate", "-o", cluster, "--ranks", "2",
                 "--threads", "1"], env)
    cluster = cluster or os.path.join(HERE, "clusters", "t4-10gbe.yaml")
    model = pvm.export(opts.model, work)

    rows = []
    for batch in [int(b) for b in opts.batches.split(",")]:
        single, why1 = plan(opts.cleave, model, cluster, 1, batch, work)
        dp, why2 = plan(opts.cleave, model, cluster, 2, batch, work,
                        ["--mesh", "dp=2", "--strategy", "dp"])
        best, why3 = plan(opts.cleave, model, cluster, 2, batch, work)
        row = dict(batch=batch, single=single, dp=dp, best=best,
                   why=why1 or why2 or why3)
        if opts.measure and single and dp:
            row["single_measured"] = measure(opts.cleave, model, single, 1,
                                             env, work, opts.seconds,
                                             opts.rounds)
            row["dp_measured"] = measure(opts.cleave, model, dp, 2, env,
                                         work, opts.seconds, opts.rounds)
        rows.append(row)

    def ms(entry):
        return entry["predicted"]["step_ms"] if entry else None

    def fmt(v):
        return "-" if v is None else (f"{v:.3g}" if v < 100 else f"{v:.0f}")

    print(f"{opts.model}, cluster {cluster}"
          + (" (measured: 1 thread per rank)" if opts.measure else ""))
    head = ["global batch", "1 device ms", "dp=2 ms", "dp=2 comm ms",
            "dp=2 / 1 device speed", "best 2-device plan", "its ms"]
    if opts.measure:
        head += ["1 device measured ms", "dp=2 measured ms",
                 "dp=2 / 1 device measured"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    crossover = best_crossover = measured_crossover = None
    for r in rows:
        s, d, b = ms(r["single"]), ms(r["dp"]), ms(r["best"])
        speed = s / d if s and d else None
        if speed and speed > 1 and crossover is None:
            crossover = r["batch"]
        if s and b and s / b > 1 and best_crossover is None:
            best_crossover = r["batch"]
        cells = [str(r["batch"]), fmt(s), fmt(d),
                 fmt(r["dp"]["predicted"]["exposed_comm_ms"]) if d else "-",
                 f"{speed:.2f}x" if speed else "-",
                 describe(r["best"]) if r["best"] else r["why"], fmt(b)]
        if opts.measure:
            sm, dm = r.get("single_measured"), r.get("dp_measured")
            mspeed = sm / dm if sm and dm else None
            if mspeed and mspeed > 1 and measured_crossover is None:
                measured_crossover = r["batch"]
            cells += [fmt(sm), fmt(dm), f"{mspeed:.2f}x" if mspeed else "-"]
        print("| " + " | ".join(cells) + " |")
    print(f"\npredicted: dp=2 first faster than one device at global batch "
          f"{crossover if crossover else '(none of these)'}; the best "
          f"two-device plan at "
          f"{best_crossover if best_crossover else '(none of these)'}")
    if opts.measure:
        print(f"measured: dp=2 first faster at global batch "
              f"{measured_crossover if measured_crossover else '(none of these)'}")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
