"""Rewrites the calibration probe's JSON (stdin to stdout) as if the link
between ranks had slowed down in its second round, as a virtual machine's
does when its vCPUs move: `cleave calibrate` must warn and keep the
fastest round's numbers. (The library memory probe's result, which has
no link, passes unchanged.)"""
import json
import sys

result = json.loads(sys.stdin.read())
if "link_rounds" in result:
    fast = dict(result["link_rounds"][0])
    result["link_rounds"] = [
        fast, {"latency_us": fast["latency_us"] * 2.5,
               "bandwidth_gbs": fast["bandwidth_gbs"] / 2.5}, fast]
print(json.dumps(result))
