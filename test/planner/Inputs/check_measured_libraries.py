"""The libraries' own memory against the resident set measured.

Plans MODEL on one rank with a calibrated cluster file (its
onednn_primitive_bytes; MPI's memory counts only with more than one
rank), compiles the plan, runs it (--print-memory-peak, the file's threads)
and compares what the plan says the rank needs (plan, workspaces, inputs,
BLAS packing, libraries) with the measured rise of its resident set: within
--within of it, with and without the libraries' part.

usage: check_measured_libraries.py MODEL CLUSTER.yaml OUTDIR BATCH
                                   [--within F]
"""

import re
import sys

from measure_one_rank import plan_and_measure, within_option


def main():
    model, cluster, out, batch = sys.argv[1:5]
    within = within_option(0.10)
    threads = re.search(r"^  threads: (\d+)", open(cluster).read(), re.M)
    predicted, _, rise, report = plan_and_measure(
        model, cluster, out, batch, threads.group(1) if threads else "1")
    primitives = re.search(r"oneDNN primitives (\d+)", report)
    needed = predicted["needed_bytes_per_rank"]
    libraries = predicted["library_bytes_per_rank"]
    ratio, without = needed / rise, (needed - libraries) / rise
    print(f"primitives created: {primitives.group(1) if primitives else '?'}")
    print(f"libraries predicted {libraries}; needed {needed}, measured "
          f"{rise}: {ratio:.3f}, without the libraries {without:.3f}")
    print(f"within {within:.0%}:", abs(ratio - 1) <= within,
          f"; without the libraries within {within:.0%}:",
          abs(without - 1) <= within)


if __name__ == "__main__":
    main()
