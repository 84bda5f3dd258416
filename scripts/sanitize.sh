#!/usr/bin/env bash
# Builds Cleave under AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ (the compiler, the runtime, and every program `cleave compile`
# builds in the tests) and runs the whole test suite there. Any sanitizer
# report fails the test it happens in (-fno-sanitize-recover). The cuda
# target is not built in this configuration (its tests are UNSUPPORTED).
#
#   scripts/sanitize.sh [lit args...]     # e.g. --filter e2e
#
# Leak checking is off: Open MPI's and protobuf's process-lifetime
# allocations are reported as leaks and are not Cleave's. User poisoning is
# off: LLVM's inline allocators, compiled into our instrumented code, poison
# memory that the uninstrumented libMLIR then writes (false reports). vptr
# checks are off for the same reason (CMakeLists.txt).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-"$root/build-asan"}
"$root/scripts/setup.sh" >/dev/null  # packages (and the normal build)
if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCLEAVE_SANITIZE=address,undefined \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
cmake --build "$build_dir"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_odr_violation=0:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
exec /usr/lib/llvm-22/bin/lit -sv "$build_dir/test" "$@"
