"""Rewrites the calibration probe's JSON (stdin to stdout) without its
link rounds, as a probe from another build might print it: `cleave
calibrate` must refuse it with a message, not write a file."""
import json
import sys

result = json.loads(sys.stdin.read())
del result["link_rounds"]
print(json.dumps(result))
