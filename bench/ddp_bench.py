#!/usr/bin/python3
"""Data-parallel training step time on 2 ranks: Cleave against PyTorch DDP.

  /usr/bin/python3 bench/ddp_bench.py [--ranks 2] [--steps 40] [--markdown]

For each model and global batch, both sides train with SGD (lr 0.01) on
synthetic data, one process per rank, one thread per process
(OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, the same OpenBLAS):

  Cleave   `cleave compile --mesh dp=R --strategy dp`, run as
           `mpirun -np R train --synthetic --steps N`; seconds per step from
           rank 0's progress lines after the first fifth of the steps
           (collectives: the runtime's ring all-reduce over MPI, gradient
           buckets overlapped with the backward pass).
  PyTorch  torch.nn.parallel.DistributedDataParallel over the gloo backend
           (the only one Debian's torch has), R processes started with
           torch.multiprocessing; each times N steps after N/5 warm-up steps
           and the slowest rank's mean counts.

It also runs build/bin/cleave-allreduce-bench (bench/allreduce_bench.cpp)
for the bus bandwidth of the runtime's all-reduce next to MPI_Allreduce
alone.
"""

import argparse
import os
import queue as queue_module
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench  # noqa: E402  (export and progress-line parsing)

# Global batch: twice bench.py's one-rank batch for the models of issue 21.
MODELS = {"mlp": 128, "mlp-large": 64, "gpt": 2, "gpt-d128": 16,
          "mlp-512": 128, "cnn": 16, "resnet18": 32, "mobilenet_v2": 32,
          "gpt-d768": 8, "convnet": 64, "convnet-b128": 256}
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def environment():
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OMP_WAIT_POLICY="PASSIVE",
               LD_LIBRARY_PATH=bench.OPENBLAS_DIR)
    return env


def global_inputs(name, batch):
    """The model and a synthetic global batch, as bench.build_model makes
    them but at `batch`."""
    import torch
    bench.BATCH[name] = batch
    if name == "gpt":
        sys.path.insert(0, os.path.join(ROOT, "test", "models"))
        import export_models
        torch.manual_seed(0)
        model = export_models.GPT(export_models.GPTConfig())
        cfg = export_models.GPTConfig()
        idx = torch.randint(0, cfg.vocab_size, (batch, cfg.n_positions))
        return model, (idx, torch.randint(0, cfg.vocab_size,
                                          (batch, cfg.n_positions))), None, []
    model, args, _, dynamic, extra = bench.build_model(name)
    return model, args, dynamic, extra


def ddp_worker(rank, ranks, name, batch, steps, port, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    model, args, _, _ = global_inputs(name, batch)
    local = batch // ranks
    args = tuple(a[rank * local:(rank + 1) * local] for a in args)
    # gloo cannot broadcast bool buffers (the GPT's causal mask); they are
    # the same on every rank anyway.
    ddp = torch.nn.parallel.DistributedDataParallel
    ddp._set_params_and_buffers_to_ignore_for_model(
        model, [n for n, b in model.named_buffers() if b.dtype == torch.bool])
    model = ddp(model)
    opt = torch.optim.SGD(model.parameters(), lr=bench.LR)
    warm = max(1, steps // 5)
    for step in range(warm + steps):
        if step == warm:
            dist.barrier()
            start = time.perf_counter()
        opt.zero_grad()
        model(*args).backward()
        opt.step()
    queue.put((time.perf_counter() - start) / steps)
    dist.destroy_process_group()


def run_ddp(name, batch, ranks, steps):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=ddp_worker,
                         args=(r, ranks, name, batch, steps, port, queue))
             for r in range(ranks)]
    for p in procs:
        p.start()
    # A worker that fails never reports: stop waiting when one has died.
    times = []
    while len(times) < len(procs):
        try:
            times.append(queue.get(timeout=5))
        except queue_module.Empty:
            failed = [p.exitcode for p in procs
                      if p.exitcode not in (None, 0)]
            if failed:
                for p in procs:
                    p.terminate()
                raise RuntimeError(f"a DDP worker for {name} exited with "
                                   f"{failed[0]} (its traceback is above)")
    for p in procs:
        p.join()
    return max(times)


def run_cleave(name, batch, ranks, steps, work):
    import torch
    model, args, dynamic, extra = global_inputs(name, batch)
    path = os.path.join(work, f"{name}.onnx")
    names = ["idx", "targets"] if name.startswith("gpt") else ["x", "y"]
    model.train()
    torch.onnx.export(model, args, path, input_names=names,
                      output_names=["loss"], dynamic_axes=dynamic,
                      opset_version=bench.OPSET, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    binary = os.path.join(work, name)
    subprocess.run([os.path.join(ROOT, "build", "bin", "cleave"), "compile",
                    path, *extra, "--optimizer", "sgd", "--lr", str(bench.LR),
                    "--mesh", f"dp={ranks}", "--strategy", "dp", "-o", binary],
                   check=True)
    launcher = os.path.join(work, "launch.sh")
    with open(launcher, "w") as f:
        f.write("#!/bin/sh\nexec " + " ".join(
            MPIRUN + ["-np", str(ranks), binary]) + ' "$@"\n')
    os.chmod(launcher, 0o755)
    return bench.run_cleave(launcher, steps, batch, environment())["step_s"]


def allreduce_table(ranks):
    binary = os.path.join(ROOT, "build", "bin", "cleave-allreduce-bench")
    out = subprocess.run(MPIRUN + ["-np", str(ranks), binary],
                         env=environment(), check=True,
                         capture_output=True, text=True)
    return out.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--markdown", action="store_true")
    opts = parser.parse_args()
    os.environ.update(environment())
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in opts.models.split(","):
            batch = MODELS[name]
            ddp = run_ddp(name, batch, opts.ranks, opts.steps)
            ours = run_cleave(name, batch, opts.ranks, opts.steps, work)
            rows.append((name, batch, ddp, ours))
            print(f"{name}: DDP {ddp * 1e3:.2f} ms, Cleave {ours * 1e3:.2f} "
                  f"ms", file=sys.stderr)
        table = allreduce_table(opts.ranks)
    print(f"| model | global batch | PyTorch DDP (gloo) ms/step | Cleave "
          f"ms/step | DDP/Cleave |" if opts.markdown else
          "model  batch  DDP ms/step  Cleave ms/step  DDP/Cleave")
    if opts.markdown:
        print("|---|---:|---:|---:|---:|")
    for name, batch, ddp, ours in rows:
        cells = [name, str(batch), f"{ddp * 1e3:.2f}", f"{ours * 1e3:.2f}",
                 f"{ddp / ours:.2f}x"]
        print(("| " + " | ".join(cells) + " |") if opts.markdown
              else "  ".join(cells))
    print()
    print(f"{opts.ranks} ranks, one thread each (OMP_NUM_THREADS=1, "
          f"OPENBLAS_NUM_THREADS=1), OpenBLAS from {bench.OPENBLAS_DIR}.")
    print()
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
