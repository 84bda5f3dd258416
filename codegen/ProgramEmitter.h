//===- ProgramEmitter.h - training step to C++ or CUDA C++ ------*- C++ -*-===//

#ifndef CLEAVE_CODEGEN_PROGRAMEMITTER_H
#define CLEAVE_CODEGEN_PROGRAMEMITTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace mlir::cleave {

/// A tensor whose initial value the program embeds (a parameter, or state
/// with an ONNX initializer), at `offset` in the initial-values blob.
struct EmbeddedValue {
  std::string name;
  int64_t offset;
  int64_t bytes;
};

struct EmittedProgram {
  /// The C++ source of the training step and `main`.
  std::string source;
  /// The blob layout, in table order; the caller writes the blob.
  std::vector<EmbeddedValue> embedded;
  int64_t embeddedBytes = 0;
  /// Where the serialized model starts in the blob (after the values).
  int64_t modelOffset = 0;
  /// Peak scratch bytes of the static memory plan.
  int64_t arenaBytes = 0;
  /// Per pipeline stage (one entry for a program without stages): its
  /// arena's peak, and the gradient bytes live at that peak
  /// (MemoryPlan::gradientBytesAtPeak).
  std::vector<int64_t> stageArenaBytes, stageGradientBytes;
  /// Bytes of parameters, optimizer state and other persistent tensors.
  int64_t persistentBytes = 0;
};

/// What the program runs on: the host (C++ against runtime/Kernels.h) or
/// an NVIDIA GPU (CUDA C++ against runtime/cuda/).
enum class Target { Cpu, Cuda };

struct EmitOptions {
  Target target = Target::Cpu;
  /// The model file named in the program's messages.
  std::string modelName;
};

/// Emits `func` (a complete training step: cleave-autodiff and
/// cleave-apply-optimizer ran) as one source that calls the runtime: C++
/// for the cpu target, CUDA C++ for the cuda target, the same calls in the
/// same order with the same names on both. Emits an error at the
/// offending op and fails for ops the emitter does not know.
FailureOr<EmittedProgram> emitProgram(func::FuncOp func,
                                      const EmitOptions &options);

} // namespace mlir::cleave

#endif // CLEAVE_CODEGEN_PROGRAMEMITTER_H
