#!/usr/bin/env bash
# The main job on the bundled example: imports examples/gpt.onnx (a tiny
# GPT-2-style decoder exported from PyTorch with its training loss) and
# prints it in the cleave dialect. Extra arguments go to `cleave import`
# (for example --print-locations or -o gpt.mlir).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" >&2
exec "$root/build/bin/cleave" import "$root/examples/gpt.onnx" "$@"
