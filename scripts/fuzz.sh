#!/usr/bin/env bash
# Builds a libFuzzer target with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer and runs it on its seed corpus. Not part of
# the test suite's run (it needs clang); test/fuzz/ builds the targets and
# replays the seeds where clang is.
#
#   scripts/fuzz.sh [--target npy|importer] [--build-dir DIR]
#                   [--project-build DIR] [--jobs N] [SECONDS]
#
# Targets:
#   npy       the .npy/checkpoint reader (fuzz/NpyFuzzer.cpp with
#             runtime/Npy.cpp only; seeds in fuzz/corpus/npy); the default
#   importer  the ONNX importer (fuzz/ImporterFuzzer.cpp with frontend/ and
#             dialects/cleave/, linked to libMLIR, libLLVM and ONNX; seeds in
#             fuzz/corpus/onnx). It needs the dialect's tablegen output from
#             the project's CMake build (--project-build, default build/).
#
# SECONDS (default 60) is how long to fuzz; 0 only replays the corpus.
# The build and the growing corpus live in DIR (default build-fuzz/); a
# finding is written there as crash-*/leak-*/timeout-*/oom-* and the script
# fails. The importer's objects are rebuilt only when a source or header
# changed, N at a time (default 2).
# Install clang with: apt-get install -y clang-22 libclang-rt-22-dev
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=npy
build_dir="$root/build-fuzz"
project_build="$root/build"
jobs=2
seconds=60
while (($#)); do
  case $1 in
    --target) target=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --project-build) project_build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) seconds=$1; shift ;;
  esac
done
if [[ $target != npy && $target != importer ]]; then
  echo "fuzz.sh: --target is npy or importer, not '$target'" >&2
  exit 1
fi
if [[ ! $seconds =~ ^[0-9]+$ ]]; then
  echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2
  exit 1
fi
if [[ ! $jobs =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: --jobs must be a positive number, not '$jobs'" >&2
  exit 1
fi

cxx=$(command -v clang++-22 || command -v clang++ || true)
if [[ -z $cxx ]]; then
  echo "fuzz.sh: no clang++; install it with apt-get install -y clang-22 libclang-rt-22-dev" >&2
  exit 1
fi
mkdir -p "$build_dir"

# Compiles the importer's sources into $build_dir/importer-obj and links
# $build_dir/importer-fuzzer. Each object is rebuilt when its source or a
# header it includes (its -MMD dependency file) is newer, or the flags
# changed.
build_importer() {
  if [[ ! -f $project_build/dialects/cleave/CleaveOps.h.inc ]]; then
    echo "fuzz.sh: no tablegen output in '$project_build'; configure and build" \
      "the project first (cmake -G Ninja -B build ... && ninja -C build cleave)" >&2
    exit 1
  fi
  # The LLVM/MLIR the project was configured with.
  local llvm=/usr/lib/llvm-22 mlir_dir
  mlir_dir=$(sed -n 's/^MLIR_DIR:[A-Z]*=//p' "$project_build/CMakeCache.txt" 2>/dev/null || true)
  if [[ -n $mlir_dir ]]; then
    llvm=$(cd "$mlir_dir/../../.." && pwd)
  fi
  # No NDEBUG: the project's asserts are findings too. ONNX's code needs
  # exceptions (clang's default). Line tables are enough for stack traces.
  local flags=(-std=c++17 -gline-tables-only -O1 -I"$root" -I"$project_build"
               -isystem "$llvm/include" -DONNX_NAMESPACE=onnx -DONNX_ML=1
               -fsanitize=address,undefined -fno-sanitize-recover=all)
  local obj_dir="$build_dir/importer-obj"
  mkdir -p "$obj_dir"
  local stamp="$obj_dir/flags"
  if [[ ! -f $stamp || $(<"$stamp") != "$cxx ${flags[*]}" ]]; then
    rm -f "$obj_dir"/*.o "$obj_dir"/*.d
    printf '%s\n' "$cxx ${flags[*]}" >"$stamp"
  fi

  local sources=("$root"/frontend/*.cpp "$root"/dialects/cleave/*.cpp
                 "$root/fuzz/ImporterFuzzer.cpp")
  local objects=() running=0 src obj
  for src in "${sources[@]}"; do
    obj="$obj_dir/$(basename "$(dirname "$src")")-$(basename "$src" .cpp).o"
    objects+=("$obj")
    if [[ -f $obj ]] && ! stale "$obj"; then
      continue
    fi
    echo "fuzz.sh: compiling ${src#"$root"/}"
    local coverage=-fsanitize=fuzzer-no-link
    [[ $src == */fuzz/* ]] && coverage=-fsanitize=fuzzer
    "$cxx" "${flags[@]}" "$coverage" -MMD -MF "$obj.d" -c "$src" -o "$obj" &
    if ((++running >= jobs)); then
      wait -n
      ((running--))
    fi
  done
  while ((running)); do
    wait -n
    ((running--))
  done
  local fuzzer="$build_dir/importer-fuzzer" relink=0
  for obj in "${objects[@]}"; do
    [[ $obj -nt $fuzzer ]] && relink=1
  done
  if ((relink)) || [[ ! -f $fuzzer ]]; then
    "$cxx" "${flags[@]}" -fsanitize=fuzzer "${objects[@]}" \
      -L"$llvm/lib" -Wl,-rpath,"$llvm/lib" -lMLIR -lLLVM \
      -lonnx -lonnx_proto -lprotobuf -o "$fuzzer"
  fi
}

# Whether the object $1 is older than a file its dependency file lists.
stale() {
  local dep
  [[ -f $1.d ]] || return 0
  for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$1.d"); do
    [[ $dep -nt $1 ]] && return 0
  done
  return 1
}

# New inputs go to the first corpus directory, so the committed seeds stay
# as they are. The timeout is wall-clock time per input, generous for a
# fuzzer run at nice 19 beside builds.
args=(-timeout=120 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$build_dir/")
case $target in
  npy)
    fuzzer="$build_dir/npy-fuzzer"
    "$cxx" -std=c++17 -g -O1 -I"$root" \
      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
      "$root/fuzz/NpyFuzzer.cpp" "$root/runtime/Npy.cpp" -o "$fuzzer"
    # A header is at most a few hundred bytes; one input takes microseconds.
    args+=(-dict="$root/fuzz/npy.dict" -max_len=4096)
    corpus=("$build_dir/corpus" "$root/fuzz/corpus/npy")
    ;;
  importer)
    fuzzer="$build_dir/importer-fuzzer"
    build_importer
    # The seeds are at most a few KB; one input takes about a millisecond.
    args+=(-dict="$root/fuzz/onnx.dict" -max_len=16384)
    corpus=("$build_dir/corpus-importer" "$root/fuzz/corpus/onnx")
    ;;
esac
mkdir -p "${corpus[0]}"
if ((seconds == 0)); then
  args+=(-runs=0)
else
  args+=(-max_total_time="$seconds")
fi
exec "$fuzzer" "${args[@]}" "${corpus[@]}"
