#!/usr/bin/python3
"""Cleave's fault corpus: hostile inputs and environments, each with its
expected verdict, run against the real `cleave` and a real training program.

Verdicts:
  refused   exit 1, stderr names the cause (a regex), nothing crashed
  ok        exit 0 (and the case's own check of the output)
  survived  exit 0 or a clear refusal (exit 1 with 'error:'): for generated
            inputs whose right answer is not known case by case
Never acceptable: a signal or exit code above 1 (crash), a timeout (hang),
a traceback or 'Stack dump' (internal error), or a check that fails after
the run (a lost or corrupted file).

Cases are deterministic (fixed seeds), so a failure reproduces. Prints one
line per case and a summary; exits 1 if any case failed.

usage: fault_corpus.py --cleave CLEAVE --work DIR [--mutations N] [--filter RE]
"""

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper, parser, TensorProto

TINY = """<ir_version: 8, opset_import: ["" : 17]>
tiny (float[4, 3] x, int64[4] y) => (float loss)
  <float[3, 2] w = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, float[2] b = {0.01, -0.02}> {
  h = Gemm(x, w, b)
  loss = SoftmaxCrossEntropyLoss(h, y)
}
"""

CRASH_MARKERS = ("Stack dump", "PLEASE submit", "Segmentation fault",
                 "terminate called", "Traceback", "AddressSanitizer",
                 "runtime error:", "Aborted", "core dumped")


class Corpus:
    def __init__(self, cleave, work, timeout):
        self.cleave, self.work, self.timeout = cleave, work, timeout
        self.results = []

    def run(self, name, args, verdict, message=None, env=None, fsize=None,
            check=None, stdin=None):
        """Runs one case; `check` (a function returning an error string or
        None) runs after the command, whatever its verdict."""
        def limits():
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        started = time.time()
        try:
            proc = subprocess.run(
                args, env=dict(os.environ, **(env or {})), capture_output=True,
                timeout=self.timeout, preexec_fn=limits, stdin=stdin)
            code, err = proc.returncode, proc.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            code, err = None, "(timed out)"
        problem = None
        if code is None:
            problem = "hang: no exit within %ds" % self.timeout
        elif code < 0 or code > 1:
            problem = "crash: exit %d" % code
        elif any(marker in err for marker in CRASH_MARKERS):
            problem = "internal error in the output"
        elif verdict == "refused" and code != 1:
            problem = "accepted (exit 0), expected a refusal"
        elif verdict == "ok" and code != 0:
            problem = "refused, expected success"
        elif code == 1 and "error" not in err:
            problem = "exit 1 without an error message"
        elif verdict == "refused" and message and not re.search(message, err):
            problem = "message does not match /%s/" % message
        if problem is None and check is not None:
            problem = check()
        seconds = time.time() - started
        self.results.append((name, problem))
        status = "FAIL" if problem else "ok"
        print("%-4s %-48s %5.1fs%s" % (status, name, seconds,
                                       "" if not problem else
                                       "  " + problem + "\n     " +
                                       err.strip().replace("\n", "\n     ")[:600]))
        sys.stdout.flush()


def digest(path):
    if not os.path.exists(path):
        return None
    if os.path.isdir(path):
        return {f: digest(os.path.join(path, f)) for f in sorted(os.listdir(path))}
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def unchanged(path, before):
    return lambda: None if digest(path) == before else "'%s' was changed" % path


def write_npy_raw(path, header, data=b""):
    """A .npy file with a hand-written header dict (version 1)."""
    text = header.encode("latin-1")
    pad = (64 - (10 + len(text) + 1) % 64) % 64
    text += b" " * pad + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data)


def mutate(data, rng):
    data = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0 and data:  # flip bytes
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 1:  # truncate
        del data[rng.randrange(len(data) + 1):]
    elif kind == 2 and data:  # duplicate a slice
        a = rng.randrange(len(data))
        b = min(len(data), a + rng.randint(1, 32))
        data[a:a] = data[a:b]
    else:  # huge varints where lengths are
        at = rng.randrange(len(data) + 1)
        data[at:at] = b"\xff\xff\xff\xff\x0f"
    return bytes(data)


def compile_cases(c, models):
    w = c.work
    cl = [c.cleave, "compile"]
    tiny = os.path.join(models, "tiny.onnx")
    c.run("compile: model does not exist", cl + [w + "/nope.onnx", "-o", w + "/p"],
          "refused", r"nope\.onnx")
    c.run("compile: model is a directory", cl + [w, "-o", w + "/p"], "refused", "")
    open(w + "/empty.onnx", "wb").close()
    c.run("compile: empty model file", cl + [w + "/empty.onnx", "-o", w + "/p"],
          "refused", r"empty\.onnx")
    open(w + "/garbage.onnx", "wb").write(bytes(range(256)) * 4)
    c.run("compile: random bytes", cl + [w + "/garbage.onnx", "-o", w + "/p"],
          "refused", r"garbage\.onnx")
    c.run("compile: -o ''", cl + [tiny, "-o", ""], "refused", r"-o needs a file name")
    c.run("compile: -o the model", cl + [tiny, "-o", tiny], "refused",
          r"is the model", check=unchanged(tiny, digest(tiny)))
    os.symlink(tiny, w + "/link-to-model")
    c.run("compile: -o a symlink to the model", cl + [tiny, "-o", w + "/link-to-model"],
          "refused", r"is the model", check=unchanged(tiny, digest(tiny)))
    c.run("compile: --inference --optimizer", cl + [tiny, "--inference", "--optimizer", "sgd"],
          "refused", r"--optimizer sets up training")
    for flag, value, message in [("--lr", "-1", "--lr must be positive"),
                                 ("--lr", "nan", "finite"),
                                 ("--input-shape", "batch=-3", "batch"),
                                 ("--input-shape", "x=99999999999x9999999999", r"2\^48|x"),
                                 ("--mesh", "dp=0", "--mesh"),
                                 ("--mesh", "dp=3 --strategy dp", "divisible by 3"),
                                 ("--bucket-mb", "0", "--bucket-mb"),
                                 ("--microbatches", "0", "--microbatches"),
                                 ("--cuda-arch", "12", "--cuda-arch")]:
        c.run("compile: %s %s" % (flag, value),
              cl + [tiny, flag] + value.split() + ["-o", w + "/p"],
              "refused", message)
    # Shapes whose element counts overflow int64 (they used to wrap to 0).
    m = parser.parse_model(TINY)
    big = m.graph.initializer.add()
    big.name, big.data_type = "unused", TensorProto.FLOAT
    big.dims.extend([2**32, 2**32])
    onnx.save(m, w + "/overflow.onnx")
    c.run("compile: [2^32, 2^32] initializer", cl + [w + "/overflow.onnx", "-o", w + "/p"],
          "refused", r"unused.*2\^48")
    # Full disks and quotas while writing outputs: the earlier file stays.
    c.run("compile: earlier IR", cl + [tiny, "--emit=mlir", "-o", w + "/step.mlir"], "ok")
    before = digest(w + "/step.mlir")
    c.run("compile: IR over a quota", cl + [tiny, "--emit=source", "-o", w + "/step.mlir"],
          "refused", r"step\.mlir.*File too large", fsize=1024,
          check=unchanged(w + "/step.mlir", before))
    c.run("compile: IR to /dev/full", cl + [tiny, "--emit=mlir", "-o", "/dev/full"],
          "refused", r"/dev/full.*No space left")
    c.run("import: to /dev/full", [c.cleave, "import", tiny, "-o", "/dev/full"],
          "refused", r"/dev/full")
    # Environment text never becomes code.
    evil = os.path.join(w, 'tmp"\n);abort();//')
    os.makedirs(evil)
    c.run("compile: TMPDIR with a quote and C++", cl + [tiny, "-o", w + "/evil-tmp"], "ok",
          env={"TMPDIR": evil})
    # Generated: mutated models must be refused cleanly or compile.
    data = open(tiny, "rb").read()
    rng = random.Random(1601)
    for i in range(args.mutations):
        path = "%s/mutant-%d.onnx" % (w, i)
        open(path, "wb").write(mutate(data, rng))
        c.run("compile: mutated model #%d" % i, cl + [path, "--emit=mlir", "-o", "/dev/null"],
              "survived")


def runtime_cases(c, models):
    w = c.work
    train = w + "/train"
    subprocess.run([c.cleave, "compile", os.path.join(models, "tiny.onnx"), "-o", train],
                   check=True)
    data = w + "/data"
    os.makedirs(data)
    np.save(data + "/x.npy", np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3))
    np.save(data + "/y.npy", np.array([0, 1] * 4, np.int64))
    run = [train, "--data", data, "--quiet"]

    # Checkpoints: a full disk never costs the previous checkpoint.
    ck = w + "/ck"
    c.run("train: checkpoint after 2 steps", run + ["--steps", "2", "--checkpoint-dir", ck], "ok")
    good = digest(ck + "/step-2")
    c.run("train: checkpoint over a quota", run + ["--steps", "4", "--checkpoint-dir", ck,
                                                   "--resume"],
          "refused", r"File too large", fsize=100,
          check=lambda: None if open(ck + "/latest").read().strip() == "step-2" and
          digest(ck + "/step-2") == good else "the last good checkpoint is gone")
    c.run("train: resume after the quota", run + ["--steps", "4", "--checkpoint-dir", ck,
                                                  "--resume"], "ok")
    c.run("train: fresh run into a used checkpoint dir",
          run + ["--steps", "1", "--checkpoint-dir", ck], "refused",
          r"--resume|--overwrite-checkpoints", check=unchanged(ck, digest(ck)))
    full_disk_cases(c, run, w)
    # Dumps and logs.
    c.run("train: dump", run + ["--steps", "1", "--dump-params", w + "/dump"], "ok")
    before = digest(w + "/dump")
    c.run("train: dump over a quota", run + ["--steps", "1", "--dump-params", w + "/dump"],
          "refused", r"dump.*File too large", fsize=100,
          check=unchanged(w + "/dump", before))
    c.run("train: log to /dev/full", run + ["--steps", "1", "--log", "/dev/full"],
          "refused", r"/dev/full")
    c.run("train: outputs to /dev/full dir", run + ["--steps", "1", "--dump-outputs", "/dev/full"],
          "refused", r"/dev/full")
    # Flags at their edges.
    for flags, message in [(["--steps", "-1"], "--steps"),
                           (["--steps", "99999999999999999999"], "--steps"),
                           (["--checkpoint-every", "0"], "--checkpoint-every"),
                           (["--resume"], "--checkpoint-dir"),
                           (["--seed", "x"], "--seed"),
                           (["--data", ""], "--data"),
                           (["--bogus"], "unknown flag")]:
        c.run("train: %s" % " ".join(flags), [train, "--data", data] + flags, "refused", message)
    # .npy data: hand-written hostile headers, then generated mutations.
    bad = w + "/bad"
    cases = {
        "4 GiB header length": lambda p: open(p, "wb").write(
            b"\x93NUMPY\x02\x00" + (0xFFFFFFFF).to_bytes(4, "little") + b"{}"),
        "duplicate descr": lambda p: write_npy_raw(
            p, "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (8, 3), }",
            bytes(96)),
        "unknown key": lambda p: write_npy_raw(
            p, "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 3), 'x': 1, }", bytes(96)),
        "negative dim": lambda p: write_npy_raw(
            p, "{'descr': '<f4', 'fortran_order': False, 'shape': (-8, 3), }"),
        "overflowing shape": lambda p: write_npy_raw(
            p, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"),
        "truncated data": lambda p: write_npy_raw(
            p, "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 3), }", bytes(10)),
    }
    for label, make in cases.items():
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(data, bad)
        make(bad + "/x.npy")
        c.run("train: .npy %s" % label, [train, "--data", bad, "--quiet"], "refused", r"x\.npy")
    rng = random.Random(1602)
    source = open(data + "/x.npy", "rb").read()
    for i in range(args.mutations):
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(data, bad)
        open(bad + "/x.npy", "wb").write(mutate(source, rng))
        c.run("train: mutated .npy #%d" % i, [train, "--data", bad, "--quiet"], "survived")
    # Damaged checkpoints are refused on --resume, never trained on.
    for i in range(max(4, args.mutations // 4)):
        damaged = "%s/damaged-%d" % (w, i)
        shutil.copytree(ck, damaged)
        os.remove(damaged + "/.lock") if os.path.exists(damaged + "/.lock") else None
        step = open(damaged + "/latest").read().strip()
        victim = os.path.join(damaged, step, sorted(os.listdir(os.path.join(damaged, step)))[i % 2])
        open(victim, "wb").write(mutate(open(victim, "rb").read(), rng))
        c.run("train: resume a damaged checkpoint #%d" % i,
              run + ["--steps", "6", "--checkpoint-dir", damaged, "--resume"], "survived")
    # Signals: SIGKILL during checkpointing, then resume: same losses.
    kill_dir = w + "/killed"
    proc = subprocess.Popen(run + ["--steps", "400", "--checkpoint-dir", kill_dir,
                                   "--checkpoint-every", "1", "--log", w + "/killed.jsonl"])
    # Killed once it has committed a checkpoint (and is writing more): a
    # loaded machine may take seconds to get there.
    wait_for(kill_dir + "/latest")
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    c.run("train: resume after SIGKILL", run + ["--steps", "400", "--checkpoint-dir", kill_dir,
                                                "--resume", "--log", w + "/killed.jsonl"], "ok",
          check=lambda: same_losses(w + "/killed.jsonl", run, w))
    # Two runs on one checkpoint directory: the second stops at once.
    busy = w + "/busy"
    first = subprocess.Popen(run + ["--steps", "2000", "--checkpoint-dir", busy,
                                    "--checkpoint-every", "1"])
    wait_for(busy + "/latest")
    c.run("train: second run on a locked checkpoint dir",
          run + ["--steps", "1", "--checkpoint-dir", busy, "--resume"], "refused",
          r"another run")
    first.kill()
    first.wait()


def full_disk_cases(c, run, w):
    """A file system that is really full (a small tmpfs filled up), not a
    quota: checkpoints and logs fail with ENOSPC, the last good checkpoint
    survives and resumes once space is freed. Mounting needs root; without
    it the cases are reported skipped, not passed."""
    full = w + "/full"
    os.makedirs(full)
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", full],
                                 capture_output=True).returncode == 0
    except OSError:  # no mount command
        mounted = False
    if not mounted:
        print("skip train: full tmpfs (mounting a tmpfs needs root and mount(8))")
        return
    try:
        ck = full + "/ck"
        c.run("train: checkpoint on a tmpfs", run + ["--steps", "2", "--checkpoint-dir", ck],
              "ok")
        good = digest(ck + "/step-2")
        # Fill what is left.
        with open(full + "/filler", "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError:
                pass
        c.run("train: checkpoint on a full disk", run + ["--steps", "4", "--checkpoint-dir", ck,
                                                         "--resume"],
              "refused", r"No space left on device",
              check=lambda: None if open(ck + "/latest").read().strip() == "step-2" and
              digest(ck + "/step-2") == good else "the last good checkpoint is gone")
        c.run("train: log on a full disk", run + ["--steps", "1", "--log", full + "/log.jsonl"],
              "refused", r"log.*No space left on device")
        os.remove(full + "/filler")
        c.run("train: resume after space is freed", run + ["--steps", "4", "--checkpoint-dir",
                                                           ck, "--resume"],
              "ok", check=lambda: None if open(ck + "/latest").read().strip() == "step-4"
              else "no step-4 checkpoint")
    finally:
        try:
            subprocess.run(["umount", full], capture_output=True)
        except OSError:
            pass


def wait_for(path, seconds=60):
    """Waits until `path` exists (a program has got that far)."""
    deadline = time.time() + seconds
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.02)


def same_losses(log, run, w):
    """Every logged step's loss equals the uninterrupted run's, bitwise."""
    reference = w + "/uninterrupted.jsonl"
    subprocess.run(run + ["--steps", "400", "--log", reference], check=True)
    want = {r["step"]: r["loss"] for r in map(json.loads, open(reference))}
    lines = open(log).read().splitlines()
    if len(lines) < 400:
        return "the resumed log has %d lines, fewer than the 400 steps" % len(lines)
    for line in lines:
        r = json.loads(line)
        if want.get(r["step"]) != r["loss"]:
            return "step %d: loss %r, uninterrupted %r" % (r["step"], r["loss"], want.get(r["step"]))
    return None


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--cleave", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--mutations", type=int, default=24)
    p.add_argument("--timeout", type=int, default=120)
    args = p.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    models = os.path.join(args.work, "models")
    os.makedirs(models)
    onnx.save(parser.parse_model(TINY), os.path.join(models, "tiny.onnx"))
    corpus = Corpus(args.cleave, args.work, args.timeout)
    compile_cases(corpus, models)
    runtime_cases(corpus, models)
    failed = [name for name, problem in corpus.results if problem]
    print("fault corpus: %d cases, %d failed" % (len(corpus.results), len(failed)))
    sys.exit(1 if failed else 0)
