#!/usr/bin/python3
"""Checks a bf16 prediction (cleave plan --precision bf16) against the fp32
one of the same layout: the byte formula of mixed precision (cost model:
predictStep). Prints one line per check; exits 1 on a mismatch."""

import json
import sys


def only_plan(path):
    data = json.load(open(path))
    plans = data["plans"] + data["rejected"]
    assert len(plans) == 1, f"{path}: {len(plans)} layouts, expected 1"
    return data, plans[0]


def main():
    fp32_data, fp32 = only_plan(sys.argv[1])
    bf16_data, bf16 = only_plan(sys.argv[2])
    a, b = fp32["predicted"], bf16["predicted"]
    failures = []

    def check(what, ok):
        print(f"{what}: {'ok' if ok else 'WRONG'}")
        if not ok:
            failures.append(what)

    check("precision names", fp32_data["precision"] == "fp32" and
          bf16_data["precision"] == "bf16")
    check("scratch halves", b["scratch_bytes_per_rank"] * 2 == a["scratch_bytes_per_rank"])
    check("bytes sent halve", b["comm_bytes_per_rank"] * 2 == a["comm_bytes_per_rank"])
    # Per stage: a 2-byte copy of each parameter, its 4-byte fp32 master
    # with the (fp32) optimizer state.
    for s, (m32, m16) in enumerate(zip(fp32["memory_by_stage"], bf16["memory_by_stage"])):
        check(f"stage {s} parameters: 2 bytes each",
              m16["parameters"] * 2 == m32["parameters"])
        check(f"stage {s} master weights and state",
              m16["optimizer_state"] == m32["optimizer_state"] + m32["parameters"])
    # AdamW: 2 (copy) + 4 (master) + 8 (two moments) bytes held per parameter.
    params = sum(m["parameters"] for m in fp32["memory_by_stage"]) // 4
    held = sum(m["parameters"] + m["optimizer_state"] for m in bf16["memory_by_stage"])
    check("AdamW holds 14 bytes a parameter", held == 14 * params)
    # Each rank allocates its own stage's scratch: the peak is the stage
    # holding the most in all.
    check("peak = the largest stage's held + scratch",
          b["peak_bytes_per_rank"] == max(sum(m[k] for k in ("parameters", "optimizer_state", "gradients", "activations"))
                                          for m in bf16["memory_by_stage"]))
    check("faster", b["step_ms"] < a["step_ms"])
    check("same operations", b["flops_per_rank"] == a["flops_per_rank"])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
