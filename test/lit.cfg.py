# -*- Python -*-
# lit configuration for Cleave's tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "Cleave"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "models", "reference", "tools"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cleave_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.cleave_tools_dir, append_path=True)

# Debian's Python with onnx, numpy and torch (the pyenv python on PATH has none).
config.substitutions.append(("%python", "/usr/bin/python3"))
# `%exit1 cmd...` runs cmd and fails unless it exits with status 1 (user
# errors must exit 1: not a crash, not another code).
config.substitutions.append(
    ("%exit1", os.path.join(config.test_source_root, "tools", "expect-exit") + " 1"))
config.substitutions.append(("%models", os.path.join(config.test_source_root, "models")))
config.substitutions.append(("%reference", os.path.join(config.test_source_root, "reference")))
config.substitutions.append(("%onnx_testdata", "/usr/share/libonnx-testdata/data"))
# `%mpirun -np N cmd...`: as root (containers need the flag), with more
# ranks than cores, a time limit that turns a deadlocked ring into a
# failure, and one OpenMP thread per rank.
config.substitutions.append(
    ("%mpirun", "env OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --timeout 600"))

# Tests that build cuda-target programs need the CUDA toolkit (nvcc); where
# it is missing lit reports them UNSUPPORTED, not passed.
if config.cleave_have_cuda == "ON":
    config.available_features.add("nvcc")
# A machine with a working NVIDIA GPU (no-gpu.test checks the message a
# program gives without one).
import shutil
import subprocess
if shutil.which("nvidia-smi") and subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True).returncode == 0:
    config.available_features.add("cuda-gpu")
# A CPU with AVX-512 (F, BW, VL, DQ: oneDNN's avx512_core), where oneDNN
# has the Winograd convolution kernels the cpu target picks for some
# shapes (runtime/ConvolutionPath.h); tests check that they ran there.
with open("/proc/cpuinfo") as cpuinfo:
    cpu_flags = set(next((line.split(":", 1)[1].split() for line in cpuinfo
                          if line.startswith("flags")), []))
if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= cpu_flags:
    config.available_features.add("avx512-core")
# Debian's chromium and python3-pil (scripts/setup.sh installs them):
# test/report/ opens the HTML report in headless Chromium and reads its
# screenshot; where either is missing, UNSUPPORTED.
if shutil.which("chromium") and subprocess.run(
        ["/usr/bin/python3", "-c", "import PIL"], capture_output=True).returncode == 0:
    config.available_features.add("chromium")
# clang with libFuzzer's runtime (Debian's clang-22 and libclang-rt-22-dev):
# test/fuzz/ checks that the fuzz targets build; elsewhere UNSUPPORTED.
import glob
clang = shutil.which("clang++-22") or shutil.which("clang++")
if clang:
    resource_dir = subprocess.run([clang, "--print-resource-dir"],
                                  capture_output=True, text=True).stdout.strip()
    if resource_dir and glob.glob(os.path.join(
            resource_dir, "lib", "**", "libclang_rt.fuzzer*.a"), recursive=True):
        config.available_features.add("libfuzzer")
# The importer's fuzz target compiles against the dialect's tablegen output.
config.substitutions.append(("%cleave_obj_root", config.cleave_obj_root))

llvm_config.add_tool_substitutions(
    [ToolSubst("cleave", unresolved="fatal"), ToolSubst("cleave-opt", unresolved="fatal"),
     ToolSubst("cleave-translate", unresolved="fatal"),
     ToolSubst("cleave-unit-tests", unresolved="fatal"),
     ToolSubst("cleave-runtime-tests", unresolved="fatal"),
     ToolSubst("cleave-collectives-test", unresolved="fatal"),
     ToolSubst("cleave-shared-bodies-tests", unresolved="fatal"),
     ToolSubst("cleave-shared-bodies-tests-nvcc", unresolved="ignore")],
    [config.cleave_tools_dir])
