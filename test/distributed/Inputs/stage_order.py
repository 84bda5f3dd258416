"""Checks the order in which each pipeline stage runs its micro-batches in
a program compiled with --emit=mlir against a schedule's formula, written
here independently of the compiler (Megatron-LM's order).

  stage_order.py STEP.mlir --schedule gpipe|1f1b|interleaved --stages P
      --microbatches M [--virtual-stages V]

Each stage's micro-batch ops (cleave.microbatch; not those computed from
the data alone) are read in program order and collapsed into runs of one micro-batch; the expected units (forward or
backward pass of a micro-batch through a chunk) are collapsed the same way
(adjacent units of one micro-batch form one run, since the IR does not say
which pass an op belongs to). Prints one line per stage and OK or FAIL.
"""
import argparse
import re
import sys


def expected(schedule, p, v, m, s):
    if schedule == "gpipe":
        units = [(mb, "F") for mb in range(m)] + [(mb, "B") for mb in range(m)]
    else:
        def unit(k, kind):
            mb = k if v == 1 else (k // (p * v)) * p + k % p
            return (mb, kind)
        total = m * v
        warmup = p - 1 - s if schedule == "1f1b" else (p - 1 - s) * 2 + (v - 1) * p
        warmup = min(warmup, total)
        units = [unit(k, "F") for k in range(warmup)]
        for k in range(total - warmup):
            units += [unit(warmup + k, "F"), unit(k, "B")]
        units += [unit(k, "B") for k in range(total - warmup, total)]
    runs = []
    for mb, _ in units:
        if not runs or runs[-1] != mb:
            runs.append(mb)
    return runs


def main():
    a = argparse.ArgumentParser()
    a.add_argument("mlir")
    a.add_argument("--schedule", required=True)
    a.add_argument("--stages", type=int, required=True)
    a.add_argument("--microbatches", type=int, required=True)
    a.add_argument("--virtual-stages", type=int, default=1)
    o = a.parse_args()
    found = {}
    text = open(o.mlir).read()
    # Values computed from the data alone (a loss's sample count) run
    # wherever they are first needed, outside the passes: skip them.
    signature = re.search(r"func\.func @\w+\((.*?)\) ->", text).group(1)
    data = {"%" + arg.split(":")[0] for arg in re.split(r"%(?=arg\d+:)", signature)
            if "cleave.input" in arg}
    for line in text.splitlines():
        # One result (%x, %x:2) or several (%loss, %log_prob).
        define = re.match(r"\s*(%[\w]+(?::\d+)?(?:, %[\w]+)*) = [\w.]+ (.*)", line)
        if not define:
            continue
        results = re.findall(r"%[\w]+", define.group(1))
        operands = re.findall(r"%[\w]+", define.group(2).split("{")[0])
        if "cleave.constant" in line or (operands and all(v in data for v in operands)):
            data.update(results)
            continue
        stage = re.search(r"cleave\.stage = (\d+)", line)
        mb = re.search(r"cleave\.microbatch = array<i64: (\d+)", line)
        if stage and mb:
            runs = found.setdefault(int(stage.group(1)), [])
            if not runs or runs[-1] != int(mb.group(1)):
                runs.append(int(mb.group(1)))
    ok = True
    for s in range(o.stages):
        want = expected(o.schedule, o.stages, o.virtual_stages, o.microbatches, s)
        # The run order of the forward and backward passes; ops after the
        # last backward pass (data-only pieces run where needed) may follow.
        got = found.get(s, [])
        good = got[:len(want)] == want
        print(f"{'OK  ' if good else 'FAIL'} stage {s}: {got[:len(want)]}"
              + ("" if good else f", expected {want}"))
        ok &= good
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
