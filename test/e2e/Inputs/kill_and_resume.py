#!/usr/bin/python3
"""Kills a training program with SIGKILL once it has written a checkpoint
past --after steps, resumes it, and checks that every logged step's loss
equals the loss of an uninterrupted run (steps after the last checkpoint are
logged twice; both must match).

    kill_and_resume.py --train BIN --data DIR --steps N --every K --after A --workdir W
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    p = argparse.ArgumentParser()
    for flag in ("--train", "--data", "--workdir"):
        p.add_argument(flag, required=True)
    for flag in ("--steps", "--every", "--after"):
        p.add_argument(flag, type=int, required=True)
    a = p.parse_args()
    common = [a.train, "--data", a.data, "--steps", str(a.steps), "--quiet"]
    full, part = os.path.join(a.workdir, "full.jsonl"), os.path.join(a.workdir, "part.jsonl")
    ckpt = os.path.join(a.workdir, "ckpt")
    subprocess.run(common + ["--log", full], check=True)

    proc = subprocess.Popen(common + ["--log", part, "--checkpoint-dir", ckpt,
                                      "--checkpoint-every", str(a.every)])
    latest = os.path.join(ckpt, "latest")
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            with open(latest) as f:
                if int(f.read().strip()[len("step-"):]) >= a.after:
                    break
        except (OSError, ValueError):
            pass
        time.sleep(0.001)
    if proc.poll() is not None:
        sys.exit(f"the program finished (exit {proc.returncode}) before it could be killed; "
                 "raise --steps")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with open(latest) as f:
        killed_at = int(f.read().strip()[len("step-"):])
    subprocess.run(common + ["--log", part, "--checkpoint-dir", ckpt, "--resume"], check=True)

    reference = {e["step"]: e["loss"] for e in read_log(full)}
    seen = set()
    for entry in read_log(part):
        if entry["loss"] != reference[entry["step"]]:
            sys.exit(f"step {entry['step']}: resumed loss {entry['loss']} != "
                     f"uninterrupted {reference[entry['step']]}")
        seen.add(entry["step"])
    if seen != set(reference):
        sys.exit(f"steps missing after resume: {sorted(set(reference) - seen)[:10]}")
    print(f"killed after the checkpoint of step {killed_at} (of {a.steps}); "
          f"all {len(reference)} losses equal the uninterrupted run")


if __name__ == "__main__":
    main()
