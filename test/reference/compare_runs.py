#!/usr/bin/python3
"""Compares a distributed Cleave run with a single-rank Cleave run.

  /usr/bin/python3 test/reference/compare_runs.py \\
      --losses DIST.jsonl --reference-losses SINGLE.jsonl \\
      --params DISTPARAMS --reference-params SINGLEPARAMS \\
      --local LOCALDIR [--replicated GLOB ...]
      [--mesh AXIS=SIZE,... --replicated-over AXIS | --stages AXIS]
      [--loss-rtol 1e-5] [--param-rtol 1e-4] [--param-atol 0]

Every group of flags is optional, but at least one must be given. The
checks:

  losses      (--losses, --reference-losses) both logs hold the same steps,
              each once, and every step has
              |ours - ref| <= loss_rtol * |ref|.
  params      (--params, --reference-params) both directories hold the same
              <name>.npy files (trained parameters and optimizer states),
              each of the same shape and dtype, and for each tensor
              max|ours - ref| <= max(param_rtol * max(max|ref|, tiny),
                                     param_atol)
              (tiny: the smallest normal float32). The tolerance is relative
              to the tensor's largest element: a distributed run reduces
              gradients in another order than a single rank, so the two
              differ by float32 rounding, which grows over the steps.
              param_atol (default 0) is for tensors that hold nothing but
              rounding noise, such as the momentum buffer of a conv bias
              that feeds a training-mode BatchNorm (its exact gradient is
              0), where no relative bound can hold.
  replicated  (--local DIR, as written by the program's --dump-local: one
              DIR/rank<R>/ per rank, each holding that rank's block of every
              parameter and state) every rank holds the same set of names;
              a tensor whose block has the same shape on every rank, and the
              shape of the gathered tensor (its file in --params), is whole
              on every rank, and those copies must be bitwise identical
              across ranks (the ranks run the same update on the same
              reduced gradient: any difference means the replicas drift
              apart). Each --replicated GLOB must match at least one tensor,
              and every tensor it matches must be whole on every rank.
              Without --params the gathered shape is taken from rank 0.
              With --mesh (the program's mesh; ranks are numbered row-major
              over its axes) and --replicated-over AXIS: every tensor is
              replicated over AXIS, so ranks whose mesh coordinates differ
              only along AXIS must hold bitwise identical blocks (for
              example the data-parallel copies of tensor-parallel shards).
  stages      (--local DIR, --mesh and --stages AXIS, for a program split
              into pipeline stages along AXIS) every tensor is held by
              exactly the ranks of one stage (one coordinate along AXIS):
              whole (the shape of its file in --params, when given) and
              bitwise identical on all of them, or (with --params) split
              over the other axes, each rank's block bitwise a tile of the
              gathered tensor and every tile held; every gathered tensor is
              held by some stage.

Prints one line per check (OK or FAIL with the step or tensor and the
numbers), then PASS or FAILED; exits 1 if any check fails, 2 on unusable
arguments.
"""

import argparse
import fnmatch
import json
import math
import os
import re
import sys

import numpy as np

TINY = float(np.finfo(np.float32).tiny)


def read_log(path):
    """Returns ({step: loss}, [problems])."""
    losses, problems = {}, []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                step, loss = rec["step"], float(rec["loss"])
            except (ValueError, KeyError, TypeError) as e:
                problems.append(f"{path}:{lineno}: unreadable record ({e})")
                continue
            if not isinstance(step, int) or isinstance(step, bool):
                problems.append(f"{path}:{lineno}: step {step!r} is not an "
                                f"integer")
            elif step in losses:
                problems.append(f"{path}:{lineno}: step {step} logged twice")
            else:
                losses[step] = loss
    return losses, problems


def check_losses(path, ref_path, rtol):
    ours, problems = read_log(path)
    ref, ref_problems = read_log(ref_path)
    ok = not problems and not ref_problems
    for p in problems + ref_problems:
        print(f"FAIL losses: {p}")
    if sorted(ours) != sorted(ref):
        only_ours = sorted(set(ours) - set(ref))
        only_ref = sorted(set(ref) - set(ours))
        print(f"FAIL losses: {len(ours)} steps logged, reference "
              f"{len(ref)}; only ours: {only_ours[:10]}, only reference: "
              f"{only_ref[:10]}")
        ok = False
    common = sorted(set(ours) & set(ref))
    if not common:
        print("FAIL losses: nothing to compare")
        return False
    worst = None  # (excess over the tolerance, step, |diff|)
    failed = []
    for k in common:
        a, b = ours[k], ref[k]
        diff = abs(a - b) if math.isfinite(a) else math.inf
        allowed = rtol * abs(b)
        excess = diff / allowed if allowed > 0 else (0 if diff == 0 else
                                                     math.inf)
        if worst is None or excess > worst[0]:
            worst = (excess, k, diff)
        if not diff <= allowed:
            failed.append(k)
    _, k, diff = worst
    b = ref[k]
    rel = diff / abs(b) if b != 0 else (0.0 if diff == 0 else math.inf)
    detail = (f"worst step {k}: ours {ours[k]!r}, reference {b!r}, |diff| "
              f"{diff:.3g}, relative {rel:.3g} (rtol {rtol:g})")
    if failed:
        print(f"FAIL losses: {len(failed)} of {len(common)} steps outside "
              f"rtol, first step {failed[0]}; {detail}")
        return False
    print(f"{'OK  ' if ok else 'FAIL'} losses: {len(common)} steps; {detail}")
    return ok


def npy_names(directory):
    return sorted(f[:-4] for f in os.listdir(directory) if f.endswith(".npy"))


def check_params(ours_dir, ref_dir, rtol, atol):
    ours_names, ref_names = npy_names(ours_dir), npy_names(ref_dir)
    ok = True
    if not ref_names:
        print(f"FAIL params: no <name>.npy in {ref_dir}")
        return False
    for name in sorted(set(ref_names) - set(ours_names)):
        print(f"FAIL param {name}: missing from {ours_dir}")
        ok = False
    for name in sorted(set(ours_names) - set(ref_names)):
        print(f"FAIL param {name}: missing from {ref_dir}")
        ok = False
    for name in sorted(set(ours_names) & set(ref_names)):
        ours = np.load(os.path.join(ours_dir, name + ".npy"))
        ref = np.load(os.path.join(ref_dir, name + ".npy"))
        if ours.shape != ref.shape or ours.dtype != ref.dtype:
            print(f"FAIL param {name}: {ours.dtype} {list(ours.shape)}, "
                  f"reference {ref.dtype} {list(ref.shape)}")
            ok = False
            continue
        ours64, ref64 = ours.astype(np.float64), ref.astype(np.float64)
        scale = max(float(np.max(np.abs(ref64), initial=0.0)), TINY)
        allowed = max(rtol * scale, atol)
        rule = (f"{rtol:g} x max|reference| {scale:.3g}"
                if rtol * scale >= atol else
                f"absolute {atol:g} (max|reference| {scale:.3g})")
        if not np.all(np.isfinite(ours64)):
            at = int(np.argmin(np.isfinite(ours64).reshape(-1)))
            diff = math.inf
        elif ours.size:
            diffs = np.abs(ours64 - ref64).reshape(-1)
            at = int(np.argmax(diffs))
            diff = float(diffs[at])
        else:
            at, diff = 0, 0.0
        where = np.unravel_index(at, ref.shape) if ref.size else ()
        where = "[" + ", ".join(str(int(i)) for i in where) + "]"
        detail = (f"max|diff| {diff:.3g} at {where}, allowed {allowed:.3g} = "
                  f"{rule}")
        if diff <= allowed:
            print(f"OK   param {name}: {detail}")
        else:
            print(f"FAIL param {name}: {detail}")
            ok = False
    return ok


def check_replicated(local_dir, gathered_dir, globs):
    ranks = {}
    for entry in os.listdir(local_dir):
        m = re.fullmatch(r"rank(\d+)", entry)
        if m and os.path.isdir(os.path.join(local_dir, entry)):
            ranks[int(m.group(1))] = os.path.join(local_dir, entry)
    if sorted(ranks) != list(range(len(ranks))) or len(ranks) < 2:
        print(f"FAIL replicated: {local_dir} holds rank directories "
              f"{sorted(ranks)}, expected rank0 .. rankN-1 with N >= 2")
        return False
    ok = True
    names = {r: set(npy_names(d)) for r, d in ranks.items()}
    common = set.intersection(*names.values())
    for r in sorted(ranks):
        if names[r] != common:
            print(f"FAIL replicated: rank {r} holds "
                  f"{sorted(names[r] - common)[:10]} that not every rank "
                  f"holds")
            ok = False
    if not common:
        print(f"FAIL replicated: no tensor in {local_dir}/rank*/")
        return False
    whole, split = [], []
    for name in sorted(common):
        blocks = [np.load(os.path.join(ranks[r], name + ".npy"))
                  for r in sorted(ranks)]
        if gathered_dir is not None:
            path = os.path.join(gathered_dir, name + ".npy")
            if not os.path.exists(path):
                print(f"FAIL replicated {name}: no gathered {path}")
                ok = False
                continue
            shape = np.load(path, mmap_mode="r").shape
        else:
            shape = blocks[0].shape
        if any(b.shape != shape for b in blocks):
            split.append(name)
            continue
        whole.append(name)
        differing = [r for r, b in zip(sorted(ranks), blocks)
                     if b.dtype != blocks[0].dtype
                     or b.tobytes() != blocks[0].tobytes()]
        if differing:
            b = blocks[differing[0]].astype(np.float64)
            diff = float(np.max(np.abs(b - blocks[0].astype(np.float64))))
            print(f"FAIL replicated {name}: whole on every rank, but ranks "
                  f"{differing} differ from rank 0 (max|diff| {diff:.3g})")
            ok = False
    for glob in globs:
        matched = [n for n in sorted(common) if fnmatch.fnmatchcase(n, glob)]
        if not matched:
            print(f"FAIL replicated: --replicated '{glob}' matches no tensor")
            ok = False
        not_whole = [n for n in matched if n in split]
        if not_whole:
            print(f"FAIL replicated: --replicated '{glob}' matches "
                  f"{not_whole[:10]}, which are not whole on every rank")
            ok = False
    if ok:
        print(f"OK   replicated: {len(whole)} of {len(common)} tensors whole "
              f"on all {len(ranks)} ranks, bitwise identical; {len(split)} "
              f"split: {', '.join(split) if split else 'none'}")
    return ok


def parse_mesh(text):
    axes = []
    for item in text.split(","):
        name, _, size = item.partition("=")
        if not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise ValueError(f"--mesh '{text}' is not AXIS=SIZE,...")
        axes.append((name.strip(), int(size)))
    return axes


def mesh_rank_dirs(local_dir, mesh, axis, check):
    """The mesh's axis names and sizes and the rank directories of
    local_dir, one per rank of the mesh; None (after a FAIL line naming
    `check`) when axis is not a mesh axis or the directories differ."""
    names = [n for n, _ in mesh]
    if axis not in names:
        print(f"FAIL {check}: {axis} is not an axis of the mesh {names}")
        return None
    sizes = [s for _, s in mesh]
    nranks = int(np.prod(sizes))
    dirs = [os.path.join(local_dir, f"rank{r}") for r in range(nranks)]
    missing = [d for d in dirs if not os.path.isdir(d)]
    if missing:
        print(f"FAIL {check}: the mesh has {nranks} ranks but {missing[0]} "
              f"is missing")
        return None
    if os.path.isdir(os.path.join(local_dir, f"rank{nranks}")):
        print(f"FAIL {check}: more than {nranks} rank directories in "
              f"{local_dir}")
        return None
    return names, sizes, dirs


def check_replicated_over(local_dir, mesh, axis):
    found = mesh_rank_dirs(local_dir, mesh, axis, f"replicated over {axis}")
    if found is None:
        return False
    names, sizes, dirs = found
    nranks = len(dirs)
    # Ranks grouped by their coordinates on every other axis.
    at = names.index(axis)
    groups = {}
    for r in range(nranks):
        coords = list(np.unravel_index(r, sizes))
        del coords[at]
        groups.setdefault(tuple(int(c) for c in coords), []).append(r)
    tensors = sorted(set.intersection(*(set(npy_names(d)) for d in dirs)))
    if not tensors:
        print(f"FAIL replicated over {axis}: no tensor in {local_dir}")
        return False
    ok = True
    for name in tensors:
        for group in groups.values():
            blocks = [np.load(os.path.join(dirs[r], name + ".npy"))
                      for r in group]
            differing = [r for r, b in zip(group, blocks)
                         if b.shape != blocks[0].shape
                         or b.dtype != blocks[0].dtype
                         or b.tobytes() != blocks[0].tobytes()]
            if differing:
                print(f"FAIL replicated over {axis} {name}: ranks "
                      f"{differing} differ from rank {group[0]}")
                ok = False
                break
    if ok:
        print(f"OK   replicated over {axis}: all {len(tensors)} tensors "
              f"bitwise identical within each of {len(groups)} groups of "
              f"{nranks // len(groups)} ranks")
    return ok


def check_tiles(blocks, whole):
    """None when every block is bitwise one tile of `whole` (cut in a grid
    of the block's shape) and every tile is some block; else what is
    wrong."""
    shape = blocks[0].shape
    if any(b.shape != shape for b in blocks) or len(shape) != whole.ndim or \
            any(w % b for w, b in zip(whole.shape, shape)):
        return (f"holds blocks of shapes {sorted({b.shape for b in blocks})}, "
                f"not tiles of the whole {whole.shape}")
    grid = [w // b for w, b in zip(whole.shape, shape)]
    tiles = {}
    for index in np.ndindex(*grid):
        cut = tuple(slice(i * b, (i + 1) * b) for i, b in zip(index, shape))
        tiles.setdefault(np.ascontiguousarray(whole[cut]).tobytes(),
                         []).append(index)
    seen = set()
    for b in blocks:
        if b.dtype != whole.dtype or b.tobytes() not in tiles:
            return f"holds a block {b.shape} that is no tile of the whole"
        seen.update(tiles[b.tobytes()])
    if len(seen) != int(np.prod(grid)):
        return (f"holds {len(seen)} of the {int(np.prod(grid))} tiles of "
                f"the whole {whole.shape}")
    return None


def check_stages(local_dir, gathered_dir, mesh, axis):
    found = mesh_rank_dirs(local_dir, mesh, axis, "stages")
    if found is None:
        return False
    names, sizes, dirs = found
    nranks = len(dirs)
    at = names.index(axis)
    stage_of = [int(np.unravel_index(r, sizes)[at]) for r in range(nranks)]
    held = {}
    for r, d in enumerate(dirs):
        for name in npy_names(d):
            held.setdefault(name, []).append(r)
    ok = True
    per_stage = [0] * sizes[at]
    split = []
    for name, ranks in sorted(held.items()):
        stages = sorted({stage_of[r] for r in ranks})
        expected = [r for r in range(nranks) if stage_of[r] == stages[0]]
        if len(stages) != 1 or ranks != expected:
            print(f"FAIL stages {name}: held by ranks {ranks} (stages "
                  f"{stages}), not by exactly the ranks of one stage")
            ok = False
            continue
        per_stage[stages[0]] += 1
        blocks = [np.load(os.path.join(dirs[r], name + ".npy"))
                  for r in ranks]
        if gathered_dir is not None:
            path = os.path.join(gathered_dir, name + ".npy")
            if not os.path.exists(path):
                print(f"FAIL stages {name}: no gathered {path}")
                ok = False
                continue
            whole = np.load(path)
            if blocks[0].shape != whole.shape:
                # Split within the stage (tensor parallel, ZeRO): every
                # rank's block is a tile of the gathered tensor, and the
                # stage's ranks hold every tile.
                problem = check_tiles(blocks, whole)
                if problem:
                    print(f"FAIL stages {name}: stage {stages[0]} {problem}")
                    ok = False
                else:
                    split.append(name)
                continue
        differing = [r for r, b in zip(ranks, blocks)
                     if b.shape != blocks[0].shape or b.dtype != blocks[0].dtype
                     or b.tobytes() != blocks[0].tobytes()]
        if differing:
            print(f"FAIL stages {name}: ranks {differing} differ from rank "
                  f"{ranks[0]}")
            ok = False
    if gathered_dir is not None:
        unheld = sorted(set(npy_names(gathered_dir)) - set(held))
        if unheld:
            print(f"FAIL stages: no rank holds {unheld[:10]}")
            ok = False
    if ok:
        counts = ", ".join(f"stage {s}: {n}" for s, n in enumerate(per_stage))
        if split:
            print(f"OK   stages: each of {len(held)} tensors on the ranks of "
                  f"one stage along {axis} ({counts}); {len(split)} split "
                  f"within their stage, every tile held, the rest whole and "
                  f"bitwise identical")
        else:
            print(f"OK   stages: each of {len(held)} tensors whole on the "
                  f"ranks of one stage along {axis}, bitwise identical "
                  f"({counts})")
    return ok


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--losses", help="the distributed run's LOG.jsonl")
    p.add_argument("--reference-losses", help="the single-rank LOG.jsonl")
    p.add_argument("--params", help="the distributed run's --dump-params")
    p.add_argument("--reference-params",
                   help="the single-rank run's --dump-params")
    p.add_argument("--local", help="the distributed run's --dump-local")
    p.add_argument("--replicated", nargs="+", default=[], metavar="GLOB",
                   help="tensors that must be whole on every rank")
    p.add_argument("--mesh", help="the program's mesh, AXIS=SIZE,...")
    p.add_argument("--replicated-over", metavar="AXIS",
                   help="a mesh axis every tensor is replicated over")
    p.add_argument("--stages", metavar="AXIS",
                   help="the pipeline axis: each tensor lives in one stage")
    p.add_argument("--loss-rtol", type=float, default=1e-5)
    p.add_argument("--param-rtol", type=float, default=1e-4)
    p.add_argument("--param-atol", type=float, default=0.0)
    opts = p.parse_args(argv)
    if (opts.losses is None) != (opts.reference_losses is None):
        p.error("--losses and --reference-losses go together")
    if (opts.reference_params is not None) and opts.params is None:
        p.error("--reference-params needs --params")
    if opts.replicated and opts.local is None:
        p.error("--replicated needs --local")
    if (opts.mesh is None) != (opts.replicated_over is None and
                               opts.stages is None) or \
            (opts.replicated_over is not None and opts.stages is not None):
        p.error("--mesh goes with one of --replicated-over and --stages")
    if opts.mesh is not None and opts.local is None:
        p.error("--replicated-over needs --local")
    mesh = None
    if opts.mesh is not None:
        try:
            mesh = parse_mesh(opts.mesh)
        except ValueError as e:
            p.error(str(e))
    if opts.losses is None and opts.reference_params is None and \
            opts.local is None:
        p.error("nothing to compare: give --losses, --reference-params or "
                "--local")
    for path in (opts.losses, opts.reference_losses, opts.params,
                 opts.reference_params, opts.local):
        if path is not None and not os.path.exists(path):
            print(f"error: {path} does not exist", file=sys.stderr)
            return 2

    ok = True
    if opts.losses is not None:
        ok = check_losses(opts.losses, opts.reference_losses,
                          opts.loss_rtol) and ok
    if opts.reference_params is not None:
        ok = check_params(opts.params, opts.reference_params,
                          opts.param_rtol, opts.param_atol) and ok
    if opts.stages is not None:
        ok = check_stages(opts.local, opts.params, mesh, opts.stages) and ok
    elif opts.local is not None:
        ok = check_replicated(opts.local, opts.params, opts.replicated) and ok
    if opts.replicated_over is not None:
        ok = check_replicated_over(opts.local, mesh,
                                   opts.replicated_over) and ok
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
