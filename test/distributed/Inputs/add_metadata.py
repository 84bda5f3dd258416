#!/usr/bin/python3
"""Stores sharding hints in an ONNX model's metadata, as `cleave annotate`
will (that command does not exist yet).

  /usr/bin/python3 add_metadata.py IN.onnx OUT.onnx 'GLOB=[d0,...]' ...

Writes IN.onnx (or the ONNX text IN.onnxtxt) to OUT.onnx with the
metadata_props key `cleave.sharding_hints` set to the hints, one per line
(replacing any hints stored there before; other metadata is kept).
"""

import sys

import onnx
import onnx.parser

KEY = "cleave.sharding_hints"


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src, dst, hints = argv[0], argv[1], argv[2:]
    if src.endswith(".onnxtxt"):
        with open(src) as f:
            model = onnx.parser.parse_model(f.read())
    else:
        model = onnx.load(src)
    props = {p.key: p.value for p in model.metadata_props}
    props[KEY] = "\n".join(hints)
    onnx.helper.set_model_props(model, props)
    onnx.save(model, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
