"""Checks a pipelined plan without micro-batches (`cleave plan --json`,
one plan) against the step its stages run one after another: every op of
every stage in turn (the compute spans of the plan's own timeline,
schedule[]) plus each hand-over once, timed from the cluster file's
numbers (hand_off_us + latency_us + bytes / (bandwidth_gbs x network
efficiency), the intra-node link) for the bytes each stage sends
(collectives[]). Prints the numbers, then OK or WRONG (beyond 1e-9
relative).

usage: check_pipeline_step.py PLAN.json CLUSTER.yaml
"""

import json
import sys

import yaml


def main():
    plan = json.load(open(sys.argv[1]))["plans"][0]
    cluster = yaml.safe_load(open(sys.argv[2]))
    link = cluster["intra_node"]
    efficiency = cluster.get("efficiency", {}).get("network", 1)
    hand_off = cluster["device"].get("hand_off_us", 0)
    compute = sum(s["end_ms"] - s["start_ms"] for s in plan["schedule"]
                  if s["kind"] in ("forward", "backward", "update"))
    hand_overs = 0.0
    for group in plan["collectives"]:
        if group["kind"] != "send_recv" or not group["bytes"]:
            continue
        # Each stage sends one hand-over (its activations forward, or the
        # gradient back).
        us = hand_off + link["latency_us"] + group["bytes"] / (
            link["bandwidth_gbs"] * 1e9 * efficiency) * 1e6
        print(f"stage {group['stage']} sends {group['bytes']} bytes: "
              f"{us:.4f} us")
        hand_overs += us / 1e3
    predicted = plan["predicted"]
    expected = compute + hand_overs
    step = predicted["step_ms"]
    print(f"ops {compute:.6f} ms + hand-overs {hand_overs:.6f} ms = "
          f"{expected:.6f} ms; predicted step {step:.6f} ms "
          f"(compute {predicted['compute_ms']:.6f}, exposed "
          f"{predicted['exposed_comm_ms']:.6f}, bubble "
          f"{predicted['bubble_ms']:.6f})")
    parts = (predicted["compute_ms"] + predicted["exposed_comm_ms"] +
             predicted["bubble_ms"])
    ok = abs(step - expected) <= 1e-9 * expected and \
        abs(parts - step) <= 1e-9 * step
    print("OK" if ok else "WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
