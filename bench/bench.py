#!/usr/bin/python3
"""Cleave vs PyTorch 1.13 eager: CPU training-step time, same BLAS, same threads.

The whole benchmark, as run for the README (about 2.5 minutes on 2 cores):

  /usr/bin/python3 bench/bench.py --markdown

Other forms:

  /usr/bin/python3 bench/bench.py --models mlp-large --threads 1 --seconds 3
  /usr/bin/python3 bench/bench.py --json /tmp/bench.json --keep /tmp/bench
  /usr/bin/python3 bench/bench.py --env OMP_WAIT_POLICY=ACTIVE   # try a setting

Models (each graph contains its loss; every step is forward, loss, backward
and a plain SGD update, lr 0.01, no momentum):

  mlp        test/models/export_models.py's MLP (784-128-64-10), batch 64
             (its symbolic batch bound with --input-shape batch=64)
  cnn        its MNIST CNN (Conv/BatchNorm/MaxPool/AvgPool/Dropout), the
             export's static batch 8
  gpt        its tiny GPT-2 decoder (2 layers, d 32, T 16), static batch 2
  mlp-large  defined here: Linear 1024->4096->4096->1024, ReLU between,
             cross-entropy over 1024 classes, static batch 32 (GEMM-bound)

Models of issue 21 (not in the default run; their own optimizers, the same
on both sides):

  gpt-d128   export_models.py's GPT at d_model 128, 4 heads, 2 layers,
             sequence 64, vocabulary 512, static batch 8; AdamW, lr 1e-3
             (weight decay 0.01, eps 1e-8: PyTorch's defaults)
  mlp-512    its MLP at 784-512-512-10, static batch 64; SGD, lr 0.01,
             momentum 0.9
  convnet    export_models.py's KerasConvNet: Keras' MNIST convnet at
             full size (the issue's "2 convs, maxpool, 2 dense"): Conv
             1->32 3x3, ReLU, Conv 32->64 3x3, ReLU, MaxPool 2, Dropout
             0.25, Flatten (9216), Linear 9216->128, ReLU, Dropout 0.5,
             Linear 128->10, cross-entropy; static batch 32, SGD
  convnet-b128  the same at static batch 128
  gpt-d768   its GPT shaped as GPT-2 small's layers: d_model 768, 12
             heads, 2 layers, sequence 256, vocabulary 8192, static batch
             4 (1024 tokens); AdamW as gpt-d128

For each model the script exports the ONNX (opset 17, training mode, as
export_models.py does), compiles it with `cleave compile --optimizer sgd
--lr 0.01` (or the model's optimizer above; --keep-source, to read the
GEMMs it calls) and times, in
alternating rounds (Cleave, PyTorch, Cleave, PyTorch, ...; median reported):

  Cleave   `train --synthetic --steps N` in the timing environment below.
           The step time is read from the program's own progress lines,
           "step s/N ... R samples/s", whose rate is the cumulative average
           since the first step: the time at line s is s * batch / R, and the
           step time is (t(s_last) - t(s_first)) / (s_last - s_first) with
           s_first the first line at or after 20% of N. So process start-up,
           loading the embedded parameters and the first (page-faulting)
           steps are excluded, without a second, 0-step run.
  PyTorch  a persistent worker process (same environment) builds the same
           torch module with the same batch and runs the same step:
           loss = model(*inputs); loss.backward(); opt.step();
           opt.zero_grad(set_to_none=True) with torch.optim.SGD(lr=0.01)
           (1.13's default single-tensor path), after warm-up steps; timed
           with time.perf_counter over N steps. Inputs are fixed random
           tensors, as Cleave's --synthetic draws them once.

Environment, identical for both processes (printed as the "env" line):

  OMP_NUM_THREADS=T, OPENBLAS_NUM_THREADS=T (T = --threads, default 2), and
  torch.set_num_threads(T) in the worker.
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread first, so that
  Debian's torch (which links the generic libblas.so.3, netlib unless the
  alternative points elsewhere) and the Cleave binary (libopenblas.so.0)
  resolve to the same file, libopenblasp-r0.3.21.so. The worker checks it:
  the BLAS libraries mapped into the torch process are listed, and a torch
  1024^3 matmul is timed against cblas_sgemm of that library (netlib would
  be ~10x slower). PyTorch's convolutions go through oneDNN (mkldnn), not
  BLAS: that is what PyTorch eager does, and it is part of the comparison.
  OPENBLAS_CORETYPE: --coretype auto sets SkylakeX when the CPU has AVX-512
  (Debian's OpenBLAS 0.3.21 does not know the newer Intel models and falls
  back to slow kernels otherwise), else pins the core type OpenBLAS detects
  by itself (Zen on the AMD EPYC of our dev machines: SkylakeX kernels would
  die there with SIGILL, as that CPU has no AVX-512).
  OMP_WAIT_POLICY=PASSIVE, for both. PyTorch has two thread pools of T
  threads sharing the main thread: libgomp's (its intra-op parallelism) and
  OpenBLAS's pthreads (the pthread build ignores OpenMP). They never run
  nested, but libgomp's default policy spins after every parallel region
  and OpenBLAS's idle workers spin too, so with T = cores each core has two
  busy-waiting threads, and any other load on the machine makes it much
  worse. Cleave had the same two pools until it set OpenBLAS to one thread
  and runs every GEMM split over its OpenMP threads (runtime/
  KernelsLinalg.cpp); its OPENBLAS_NUM_THREADS is now ignored. Measured on
  the 2-core dev machine with both pools (load ~4 from other users; ms/step,
  default policy -> PASSIVE): Cleave mlp 19.6 -> 1.34, cnn 41.6 -> 5.0,
  mlp-large 514 -> 300, gpt 1.2 -> 1.7 (noise: its tensors are below the
  parallel grain, no OpenMP regions); PyTorch mlp 38.7 -> 2.5, cnn 37.4 ->
  12.7, gpt 58.9 -> 10.1, mlp-large 688 -> 408. With one pool, on a quiet
  machine, Cleave's default policy is as fast as PASSIVE for mlp-large and
  faster for cnn (9100 against 6500 samples/s); PASSIVE is kept for both,
  PyTorch's fastest setting in the measurement above. --env KEY=VALUE
  (repeatable) sets a variable in both environments (KEY= unsets it), e.g.
  --env OMP_WAIT_POLICY= to see libgomp's default.
  With more than one thread the wait policy decides the result, and the two
  sides' fastest settings differ: PyTorch needs PASSIVE for its two pools,
  while Cleave has one pool and libgomp's default (spin about 3 ms after a
  region, then sleep) wakes its second thread in microseconds where PASSIVE
  costs 25-50 us a region. --wait-policies (default passive,default at more
  than one thread) times each side under every listed policy, in the same
  alternating rounds, and each side's row is its fastest policy by median,
  named in the table; the JSON has every policy's rounds. A user running
  the binary without setting anything gets libgomp's default.

sgemm reference: the worker calls cblas_sgemm of the same library through
ctypes with T threads: a large 1024x4096x4096 product ("peak"), and, per
model, the exact sequence of sgemm calls one Cleave training step makes
(parsed from the generated C++: gemm, matmul and the im2col GEMMs of conv,
convGradInput, convGradWeight), timed back to back: "OpenBLAS GEMMs", what
the step's GEMMs cost on OpenBLAS alone with its own T threads. Cleave's
step can take less: it runs a linear layer's forward product at batch <= 64
with a kernel of its own (runtime/SkinnyGemm.h), and every other GEMM on its
OpenMP threads with OpenBLAS single-threaded inside them. For mlp-large,
the convnets and the GPTs of issue 21 the table also gives the model
FLOP/s, as a fraction of the peak sgemm rate. mlp-large: forward 2*M*N*K
per Linear, backward the weight gradient (2*M*N*K) for every Linear and
the input gradient for all but the first (the input needs none), 4.56
GFLOP per step at batch 32. The convnets: the same, a convolution's M*N*K
being samples x output positions x output channels x input channels x
kernel taps (2.29 GFLOP per step at batch 32). A GPT: three times its forward products (each Linear, the
output head, and attention's two batched products over the whole T x T
score matrix, the masked half included, as PyTorch computes it), as
model_flops() counts. The peak is measured again after every round of these
models (these machines drift by 20% within minutes), and the percentage is
the median over rounds of that round's rate over that round's peak.

Output: a plain table (or --markdown), the environment line, and --json
for the raw numbers. Work files go to a temporary directory (--keep DIR to
keep the ONNX files, binaries and generated sources).
"""

import argparse
import contextlib
import ctypes
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
OPENBLAS_LIB = os.path.join(OPENBLAS_DIR, "libopenblas.so.0")
OPSET = 17
LR = 0.01
MODEL_NAMES = ["mlp", "cnn", "gpt", "mlp-large"]
# Issue 21's sizes, not in the default run.
SIZED_NAMES = ["gpt-d128", "mlp-512", "convnet", "convnet-b128", "gpt-d768"]
# Stock models of the model zoo (test/models/zoo), not in the default run:
# torchvision's MobileNetV2 and ResNet-18 at 32x32 (resnet18-224: at
# 224x224, batch 8), and nn.TransformerEncoder
# (transformer_pre_norm: 2 pre-norm layers, d_model 32, 4 heads, sequence
# 12, with a key padding mask).
ZOO_NAMES = ["mobilenet_v2", "resnet18", "transformer", "resnet18-224"]
# Zoo image models at another image size: name -> (zoo model, side).
# ResNet-18 at ImageNet's 224x224, where its first three stages' 3x3
# convolutions run on oneDNN's Winograd kernels.
ZOO_IMAGE_SIZES = {"resnet18-224": ("resnet18", 224)}
BATCH = {"mlp": 64, "cnn": 8, "gpt": 2, "mlp-large": 32, "mobilenet_v2": 16,
         "resnet18": 16, "gpt-d128": 8, "mlp-512": 64, "gpt-d768": 4,
         "transformer": 32, "convnet": 32, "convnet-b128": 128,
         "resnet18-224": 8}
# Optimizer per model (default: plain SGD at LR), the same for both sides.
OPTIMIZER = {"gpt-d128": dict(kind="adamw", lr=1e-3),
             "gpt-d768": dict(kind="adamw", lr=1e-3),
             "mlp-512": dict(kind="sgd", lr=LR, momentum=0.9)}


def optimizer_of(name):
    return OPTIMIZER.get(name, dict(kind="sgd", lr=LR))


def cleave_optimizer_flags(name):
    opt = optimizer_of(name)
    flags = ["--optimizer", opt["kind"], "--lr", repr(opt["lr"])]
    if opt.get("momentum"):
        flags += ["--momentum", repr(opt["momentum"])]
    return flags


def torch_optimizer(name, params):
    import torch
    opt = optimizer_of(name)
    if opt["kind"] == "adamw":
        return torch.optim.AdamW(params, lr=opt["lr"])
    return torch.optim.SGD(params, lr=opt["lr"],
                           momentum=opt.get("momentum", 0.0))
LARGE_DIMS = [1024, 4096, 4096, 1024]   # mlp-large's Linear widths
# The convnets' layers: convolutions (in, out, kernel) on 28x28 inputs
# without padding, then the Linear widths after the 2x2 max-pool.
CONVNET_CONVS = [(1, 32, 3), (32, 64, 3)]
CONVNET_DENSE = [64 * 12 * 12, 128, 10]
# The sized GPTs: (vocabulary, sequence, d_model, heads, layers).
GPT_SIZES = {"gpt-d128": (512, 64, 128, 4, 2),
             "gpt-d768": (8192, 256, 768, 12, 2)}


# --------------------------------------------------------------------------
# Models (imported lazily: the parent process never loads torch or BLAS)
# --------------------------------------------------------------------------

def build_model(name):
    """(module, example inputs at the benchmark batch, input names,
    dynamic axes, extra cleave compile args) for model `name`."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test", "models"))
    import export_models

    torch.manual_seed(0)
    if name in ZOO_NAMES:
        sys.path.insert(0, os.path.join(ROOT, "test", "models", "zoo"))
        import zoo_models
        b = BATCH[name]
        if name == "transformer":
            # nn.TransformerEncoder (pre-norm) on token ids, its padding
            # mask from token 0: the ids drawn from 1 up, as Cleave's
            # --synthetic draws them within the vocabulary.
            model, names, dynamic, _ = zoo_models.MODELS[
                "transformer_pre_norm"]()
            args = (torch.randint(1, zoo_models.VOCAB, (b, zoo_models.SEQ)),
                    torch.randint(0, zoo_models.VOCAB, (b, zoo_models.SEQ)))
        else:
            zoo_name, side = ZOO_IMAGE_SIZES.get(
                name, (name, zoo_models.IMAGE_SIZE))
            model, names, dynamic, _ = zoo_models.MODELS[zoo_name]()
            args = (torch.randn(b, 3, side, side),
                    torch.randint(0, zoo_models.CLASSES, (b,)))
        return model, args, names, dynamic, ["--input-shape", f"batch={b}"]
    if name in GPT_SIZES:
        class Config(export_models.GPTConfig):
            (vocab_size, n_positions, d_model, n_head,
             n_layer) = GPT_SIZES[name]
        b = BATCH[name]
        idx = torch.randint(0, Config.vocab_size, (b, Config.n_positions))
        targets = torch.randint(0, Config.vocab_size, (b, Config.n_positions))
        return (export_models.GPT(Config()), (idx, targets),
                ["idx", "targets"], None, [])
    if name == "mlp-512":
        b = BATCH[name]
        x = torch.randn(b, 784)
        y = torch.randint(0, 10, (b,))
        return export_models.MLP((784, 512, 512, 10)), (x, y), ["x", "y"], \
            None, []
    if name in ("convnet", "convnet-b128"):
        b = BATCH[name]
        x = torch.randn(b, 1, 28, 28)
        y = torch.randint(0, 10, (b,))
        return (export_models.KerasConvNet(CONVNET_CONVS, CONVNET_DENSE),
                (x, y), ["x", "y"], None, [])
    if name == "mlp-large":
        b = BATCH[name]
        x = torch.randn(b, LARGE_DIMS[0])
        y = torch.randint(0, LARGE_DIMS[-1], (b,))
        return export_models.MLP(LARGE_DIMS), (x, y), ["x", "y"], None, []

    model, args, names, dynamic = export_models.MODELS[name]()
    if name == "mlp":
        b = BATCH[name]
        args = (torch.randn(b, 784), torch.randint(0, 10, (b,)))
        return model, args, names, dynamic, ["--input-shape", f"batch={b}"]
    if name == "cnn":
        # A static batch, as the export's own.
        b = BATCH[name]
        args = (torch.randn(b, 1, 28, 28), torch.randint(0, 10, (b,)))
    # gpt: the export's own static batch.
    assert args[0].shape[0] == BATCH[name], (name, args[0].shape)
    return model, args, names, dynamic, []


def export_onnx(name, path):
    import torch
    model, args, names, dynamic, extra = build_model(name)
    model.train()
    warnings.filterwarnings("ignore")
    with contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        torch.onnx.export(model, args, path, input_names=names,
                          output_names=["loss"], dynamic_axes=dynamic,
                          opset_version=OPSET, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING)
    return extra


# --------------------------------------------------------------------------
# The worker: runs in the timing environment; PyTorch steps and raw sgemm
# --------------------------------------------------------------------------

def _openblas():
    lib = ctypes.CDLL(OPENBLAS_LIB)
    lib.openblas_get_corename.restype = ctypes.c_char_p
    lib.openblas_get_config.restype = ctypes.c_char_p
    return lib


class GemmRunner:
    """Calls cblas_sgemm (row-major) through ctypes on preallocated buffers."""

    def __init__(self, lib, calls):
        import numpy as np
        self.lib = lib
        self.calls = calls
        size = lambda r, c: max(1, r * c)
        na = max(size(c["m"], c["k"]) for c in calls)
        nb = max(size(c["k"], c["n"]) for c in calls)
        nc = max(size(c["m"], c["n"]) for c in calls)
        rng = np.random.default_rng(0)
        self.a = rng.standard_normal(na, dtype=np.float32)
        self.b = rng.standard_normal(nb, dtype=np.float32)
        self.c = np.zeros(nc, np.float32)
        self.ptrs = [ctypes.c_void_p(v.ctypes.data)
                     for v in (self.a, self.b, self.c)]
        f = lib.cblas_sgemm
        f.restype = None
        f.argtypes = [ctypes.c_int] * 6 + [
            ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
            ctypes.c_int, ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
        self.args = []
        for c in calls:
            m, n, k = c["m"], c["n"], c["k"]
            lda = m if c["ta"] else k
            ldb = k if c["tb"] else n
            self.args.append((101, 112 if c["ta"] else 111,
                              112 if c["tb"] else 111, m, n, k, 1.0,
                              self.ptrs[0], lda, self.ptrs[1], ldb,
                              float(c.get("beta", 0.0)), self.ptrs[2], n))

    def once(self):
        f = self.lib.cblas_sgemm
        for a in self.args:
            f(*a)

    def time(self, seconds):
        """Median seconds of one pass over the calls."""
        self.once()
        times = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or len(times) < 3:
            t = time.perf_counter()
            self.once()
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    def flops(self):
        return sum(2.0 * c["m"] * c["n"] * c["k"] for c in self.calls)


def worker_main():
    import torch
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)
    state = {}

    def reply(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        req = json.loads(line)
        cmd = req["cmd"]
        if cmd == "info":
            lib = _openblas()
            blas = sorted({l.split()[-1] for l in open("/proc/self/maps")
                           if re.search(r"blas|lapack", l.split()[-1])})
            # torch's matmul against the library's own sgemm, 1024^3.
            n = 1024
            a, b = torch.randn(n, n), torch.randn(n, n)
            torch.mm(a, b)
            t = time.perf_counter()
            for _ in range(5):
                torch.mm(a, b)
            torch_gf = 5 * 2 * n ** 3 / (time.perf_counter() - t) / 1e9
            g = GemmRunner(lib, [dict(ta=0, tb=0, m=n, n=n, k=n)])
            blas_gf = g.flops() / g.time(0.3) / 1e9
            reply(dict(torch=torch.__version__,
                       torch_threads=torch.get_num_threads(),
                       blas_libs=blas,
                       openblas_core=lib.openblas_get_corename().decode(),
                       openblas_config=lib.openblas_get_config().decode(),
                       openblas_threads=lib.openblas_get_num_threads(),
                       torch_mm_gflops=torch_gf, cblas_mm_gflops=blas_gf))
        elif cmd == "gemms":
            g = GemmRunner(_openblas(), req["calls"])
            sec = g.time(req["seconds"])
            reply(dict(seconds=sec, flops=g.flops(), calls=len(req["calls"])))
        elif cmd == "setup":
            model, args, _, _, _ = build_model(req["model"])
            model.train()
            opt = torch_optimizer(req["model"], model.parameters())

            def step():
                loss = model(*args)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                return loss

            for _ in range(3):
                step()
            # Calibrate: steps for about 0.3 s.
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < 0.3 or n < 3:
                step()
                n += 1
            state["step"] = step
            reply(dict(estimate=(time.perf_counter() - t0) / n))
        elif cmd == "run":
            step = state["step"]
            for _ in range(req["warmup"]):
                step()
            t = time.perf_counter()
            for _ in range(req["steps"]):
                loss = step()
            sec = time.perf_counter() - t
            reply(dict(seconds=sec, steps=req["steps"],
                       loss=float(loss.detach())))
        elif cmd == "quit":
            return 0
    return 0


class Worker:
    def __init__(self, env):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            text=True)

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker died on {req['cmd']} "
                               f"(exit {self.proc.wait()})")
        return json.loads(line)

    def close(self):
        try:
            self.ask(cmd="quit")
        except (RuntimeError, BrokenPipeError, ValueError):
            pass
        self.proc.wait()


# --------------------------------------------------------------------------
# Cleave
# --------------------------------------------------------------------------

PROGRESS = re.compile(
    r"^step (\d+)/(\d+)(?:\s+loss (\S+))?\s+([0-9.]+) samples/s")


def run_cleave(binary, steps, batch, env):
    """Steady seconds per step from the progress lines of one run."""
    t = time.perf_counter()
    p = subprocess.run([binary, "--synthetic", "--steps", str(steps)],
                       env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{binary} failed ({p.returncode}): "
                           f"{p.stderr[-2000:]}")
    points = []
    for line in p.stderr.splitlines():
        m = PROGRESS.match(line)
        if m and float(m.group(4)) > 0:
            s = int(m.group(1))
            points.append((s, s * batch / float(m.group(4)),
                           float(m.group(3) or "nan")))
    warm = max(1, steps // 5)
    after = [pt for pt in points if pt[0] >= warm]
    if len(after) < 2:
        raise RuntimeError(f"too few progress lines from {binary}")
    (s1, t1, _), (s2, t2, loss) = after[0], after[-1]
    return dict(step_s=(t2 - t1) / (s2 - s1), wall=wall, steps=steps,
                loss=loss)


SHAPE = r"Shape\{([0-9, ]*)\}"


def _dims(text):
    return [int(v) for v in text.split(",") if v.strip()]


def gemm_calls(source):
    """The cblas_sgemm calls of one training step of a generated program,
    in order, as OpenBLAS alone would make them (runtime/KernelsLinalg.cpp,
    KernelsConvolution.cpp; linearBackwardSgd as its two GEMMs,
    matmulStrided as one GEMM per batch matrix)."""
    calls = []
    for line in source.splitlines():
        line = line.strip()
        m = re.match(r"gemm\((true|false), (true|false), (\d+), (\d+), (\d+), "
                     r"[^,]+, [^,]+, [^,]+, ([^,]+),", line)
        if m:
            calls.append(dict(ta=int(m.group(1) == "true"),
                              tb=int(m.group(2) == "true"),
                              m=int(m.group(3)), n=int(m.group(4)),
                              k=int(m.group(5)),
                              beta=float(m.group(6).rstrip("f"))))
            continue
        m = re.match(r"linearBackwardSgd\((\d+), (\d+), (\d+),", line)
        if m:
            # dx = dy w, then w += alpha dy^T x: OpenBLAS's two calls.
            rows, n, k = (int(m.group(i)) for i in (1, 2, 3))
            calls.append(dict(ta=0, tb=0, m=rows, n=k, k=n, beta=0.0))
            calls.append(dict(ta=1, tb=0, m=n, n=k, k=rows, beta=1.0))
            continue
        m = re.match(r"matmulStrided\(Shape\{([0-9, ]*)\}, (\d+), (\d+), "
                     r"(\d+),", line)
        if m:
            # Attention's products read through strides: one sgemm per
            # batch matrix (transposes as OpenBLAS would read them aside).
            count = 1
            for d in _dims(m.group(1)):
                count *= d
            calls += [dict(ta=0, tb=0, m=int(m.group(2)), n=int(m.group(3)),
                           k=int(m.group(4)))] * count
            continue
        m = re.match(rf"matmul\([^,]+, {SHAPE}, [^,]+, {SHAPE}, [^,]+, "
                     rf"{SHAPE}\)", line)
        if m:
            a, b, out = (_dims(m.group(i)) for i in (1, 2, 3))
            mm = a[-2] if len(a) >= 2 else 1
            k = a[-1]
            n = b[-1] if len(b) >= 2 else 1
            batch = 1
            for d in out[:-2] if len(b) >= 2 else out[:-1]:
                batch *= d
            bb = 1
            for d in b[:-2]:
                bb *= d
            ab = 1
            for d in a[:-2]:
                ab *= d
            if bb == 1 and ab == batch:
                calls.append(dict(ta=0, tb=0, m=batch * mm, n=n, k=k))
            else:
                calls += [dict(ta=0, tb=0, m=mm, n=n, k=k)] * batch
            continue
        # (A weight's cached live taps, a last argument, change nothing.)
        m = re.match(rf"(conv|convGradInput|convGradWeight)\([^,]+, {SHAPE}, "
                     rf"[^,]+, {SHAPE}, .*, (\d+), [^,]+, {SHAPE}"
                     rf"(?:, weightTaps[_0-9]*)?\);", line)
        if m:
            kind = m.group(1)
            s1, s2, group, s3 = (_dims(m.group(2)), _dims(m.group(3)),
                                 int(m.group(4)), _dims(m.group(5)))
            if kind == "conv":
                x, w, y = s1, s2, s3
            elif kind == "convGradInput":
                y, w, x = s1, s2, s3
            else:
                y, x, w = s1, s2, s3
            o_size = 1
            for d in y[2:]:
                o_size *= d
            k_size = 1
            for d in w[2:]:
                k_size *= d
            g_out, k_rows = w[0] // group, (x[1] // group) * k_size
            one = {"conv": dict(ta=0, tb=0, m=g_out, n=o_size, k=k_rows),
                   "convGradInput": dict(ta=1, tb=0, m=k_rows, n=o_size,
                                         k=g_out),
                   "convGradWeight": dict(ta=0, tb=1, m=g_out, n=k_rows,
                                          k=o_size, beta=1.0)}[kind]
            calls += [one] * (x[0] * group)
    return calls


def model_flops(name, batch):
    """The useful FLOPs of one training step (see the docstring), or None
    for a model the table gives no FLOP rate for."""
    if name == "mlp-large":
        return large_model_flops(batch)
    if name in ("convnet", "convnet-b128"):
        return convnet_flops(batch)
    if name in GPT_SIZES:
        vocab, seq, d, _, layers = GPT_SIZES[name]
        tokens = batch * seq
        linear = layers * 12 * d * d + vocab * d
        attention = layers * 2 * seq * d   # per token: scores and context
        return 3 * 2 * tokens * (linear + attention)
    return None


def large_model_flops(batch):
    """mlp-large's useful FLOPs per step (see the docstring)."""
    flops = 0
    for i in range(len(LARGE_DIMS) - 1):
        mnk = batch * LARGE_DIMS[i] * LARGE_DIMS[i + 1]
        flops += 2 * mnk * (2 if i == 0 else 3)
    return flops


def convnet_flops(batch):
    """The convnets' useful FLOPs per step: forward, the weight gradient of
    every layer and the input gradient of all but the first (as for
    mlp-large; the convolutions' multiply-adds over their output planes)."""
    flops, size = 0, 28
    for i, (cin, cout, k) in enumerate(CONVNET_CONVS):
        size -= k - 1
        mnk = batch * size * size * cout * cin * k * k
        flops += 2 * mnk * (2 if i == 0 else 3)
    for i in range(len(CONVNET_DENSE) - 1):
        flops += 2 * 3 * batch * CONVNET_DENSE[i] * CONVNET_DENSE[i + 1]
    return flops


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def cpu_flags():
    with open("/proc/cpuinfo") as f:
        text = f.read()
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    fam = re.search(r"^cpu family\s*:\s*(\d+)", text, re.M)
    mod = re.search(r"^model\s*:\s*(\d+)", text, re.M)
    desc = model.group(1).strip() if model else "unknown CPU"
    if fam and mod:
        desc += f" (family {fam.group(1)} model {mod.group(1)})"
    return desc, set(flags.group(1).split()) if flags else set()


def detect_coretype(flags):
    if "avx512f" in flags:
        return "SkylakeX"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env["OPENBLAS_NUM_THREADS"] = "1"
    code = ("import ctypes; l = ctypes.CDLL(%r); "
            "l.openblas_get_corename.restype = ctypes.c_char_p; "
            "print(l.openblas_get_corename().decode())" % OPENBLAS_LIB)
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


WAIT_POLICIES = {"passive": "PASSIVE", "active": "ACTIVE", "default": None}


def timing_env(opts, coretype, policy="passive"):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("OMP_", "GOMP_", "OPENBLAS_", "KMP_")):
            del env[k]
    t = str(opts.threads)
    env.update(OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t)
    if WAIT_POLICIES[policy]:
        env["OMP_WAIT_POLICY"] = WAIT_POLICIES[policy]
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    env["LD_LIBRARY_PATH"] = ":".join(
        [OPENBLAS_DIR] + [p for p in env.get("LD_LIBRARY_PATH", "").split(":")
                          if p])
    for kv in opts.env:
        k, _, v = kv.partition("=")
        if v:
            env[k] = v
        else:
            env.pop(k, None)
    return env


def resolved_blas(binary, env):
    out = subprocess.run(["ldd", binary], env=env, capture_output=True,
                         text=True).stdout
    m = re.search(r"libopenblas\.so\.0 => (\S+)", out)
    return os.path.realpath(m.group(1)) if m else "?"


def fmt_ms(s):
    ms = s * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODEL_NAMES),
                    help="comma-separated subset of " +
                    ",".join(MODEL_NAMES + SIZED_NAMES + ZOO_NAMES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0,
                    help="timed seconds per measurement (default 2)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating Cleave/PyTorch rounds; median reported")
    ap.add_argument("--coretype", default="auto",
                    help="OPENBLAS_CORETYPE for both ('auto', 'none', a name)")
    ap.add_argument("--env", action="append", default=[],
                    metavar="KEY=VALUE",
                    help="set (KEY= unsets) a variable in both timing "
                         "environments; repeatable")
    ap.add_argument("--wait-policies", metavar="P[,P...]",
                    help="OMP_WAIT_POLICY settings to time each side under "
                         "(passive, default, active); each side is reported "
                         "at its fastest (default: passive,default with more "
                         "than one thread, passive with one)")
    ap.add_argument("--cleave", default=os.path.join(ROOT, "build", "bin",
                                                     "cleave"))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--keep", help="work directory to keep (default: a "
                    "temporary one, removed)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.worker:
        return worker_main()

    models = [m for m in opts.models.split(",") if m]
    for m in models:
        if m not in BATCH:
            ap.error(f"unknown model {m!r}")
    if not os.access(opts.cleave, os.X_OK):
        ap.error(f"no cleave at {opts.cleave}: build it first")
    started = time.perf_counter()
    cpu, flags = cpu_flags()
    coretype = (detect_coretype(flags) if opts.coretype == "auto" else
                None if opts.coretype == "none" else opts.coretype)
    policies = (opts.wait_policies.split(",") if opts.wait_policies else
                ["passive", "default"] if opts.threads > 1 else ["passive"])
    for pol in policies:
        if pol not in WAIT_POLICIES:
            ap.error(f"unknown wait policy {pol!r} (passive, default, "
                     "active)")
    if any(kv.startswith("OMP_WAIT_POLICY=") for kv in opts.env) and \
            len(policies) > 1:
        ap.error("--env OMP_WAIT_POLICY=... fixes the policy: give "
                 "--wait-policies one policy, or leave --env out")
    envs = {pol: timing_env(opts, coretype, pol) for pol in policies}
    env = envs[policies[0]]
    load = os.getloadavg()[0]
    work = opts.keep or tempfile.mkdtemp(prefix="cleave-bench-")
    os.makedirs(work, exist_ok=True)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)

    try:
        # BLAS check and the sgemm peak, in the timing environment.
        w = Worker(env)
        info = w.ask(cmd="info")
        peak_calls = [dict(ta=0, tb=0, m=1024, n=4096, k=4096)]
        peak = w.ask(cmd="gemms", calls=peak_calls, seconds=1.0)
        info["sgemm_peak_gflops"] = peak["flops"] / peak["seconds"] / 1e9
        all_peaks = [info["sgemm_peak_gflops"]]
        log(f"torch BLAS: {', '.join(info['blas_libs'])}; OpenBLAS core "
            f"{info['openblas_core']}, {info['openblas_threads']} threads; "
            f"1024^3 sgemm: torch.mm {info['torch_mm_gflops']:.1f} GFLOP/s, "
            f"cblas {info['cblas_mm_gflops']:.1f}; 1024x4096x4096 sgemm "
            f"{info['sgemm_peak_gflops']:.1f} GFLOP/s")
        if not any("openblas" in p for p in info["blas_libs"]):
            raise RuntimeError("torch does not use OpenBLAS: "
                               f"{info['blas_libs']}")

        results = []
        for name in models:
            batch = BATCH[name]
            onnx_path = os.path.join(work, name + ".onnx")
            binary = os.path.join(work, name + "-train")
            # Export in a child (no torch in this process).
            code = ("import sys; sys.path.insert(0, %r); import bench; "
                    "print(' '.join(bench.export_onnx(%r, %r)))"
                    % (HERE, name, onnx_path))
            extra = subprocess.run([sys.executable, "-c", code], check=True,
                                   capture_output=True,
                                   text=True).stdout.split()
            subprocess.run([opts.cleave, "compile", onnx_path, *extra,
                            *cleave_optimizer_flags(name),
                            "--keep-source", "-o", binary], check=True)
            with open(binary + ".cpp") as f:
                calls = gemm_calls(f.read())
            floor = w.ask(cmd="gemms", calls=calls, seconds=0.5)
            blas_path = resolved_blas(binary, env)

            # Calibrate both (under the first policy), then alternate
            # rounds: every policy of both sides in each round.
            est = run_cleave(binary, 10, batch, env)["step_s"]
            cl_steps = max(10, int(opts.seconds / 0.8 / max(est, 1e-6)))
            tws = {pol: Worker(envs[pol]) for pol in policies}
            t_est = min(tw.ask(cmd="setup", model=name)["estimate"]
                        for tw in tws.values())
            t_steps = max(5, int(opts.seconds / max(t_est, 1e-6)))
            t_warm = max(2, t_steps // 10)
            cl_by = {pol: [] for pol in policies}
            pt_by = {pol: [] for pol in policies}
            peaks = []
            for r in range(opts.rounds):
                for pol in policies:
                    c = run_cleave(binary, cl_steps, batch, envs[pol])
                    cl_by[pol].append(c["step_s"])
                    p = tws[pol].ask(cmd="run", steps=t_steps, warmup=t_warm)
                    pt_by[pol].append(p["seconds"] / p["steps"])
                if model_flops(name, batch):
                    # The machine's speed drifts (shared hosts): each round
                    # has its own peak, and each rate is a fraction of it.
                    pk = w.ask(cmd="gemms", calls=peak_calls, seconds=0.5)
                    peaks.append(pk["flops"] / pk["seconds"] / 1e9)
            for tw in tws.values():
                tw.close()
            cl_pol = min(policies, key=lambda q: statistics.median(cl_by[q]))
            pt_pol = min(policies, key=lambda q: statistics.median(pt_by[q]))
            cl, pt = cl_by[cl_pol], pt_by[pt_pol]
            res = dict(model=name, batch=batch, cleave_s=statistics.median(cl),
                       torch_s=statistics.median(pt), cleave_runs=cl,
                       torch_runs=pt, cleave_policy=cl_pol,
                       torch_policy=pt_pol,
                       cleave_runs_by_policy=cl_by,
                       torch_runs_by_policy=pt_by, cleave_steps=cl_steps,
                       torch_steps=t_steps, cleave_last_loss=c["loss"],
                       torch_last_loss=p["loss"], gemm_calls=len(calls),
                       gemm_flops=floor["flops"],
                       gemm_floor_s=floor["seconds"], cleave_blas=blas_path)
            res["ratio"] = res["torch_s"] / res["cleave_s"]
            if model_flops(name, batch):
                res["model_flops"] = model_flops(name, batch)
                res["model_gflops_cleave"] = (res["model_flops"] /
                                              res["cleave_s"] / 1e9)
                res["model_gflops_torch"] = (res["model_flops"] /
                                             res["torch_s"] / 1e9)
                res["round_peaks_gflops"] = peaks
                res["percent_cleave"] = statistics.median(
                    100 * res["model_flops"] / s / 1e9 / pk
                    for s, pk in zip(cl, peaks))
                res["percent_torch"] = statistics.median(
                    100 * res["model_flops"] / s / 1e9 / pk
                    for s, pk in zip(pt, peaks))
                all_peaks.extend(peaks)
            results.append(res)
            by_pol = "; ".join(
                f"{q}: Cleave {[fmt_ms(v) for v in cl_by[q]]}, PyTorch "
                f"{[fmt_ms(v) for v in pt_by[q]]}" for q in policies)
            log(f"{name}: Cleave {fmt_ms(res['cleave_s'])} ms ({cl_pol}), "
                f"PyTorch {fmt_ms(res['torch_s'])} ms ({pt_pol}) [{by_pol}], "
                f"OpenBLAS GEMMs "
                f"{fmt_ms(floor['seconds'])} ms ({len(calls)} sgemm calls), "
                f"Cleave's BLAS {blas_path}")
        w.close()
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)

    peak_gf = statistics.median(all_peaks)
    peak_range = f"{min(all_peaks):.0f}-{max(all_peaks):.0f}"
    envline = (f"{cpu}, {os.cpu_count()} cores (load avg {load:.2f} at "
               f"start); threads {opts.threads}: OMP_NUM_THREADS="
               f"{env['OMP_NUM_THREADS']} OPENBLAS_NUM_THREADS="
               f"{env['OPENBLAS_NUM_THREADS']} OMP_WAIT_POLICY "
               f"{'/'.join(policies)}"
               f"{' (each side at its fastest)' if len(policies) > 1 else ''}"
               f" OPENBLAS_CORETYPE="
               f"{env.get('OPENBLAS_CORETYPE', 'unset')} for both (Cleave "
               f"runs OpenBLAS single-threaded on its OpenMP threads); "
               f"{info['openblas_config'].split(' NO_')[0]} "
               f"(core {info['openblas_core']}) from {OPENBLAS_DIR} for both; "
               f"PyTorch {info['torch']} eager, torch.mm "
               f"{info['torch_mm_gflops']:.0f} vs cblas "
               f"{info['cblas_mm_gflops']:.0f} GFLOP/s at 1024^3; "
               f"sgemm peak (1024x4096x4096) {peak_gf:.1f} GFLOP/s "
               f"(median of {len(all_peaks)}, {peak_range})")
    extra_env = [kv for kv in opts.env]
    if extra_env:
        envline += "; --env " + " ".join(extra_env)

    head = ["model", "batch", "Cleave ms/step", "PyTorch ms/step",
            "PyTorch/Cleave", "OpenBLAS GEMMs ms",
            "model GFLOP/s (% of sgemm)"]
    rows = []
    for r in results:
        gf = "-"
        if "model_gflops_cleave" in r:
            gf = (f"Cleave {r['model_gflops_cleave']:.1f} "
                  f"({r['percent_cleave']:.0f}%), "
                  f"PyTorch {r['model_gflops_torch']:.1f} "
                  f"({r['percent_torch']:.0f}%)")
        tag = ((lambda q: f" ({q})") if len(policies) > 1 else
               (lambda q: ""))
        rows.append([r["model"], str(r["batch"]),
                     fmt_ms(r["cleave_s"]) + tag(r["cleave_policy"]),
                     fmt_ms(r["torch_s"]) + tag(r["torch_policy"]),
                     f"{r['ratio']:.2f}x",
                     fmt_ms(r["gemm_floor_s"]), gf])
    if opts.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print()
        print("PyTorch/Cleave > 1: Cleave is faster. OpenBLAS GEMMs: the "
              "GEMMs of one Cleave step, timed alone through the same "
              "OpenBLAS with its own threads.")
        print()
        print(f"Environment: {envline}.")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows))
                  for i, h in enumerate(head)]
        print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        for row in rows:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
        print()
        print(f"env: {envline}")
    log(f"total {time.perf_counter() - started:.0f} s")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(dict(env=envline, info=info, threads=opts.threads,
                           environment={k: env[k] for k in env if k.startswith(
                               ("OMP_", "OPENBLAS_", "LD_LIBRARY_PATH"))},
                           results=results), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
