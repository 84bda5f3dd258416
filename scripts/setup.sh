#!/usr/bin/env bash
# Installs Cleave's dependencies from Debian's packages, then configures and
# builds the project into build/. Idempotent: a machine that already has
# everything only runs an incremental build.
#
#   scripts/setup.sh            # install what is missing, configure, build
#   BUILD_DIR=out scripts/setup.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-"$root/build"}

packages=(
  # compiler infrastructure
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # ONNX (checker, shape inference, text parser) and the backend node tests
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  # runtime dependencies of generated programs
  libopenmpi-dev openmpi-bin libopenblas-dev
  # oneDNN: the cpu target's convolutions where it beats im2col + sgemm
  libdnnl-dev
  # COIN-OR CBC: the planner's intra-op ILP (found with pkg-config)
  coinor-libcbc-dev pkg-config
  # jemalloc: the cleave tool's allocator (the planner's search allocates
  # heavily)
  libjemalloc-dev
  # build speed
  cmake ninja-build ccache mold g++ libgtest-dev
  # references for tests: Debian's Python with onnx, numpy and torch
  python3 python3-onnx python3-numpy python3-torch python3-torchvision
  # the HTML report's browser test: headless Chromium, and PIL for its
  # screenshot
  chromium python3-pil
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

# onnxruntime for the tests that run exported models (npm; its install
# script would download a GPU build, which is not needed).
if [[ ! -d "$root/test/ort/node_modules/onnxruntime-node" ]]; then
  command -v npm >/dev/null || {
    sudo_cmd=()
    [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  }
  (cd "$root/test/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit \
     --no-fund >/dev/null)
fi

cmake_args=(
  -G Ninja
  -DCMAKE_BUILD_TYPE=Release
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
  -DCMAKE_C_COMPILER_LAUNCHER=ccache
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache
)
# The CUDA toolkit, where installed (not from Debian: /usr/local/cuda), adds
# the cuda target; nvcc need not be on PATH.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cmake_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S "$root" -B "$build_dir" "${cmake_args[@]}"
fi
cmake --build "$build_dir"
