#!/usr/bin/env bash
# Installs what is missing, builds, and runs Cleave's whole test suite (lit:
# dialect, importer, ONNX backend node tests, C++ unit tests). The last line
# is the summary: "N passed, N failed".
#
#   scripts/test.sh              # everything
#   scripts/test.sh --filter gpt # a subset (lit's --filter)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-"$root/build"}
"$root/scripts/setup.sh"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
/usr/lib/llvm-22/bin/lit -sv "$build_dir/test" "$@" | tee "$log" || status=$?

count() { sed -n "s/^ *$1 *: *\([0-9]*\).*/\1/p" "$log" | head -n 1; }
passed=$(count Passed)
failed=$(( $(count Failed || true) + $(count "Unexpectedly Passed" || true) + 0 ))
skipped=$(( $(count Unsupported || true) + $(count "Expectedly Failed" || true) + 0 ))
echo "${passed:-0} passed, ${failed} failed, ${skipped} skipped"
exit "$status"
