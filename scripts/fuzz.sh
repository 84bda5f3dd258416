#!/usr/bin/env bash
# Builds the libFuzzer target for the .npy/checkpoint reader
# (fuzz/NpyFuzzer.cpp with runtime/Npy.cpp only, under AddressSanitizer and
# UndefinedBehaviorSanitizer) with clang, and runs it on the seed corpus in
# fuzz/corpus/npy. Not part of the test suite's run (it needs clang);
# test/fuzz/npy-fuzzer.test builds it and replays the seeds where clang is.
#
#   scripts/fuzz.sh [--build-dir DIR] [SECONDS]
#
# SECONDS (default 60) is how long to fuzz; 0 only replays the corpus.
# The build and the growing corpus live in DIR (default build-fuzz/); a
# finding is written there as crash-*/leak-*/timeout-* and the script fails.
# Install clang with: apt-get install -y clang-22 libclang-rt-22-dev
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build-fuzz"
seconds=60
while (($#)); do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) seconds=$1; shift ;;
  esac
done
if [[ ! $seconds =~ ^[0-9]+$ ]]; then
  echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2
  exit 1
fi

cxx=$(command -v clang++-22 || command -v clang++ || true)
if [[ -z $cxx ]]; then
  echo "fuzz.sh: no clang++; install it with apt-get install -y clang-22 libclang-rt-22-dev" >&2
  exit 1
fi

mkdir -p "$build_dir/corpus"
fuzzer="$build_dir/npy-fuzzer"
"$cxx" -std=c++17 -g -O1 -I"$root" \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  "$root/fuzz/NpyFuzzer.cpp" "$root/runtime/Npy.cpp" -o "$fuzzer"

# New inputs go to the first directory, so the committed seeds stay as
# they are. Inputs are small: a header is at most a few hundred bytes. One
# input takes microseconds; the timeout is wall-clock time, generous for a
# fuzzer run at nice 19 beside builds.
args=(-dict="$root/fuzz/npy.dict" -max_len=4096 -timeout=120
      -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$build_dir/")
if ((seconds == 0)); then
  args+=(-runs=0)
else
  args+=(-max_total_time="$seconds")
fi
exec "$fuzzer" "${args[@]}" "$build_dir/corpus" "$root/fuzz/corpus/npy"
