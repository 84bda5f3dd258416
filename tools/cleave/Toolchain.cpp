//===- Toolchain.cpp - building the generated program ---------------------===//

#include "tools/cleave/Toolchain.h"

#include "tools/cleave/OutputFile.h"

#include "codegen/SourceText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

#ifndef CLEAVE_HOST_CXX
#define CLEAVE_HOST_CXX "c++"
#endif
#ifndef CLEAVE_SOURCE_DIR
#define CLEAVE_SOURCE_DIR "."
#endif
#ifndef CLEAVE_RUNTIME_LIBRARY
#define CLEAVE_RUNTIME_LIBRARY "libCleaveRuntime.a"
#endif
#ifndef CLEAVE_MPI_LIBRARIES
#define CLEAVE_MPI_LIBRARIES "-lmpi"
#endif
// The sanitizers this cleave and its runtime were built with, if any.
#ifndef CLEAVE_PROGRAM_SANITIZE
#define CLEAVE_PROGRAM_SANITIZE ""
#endif
// The cuda target's compiler and runtime; empty when this cleave was built
// without the CUDA toolkit.
#ifndef CLEAVE_NVCC
#define CLEAVE_NVCC ""
#endif
#ifndef CLEAVE_CUDA_HOST_CXX
#define CLEAVE_CUDA_HOST_CXX "g++"
#endif
#ifndef CLEAVE_CUDA_RUNTIME_LIBRARY
#define CLEAVE_CUDA_RUNTIME_LIBRARY ""
#endif
#ifndef CLEAVE_CUDA_EMULATED_RUNTIME_LIBRARY
#define CLEAVE_CUDA_EMULATED_RUNTIME_LIBRARY ""
#endif
#ifndef CLEAVE_CUDA_LIBRARY_DIR
#define CLEAVE_CUDA_LIBRARY_DIR ""
#endif

namespace cleave::driver {

namespace {

using mlir::cleave::Target;

int fail(const llvm::Twine &message) {
  llvm::errs() << "cleave compile: error: " << message << "\n";
  return 1;
}

/// The compiler and its arguments for the source at `sourcePath` (absolute)
/// writing `outputPath` (absolute), or 1 after reporting why there is none.
int compilerCommand(const ProgramBuild &build, llvm::StringRef sourcePath,
                    llvm::StringRef outputPath, std::string &compiler,
                    std::vector<std::string> &args) {
  bool cuda = build.target == Target::Cuda;
  llvm::StringRef name = cuda ? CLEAVE_NVCC : CLEAVE_HOST_CXX;
  if (cuda && name.empty())
    return fail("this cleave was built without the CUDA toolkit, so it cannot "
                "build --target cuda programs; rebuild it where nvcc is "
                "installed, or use --emit=source and compile the .cu yourself");
  auto found = llvm::sys::findProgramByName(name);
  if (!found)
    return fail(llvm::Twine("the ") + (cuda ? "CUDA" : "C++") + " compiler '" +
                name + "' was not found");
  compiler = *found;
  args = {compiler, "-std=c++17", std::string("-I") + CLEAVE_SOURCE_DIR,
          sourcePath.str()};
  if (cuda) {
    // nvcc needs g++ as its host compiler (it rejects clang 22). Kernels for
    // each architecture, and PTX of the newest for GPUs after it. The
    // generated code's harmless warnings (an unused step counter) are not
    // the user's business.
    llvm::append_range(
        args, std::vector<std::string>{"-O3", "--extended-lambda", "-w",
                                       "-ccbin", CLEAVE_CUDA_HOST_CXX});
    if (build.cudaHostEmulation) {
      // Work items on the host, CUDA/cuBLAS/NCCL from the emulation; the
      // device code is never run, so PTX suffices.
      llvm::append_range(args,
                         std::vector<std::string>{
                             "-DCLEAVE_CUDA_HOST_EMULATION", "-cudart", "none",
                             "-gencode=arch=compute_80,code=compute_80",
                             CLEAVE_CUDA_EMULATED_RUNTIME_LIBRARY,
                             CLEAVE_RUNTIME_LIBRARY, "-lopenblas", "-lmvec"});
    } else {
      for (unsigned arch : build.cudaArchs)
        args.push_back(
            llvm::formatv("-gencode=arch=compute_{0},code=sm_{0}", arch));
      args.push_back(llvm::formatv("-gencode=arch=compute_{0},code=compute_{0}",
                                   *llvm::max_element(build.cudaArchs)));
      llvm::append_range(
          args, std::vector<std::string>{
                    CLEAVE_CUDA_RUNTIME_LIBRARY, CLEAVE_RUNTIME_LIBRARY, "-lmvec",
                    std::string("-L") + CLEAVE_CUDA_LIBRARY_DIR,
                    std::string("-Xlinker=-rpath,") + CLEAVE_CUDA_LIBRARY_DIR,
                    "-lcublas", "-lcublasLt", "-lcudnn", "-lnccl"});
    }
  } else {
    // Without errno (which nothing reads after a math function), loops
    // that clamp or select around exp still run in vector registers.
    llvm::append_range(
        args, std::vector<std::string>{"-O2", "-march=native", "-fopenmp",
                                       "-fno-math-errno",
                                       CLEAVE_RUNTIME_LIBRARY, "-lopenblas",
                                       "-ldnnl", "-lmvec", "-pthread"});
    if (llvm::StringRef sanitize = CLEAVE_PROGRAM_SANITIZE; !sanitize.empty())
      args.push_back(("-fsanitize=" + sanitize).str());
  }
  llvm::append_range(args,
                     std::vector<std::string>{"-lonnx_proto", "-lprotobuf"});
  llvm::SmallVector<llvm::StringRef> mpiLibraries;
  llvm::StringRef(CLEAVE_MPI_LIBRARIES).split(mpiLibraries, '|', -1, false);
  for (llvm::StringRef library : mpiLibraries)
    args.push_back(library.str());
  args.push_back("-o");
  args.push_back(outputPath.str());
  return 0;
}

/// Runs `program` with `args` (args[0] included) in `directory` and waits;
/// its exit status, or -1 with `error` set when it could not run.
int runIn(llvm::StringRef directory, const std::string &program,
          const std::vector<std::string> &args, std::string &error) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, directory.str().c_str());
  std::vector<char *> argv;
  for (const std::string &arg : args)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(),
                       environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    error = std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      error = std::strerror(errno);
      return -1;
    }
  if (WIFSIGNALED(status)) {
    error = llvm::formatv("killed by signal {0}", WTERMSIG(status));
    return -1;
  }
  return WEXITSTATUS(status);
}

} // namespace

std::string keptSourcePath(const ProgramBuild &build) {
  return build.output + (build.target == Target::Cuda ? ".cu" : ".cpp");
}

int buildProgram(const ProgramBuild &build, llvm::StringRef source,
                 llvm::StringRef initialValues) {
  // The compiler's inputs, under fixed names in a directory of our own.
  llvm::SmallString<256> directory;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("cleave-build", directory))
    return fail("cannot create a temporary directory: " + ec.message());
  llvm::scope_exit removeDirectory(
      [&] { llvm::sys::fs::remove_directories(directory); });
  llvm::SmallString<256> sourcePath(directory), blobPath(directory);
  llvm::sys::path::append(sourcePath, build.target == Target::Cuda
                                          ? "program.cu"
                                          : "program.cpp");
  llvm::sys::path::append(blobPath, mlir::cleave::kInitialValuesFile);
  if (!writeOutputFile(sourcePath, source, "compile") ||
      !writeOutputFile(blobPath, initialValues, "compile"))
    return 1;
  if (build.keepSource &&
      !writeOutputFile(keptSourcePath(build), source, "compile"))
    return 1;

  // The program is linked beside its destination, then renamed over it.
  llvm::SmallString<256> output(build.output);
  llvm::sys::fs::make_absolute(output);
  bool inPlace = isSpecialFile(output);
  std::string linked = inPlace ? std::string(output)
                               : temporaryBeside(output, "compile");
  if (linked.empty())
    return 1;
  llvm::FileRemover removeLinked(inPlace ? "" : linked);
  std::string compiler;
  std::vector<std::string> args;
  if (int rc = compilerCommand(build, sourcePath, linked, compiler, args))
    return rc;
  std::string error;
  int rc = runIn(directory, compiler, args, error);
  // The linker cannot write its output when the directory went away (or
  // became read-only) during the compile: not a bug of cleave's.
  if (llvm::StringRef parent = llvm::sys::path::parent_path(linked);
      rc != 0 && !inPlace &&
      (!llvm::sys::fs::is_directory(parent) ||
       llvm::sys::fs::access(parent, llvm::sys::fs::AccessMode::Write)))
    return fail("cannot write the program: the output directory '" + parent +
                "' was removed or made read-only while cleave compiled; "
                "recreate it and compile again");
  if (rc != 0)
    return fail("compiling the generated program failed" +
                (error.empty() ? "" : ": " + error) +
                "; this is a bug in cleave: please report it with the model "
                "(rerun with --keep-source to see the source)");
  if (inPlace)
    return 0;
  if (!commitOutputFile(linked, output, "compile"))
    return 1;
  removeLinked.releaseFile();
  return 0;
}

} // namespace cleave::driver
