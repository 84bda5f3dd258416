"""Rewrites the calibration probe's JSON (stdin to stdout) without its
field sys.argv[1] (link_rounds, conv_gflops), as a probe from another
build might print it: `cleave calibrate` must refuse it with a message,
not write a file."""
import json
import sys

result = json.loads(sys.stdin.read())
del result[sys.argv[1]]
print(json.dumps(result))
