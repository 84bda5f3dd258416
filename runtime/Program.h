//===- Program.h - what a generated training program describes --*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). A generated program is a
// table of named tensors plus one step function; runProgram (Driver.cpp)
// does everything around it: command line, data loading, initial values,
// the training loop and logging.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_PROGRAM_H
#define CLEAVE_RUNTIME_PROGRAM_H

#include "runtime/Mesh.h"
#include "runtime/Shape.h"

#include <cstdint>
#include <string>

namespace cleave::rt {

enum class DType : int { F32, F64, I64, I32, Bool };

struct TraceOp; // runtime/Trace.h

/// Bytes per element.
int64_t dtypeSize(DType type);
/// numpy's name of the type ("float32", ...).
const char *dtypeName(DType type);
/// numpy's descr of the type without byte order ("f4", ...).
const char *dtypeNpyKind(DType type);

enum class Role : int {
  /// A graph input, fed from `--data DIR/<name>.npy` one batch per step.
  Input,
  /// A trainable parameter; persistent; starts from its ONNX initializer.
  Param,
  /// Optimizer or BatchNorm state; persistent; starts from its initializer,
  /// or zeros.
  State,
  /// The step counter (int64, 0 at the first step).
  Step,
  /// A graph output, written by the step (for --dump-outputs).
  Output,
};

struct TensorSpec {
  const char *name;
  /// Its file in data, checkpoint and dump directories (npyFileName of the
  /// whole name, computed by the compiler: `name` stops at a NUL byte).
  const char *file;
  DType dtype;
  Shape shape;
  Role role;
  /// Byte offset of the initial value in Program::initialValues; -1: zeros.
  /// Split tensors' initial values are global; each rank keeps its block.
  int64_t initOffset;
  /// How a distributed program splits the tensor ("[dp,_]"; `shape` is
  /// the local block); null for whole tensors.
  const char *sharding = nullptr;
  /// In a program split into pipeline stages, the stage whose ranks hold
  /// the tensor (the others hold nothing); -1: every rank.
  int stage = -1;
  /// A data input's dim along which its --data file (the ONNX model's
  /// layout) holds the samples; `shape` is batch-first whatever it is.
  int batchDim = 0;
};

/// A program split into pipeline stages: the mesh axis whose coordinates
/// are the stages, and the stage that computes the loss.
struct PipelineSpec {
  int axis = -1;
  int lossStage = 0;
  /// Each stage's own scratch plan, indexed by stage: what a rank of that
  /// stage allocates (Program::scratchBytesOf). Null: not known.
  const int64_t *stageArenaBytes = nullptr;
};

/// An integer graph input the step reads as class labels or gather
/// indices: every value must lie in [low, high), or equal `ignore` when
/// `hasIgnore`. The driver checks the data as it loads it, naming the file
/// and the sample (the GPU kernels cannot report a bad value).
struct IndexInputCheck {
  /// Row of the input in the tensor table.
  int tensor;
  int64_t low, high;
  bool hasIgnore;
  int64_t ignore;
  /// What reads the values, e.g. "the class labels of node 'loss'".
  const char *use;
};

/// What the step function sees: one pointer per TensorSpec (in table
/// order), the scratch arena, and where to put the loss.
struct StepContext {
  void *const *tensors;
  char *arena;
  int64_t step;
  /// Seed of the dropout masks (--seed).
  uint64_t seed;
  float loss;
};

/// Slot codes of a part of the step (codegen/EmitParts.cpp): scratch at
/// offset `code` of the arena (code >= 0), tensor -1 - code of the step
/// (arguments), or entry kRefCodes - code of the step's `refs` (constants,
/// collective handles, rows of inputs).
constexpr int64_t kRefCodes = -(int64_t(1) << 40);

/// The pointers of a part's `n` slots, by their codes (Program.cpp).
void resolveSlots(const StepContext &ctx, void *const *refs,
                  const int64_t *codes, int64_t n, void **slots);

/// A call of a part of the step: its function, where its slot codes and
/// trace rows start in the step's tables, its micro-batch (-1: none).
struct PartCall {
  void (*function)(StepContext &ctx, void *const *refs, const int64_t *codes,
                   const int *rows, int microbatch);
  int64_t codes;
  int32_t rows;
  int32_t microbatch;
};

/// The step of a stage: its parts, in order.
inline void runParts(StepContext &ctx, void *const *refs,
                     const PartCall *calls, int64_t numCalls,
                     const int64_t *codes, const int *rows) {
  for (const PartCall *call = calls; call != calls + numCalls; ++call)
    call->function(ctx, refs, codes + call->codes, rows + call->rows,
                   call->microbatch);
}

/// How the driver reaches the memory of a program whose step runs on an
/// accelerator (the cuda target, runtime/cuda/CudaDevice.cu). The driver
/// keeps a host copy of every tensor for files and logs; the step sees only
/// device memory.
struct DeviceHooks {
  /// Chooses this process's device once the mesh is up; false, and why in
  /// `error`, when there is none it can use.
  bool (*start)(std::string &error);
  /// One block of device memory for every tensor, the scratch arena and,
  /// at its end, `kernelScratchBytes` for the kernels' workspaces; reported
  /// first when `report`; null, and why (what is needed, what is free) in
  /// `error`, when it does not fit.
  char *(*reserve)(int64_t bytes, int64_t persistentBytes, int64_t scratchBytes,
                   int64_t kernelScratchBytes, bool report, std::string &error);
  /// Page-locked host memory for the input batches (copied asynchronously).
  void *(*allocateHost)(int64_t bytes);
  void (*freeHost)(void *host);
  /// Host to device, ordered before the next step's kernels.
  void (*upload)(void *device, const void *host, int64_t bytes);
  /// Device to host, after the step's kernels; returns when done.
  void (*download)(void *host, const void *device, int64_t bytes);
  /// Releases the device before the mesh shuts down.
  void (*stop)();
  /// --trace's clock (runtime/Trace.h): records a mark on the compute
  /// stream and returns its number; `traceMicroseconds` gives a mark's time
  /// after the first one, waiting until the device has reached it. Null:
  /// the host's clock.
  int64_t (*traceMark)() = nullptr;
  double (*traceMicroseconds)(int64_t mark) = nullptr;
};

struct Program {
  /// The ONNX model the program was compiled from.
  const char *model;
  const TensorSpec *tensors;
  int numTensors;
  /// Scratch bytes the step needs (the compiler's static memory plan; in
  /// a program split into stages, the largest stage's).
  int64_t arenaBytes;
  const char *initialValues;
  int64_t initialBytes;
  void (*step)(StepContext &);
  /// Whether the step trains (has a loss and updates), or only infers.
  bool training;
  /// The serialized ONNX model the program was compiled from, which
  /// --export-onnx writes back with the trained initializers.
  const char *onnxModel;
  int64_t onnxModelBytes;
  /// The device mesh of a distributed program (no axes: one process).
  MeshSpec mesh = {0, nullptr, nullptr};
  PipelineSpec pipeline;
  /// Null: the step runs on the host (cpu target).
  const DeviceHooks *device = nullptr;
  /// Device memory the kernels borrow during a call, at most
  /// (runtime/cuda/KernelScratch.h); the cuda target's.
  int64_t kernelScratchBytes = 0;
  const IndexInputCheck *indexChecks = nullptr;
  int numIndexChecks = 0;
  /// The ops the step's trace points name (runtime/Trace.h); none: the
  /// step calls nothing to trace.
  const TraceOp *traceOps = nullptr;
  int numTraceOps = 0;

  /// The scratch arena a rank of pipeline stage `stage` (-1: no stages)
  /// allocates: its own stage's plan, which on a GPU leaves the other
  /// stages' larger arenas unreserved.
  int64_t scratchBytesOf(int stage) const {
    return stage >= 0 && pipeline.stageArenaBytes
               ? pipeline.stageArenaBytes[stage]
               : arenaBytes;
  }
};

/// Runs the training loop; returns the process exit code.
int runProgram(const Program &program, int argc, char **argv);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_PROGRAM_H
