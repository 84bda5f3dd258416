//===- TargetFlags.h - which machine the program runs on --------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_TARGETFLAGS_H
#define CLEAVE_TOOLS_CLEAVE_TARGETFLAGS_H

#include "codegen/ProgramEmitter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace cleave::driver {

namespace cl = llvm::cl;

/// `cleave compile --target cpu|cuda --cuda-arch 80;90`.
struct TargetFlags {
  explicit TargetFlags(cl::SubCommand &sub)
      : target("target", cl::desc("What the program runs on"),
               cl::values(clEnumValN(mlir::cleave::Target::Cpu, "cpu",
                                     "the host: OpenBLAS, OpenMP, MPI"),
                          clEnumValN(mlir::cleave::Target::Cuda, "cuda",
                                     "NVIDIA GPUs, one per rank: cuBLAS, "
                                     "NCCL (built with nvcc)")),
               cl::init(mlir::cleave::Target::Cpu), cl::sub(sub)),
        cudaArch("cuda-arch",
                 cl::desc("GPU architectures the cuda target is compiled "
                          "for (compute capability x10, ';' or ','-separated)"),
                 cl::value_desc("ARCHS"), cl::init("80;90"), cl::sub(sub)),
        cudaHostEmulation(
            "cuda-host-emulation",
            cl::desc("Testing: build the cuda program against the host "
                     "emulation of CUDA, cuBLAS and NCCL "
                     "(runtime/cuda/CudaHostEmulation.cpp), so that it runs "
                     "without a GPU"),
            cl::Hidden, cl::sub(sub)) {}

  /// The architectures of --cuda-arch, or an error naming the bad entry.
  llvm::Expected<std::vector<unsigned>> cudaArchitectures() const {
    // What nvcc 13 compiles for (Turing and newer).
    static const unsigned kKnown[] = {75, 80,  86,  87,  88,  89,
                                      90, 100, 103, 110, 120, 121};
    std::vector<unsigned> archs;
    llvm::SmallVector<llvm::StringRef> items;
    for (llvm::StringRef part : llvm::split(cudaArch, ';'))
      part.split(items, ',', -1, false);
    for (llvm::StringRef item : items) {
      unsigned arch = 0;
      if (item.trim().getAsInteger(10, arch) ||
          !llvm::is_contained(kKnown, arch))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "--cuda-arch entry '" + item.str() +
                "' is not a compute capability CUDA 13 compiles for, written "
                "without the dot: one of 75, 80, 86, 87, 88, 89, 90, 100, "
                "103, 110, 120, 121 (80 for A100, 90 for H100)");
      archs.push_back(arch);
    }
    if (archs.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--cuda-arch names no architecture");
    return archs;
  }

  /// Checks the flags against each other: the cuda-only flags need
  /// --target cuda, whose --cuda-arch must parse.
  llvm::Error validate() const {
    if (target != mlir::cleave::Target::Cuda) {
      if (cudaArch.getNumOccurrences() || cudaHostEmulation.getNumOccurrences())
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "--cuda-arch and --cuda-host-emulation apply to --target cuda");
      return llvm::Error::success();
    }
    return cudaArchitectures().takeError();
  }

  cl::opt<mlir::cleave::Target> target;
  cl::opt<std::string> cudaArch;
  cl::opt<bool> cudaHostEmulation;
};

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_TARGETFLAGS_H
