//===- Toolchain.h - building the generated program -------------*- C++ -*-===//
//
// Turns the emitted source and the initial-values blob into a program: the
// host C++ compiler for the cpu target, nvcc for the cuda target, against
// this tree's runtime. The compiler runs in a private temporary directory
// holding the source and the blob under fixed names, so no path from
// outside (TMPDIR, the output's name) ever appears in the source.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_TOOLCHAIN_H
#define CLEAVE_TOOLS_CLEAVE_TOOLCHAIN_H

#include "codegen/ProgramEmitter.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace cleave::driver {

/// What to build and where.
struct ProgramBuild {
  mlir::cleave::Target target = mlir::cleave::Target::Cpu;
  /// The cuda target against runtime/cuda/*HostEmulation.cpp (testing).
  bool cudaHostEmulation = false;
  /// GPU architectures (compute capability x10) of the cuda target.
  std::vector<unsigned> cudaArchs;
  /// The program's path.
  std::string output;
  /// Also keep the source as <output>.cpp (or .cu).
  bool keepSource = false;
};

/// The kept source's path for `build`: <output>.cpp, or .cu for cuda.
std::string keptSourcePath(const ProgramBuild &build);

/// Builds `source`, which embeds codegen/SourceText.h's kInitialValuesFile,
/// with `initialValues` as that file, into build.output. The program
/// replaces an earlier one only once it is whole. Returns the exit code
/// (1 after reporting why).
int buildProgram(const ProgramBuild &build, llvm::StringRef source,
                 llvm::StringRef initialValues);

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_TOOLCHAIN_H
