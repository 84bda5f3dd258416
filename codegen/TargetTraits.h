//===- TargetTraits.h - what differs between the targets --------*- C++ -*-===//
//
// The cuda target's runtime has the cpu target's functions and arguments
// (one list, runtime/KernelApi.inc), so both programs make the same calls
// with the same names. They differ where the host touches tensor memory
// (constants, copies, scalars), in what only one runtime offers, and in
// the text around the step; this struct is that list.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_CODEGEN_TARGETTRAITS_H
#define CLEAVE_CODEGEN_TARGETTRAITS_H

#include "codegen/ProgramEmitter.h"

namespace mlir::cleave::codegen {

struct TargetTraits {
  /// "cpu" or "cuda", for messages and the source's first comment.
  const char *name;
  /// The `#include` lines of the target's runtime, before the shared ones.
  const char *runtimeIncludes;
  /// The `using namespace` lines of the target's runtime, after
  /// cleave::rt's.
  const char *runtimeNamespaces;
  /// The functions copying and filling n elements of the target's tensors.
  const char *copyFunction;
  const char *fillFunction;
  /// Host expressions reading element 0 of tensor {0} (the loss, a
  /// learning rate, a step counter) and setting it to {1}: on the GPU,
  /// copies (the read waits for the device).
  const char *readScalar;
  const char *writeScalar;
  /// Tensors live in device memory: a constant is a `__device__` array
  /// whose address each step looks up (and a large non-zero splat cannot
  /// be filled at start-up), each step waits for the device before the
  /// driver reads its results, and main gives the driver the device's
  /// hooks.
  bool deviceMemory;
  /// The runtime/CommVolume.h function that counts the bytes one rank
  /// sends in an all-reduce (--trace): NCCL's is always a ring, the cpu
  /// runtime's may be recursive doubling.
  const char *allReduceBytesSent;
  /// A gradient bucket is all-reduced by segments (forEachBucketSegment,
  /// runtime/CommVolume.h), not as one buffer; its runs of small tensors
  /// are packed into a staging buffer the program keeps for the op
  /// (runtime/CollectiveBuffers.h).
  bool segmentedBuckets;
  /// The cpu runtime's own calls: matmulStrided, which reads transposed
  /// views in place (FusionPlan's planStridedMatmuls); linearBackwardSgd,
  /// which cuBLAS has no counterpart of; hand-overs between pipeline
  /// stages that overlap compute (sendAsync, startReceive; the cuda
  /// target's NCCL calls are asynchronous on the communication stream
  /// already).
  bool stridedMatmuls;
  bool fusedBackwardSgd;
  bool asyncHandOvers;
  /// An all-reduce whose sum is read before any other call runs is one
  /// blocking call (allReduceBucket) instead of a start and a wait: the cpu
  /// runtime starts collectives on a thread of its own (the cuda target's
  /// on a stream, which costs no hand-off).
  bool blockingAllReduceAtOnce;
  /// cuBLASLt's bias and bias-ReLU GEMM epilogues.
  bool gemmBiasEpilogue;

  static const TargetTraits &of(Target target);
};

} // namespace mlir::cleave::codegen

#endif // CLEAVE_CODEGEN_TARGETTRAITS_H
