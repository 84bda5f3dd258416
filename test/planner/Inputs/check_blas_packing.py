"""OpenBLAS's packing buffers in `cleave plan`'s memory, against the
resident set measured.

`cleave-calibrate-probe --blas-packing` fits OpenBLAS's blocking on this
machine (runtime/BlasPacking.h) and checks it on five shapes the fit did
not see; this script requires each within two pages of the pages measured.
It then writes the blocking into a cpu cluster file, plans MODEL on one
rank with it, compiles the plan, runs it (--print-memory-peak, one
thread) and compares what the plan says a rank needs (plan, workspaces,
inputs, packing) with the measured rise of the resident set: within
--within of it, and the prediction without the packing outside that.

Where transparent huge pages are always on, OpenBLAS's buffer takes them
unasked, the pages no longer follow the model and the probe must say so
(`cleave calibrate` then leaves the packing out).

usage: check_blas_packing.py MODEL CLUSTER.yaml OUTDIR BATCH [--within F]
"""

import json
import os
import sys

from measure_one_rank import plan_and_measure, run, within_option

PAGE = 4096


def main():
    model, cluster, out, batch = sys.argv[1:5]
    within = within_option(0.05)
    os.makedirs(out, exist_ok=True)
    probe = json.loads(run(["cleave-calibrate-probe", "--blas-packing"]))
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            huge = "[always]" in f.read()
    except OSError:
        huge = False
    if huge:
        print("transparent huge pages always on; probe:", probe)
        print("OK" if "error" in probe else "FAILED: the probe fitted pages "
              "of huge pages")
        return
    if "error" in probe:
        sys.exit(f"FAILED: the probe fitted no blocking: {probe['error']}")
    print(f"blocking: panel rows {probe['panel_rows']}, depth "
          f"{probe['panel_depth']}, narrow columns {probe['narrow_columns']}, "
          f"small product {probe['small_product']}")
    far = [c for c in probe["checks"] if abs(c[0] - c[1]) > 2 * PAGE]
    print(f"checks: {len(probe['checks'])}, within two pages: "
          f"{len(probe['checks']) - len(far)}")
    with open(cluster) as f:
        text = f.read()
    section = "device:\n  blas_packing: {" + ", ".join(
        f"{k}: {probe[k]}" for k in ("panel_rows", "panel_depth",
                                     "narrow_columns", "small_product")) + "}"
    text = text.replace("device:", section, 1)
    with_packing = os.path.join(out, "cluster.yaml")
    with open(with_packing, "w") as f:
        f.write(text)
    predicted, table, rise, _ = plan_and_measure(model, with_packing,
                                                 os.path.join(out, "run"),
                                                 batch)
    print("table says:", "BLAS packing" in table)
    packing = predicted["blas_packing_bytes_per_rank"]
    needed = predicted["needed_bytes_per_rank"]
    ratio, without = needed / rise, (needed - packing) / rise
    print(f"packing predicted {packing}; needed {needed}, measured {rise}: "
          f"{ratio:.3f}, without the packing {without:.3f}")
    print("packing predicted:", packing > 0)
    print("within:", abs(ratio - 1) <= within,
          "; without the packing within:", abs(without - 1) <= within)
    print("OK" if not far and packing > 0 and abs(ratio - 1) <= within
          and abs(without - 1) > within else "FAILED")


if __name__ == "__main__":
    main()
