"""Rewrites the calibration probe's JSON (stdin to stdout) as a probe from
another build, or one measured while the machine's load changed, might
print it:

  edit_probe.py drop FIELD          without FIELD (link_rounds, conv_gflops):
                                    `cleave calibrate` must refuse it with a
                                    message, not write a file;
  edit_probe.py scale FIELD FACTOR  every number of the object FIELD (and
                                    of the objects in it) times FACTOR
                                    (conv_gflops 100: convolutions far
                                    faster than the GEMM).

The library memory probe's result (`--library-memory`: library_bytes
alone) passes unchanged, unless FIELD is library_bytes."""
import json
import sys

result = json.loads(sys.stdin.read())
if sys.argv[2] not in result:
    pass
elif sys.argv[1] == "drop":
    del result[sys.argv[2]]
else:
    field, factor = sys.argv[2], float(sys.argv[3])
    def scaled(value):
        if isinstance(value, dict):
            return {key: scaled(inner) for key, inner in value.items()}
        return value * factor
    result[field] = scaled(result[field])
print(json.dumps(result))
