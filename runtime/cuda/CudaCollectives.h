//===- CudaCollectives.h - collectives on device tensors --------*- C++ -*-===//
//
// Part of the Cleave runtime's cuda backend: the functions of
// CollectiveKernels.h with the same arguments and meaning, on device
// memory, over NCCL. Every collective runs on the communication stream,
// ordered against the compute stream by events, so one communicator is
// only ever used from one stream.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_CUDACOLLECTIVES_H
#define CLEAVE_RUNTIME_CUDA_CUDACOLLECTIVES_H

#include "runtime/Mesh.h"
#include "runtime/Program.h"
#include "runtime/Shape.h"

#include <cstdint>

namespace cleave::rt::cuda {

/// Starts summing a bucket of tensors over `group` on the communication
/// stream, after the kernels enqueued so far; the compute stream goes on.
int64_t startAllReduceBucket(const void *const *inputs, void *const *outputs,
                             const int64_t *counts, int numTensors, DType type,
                             AxisGroup group);
/// Makes the compute stream wait for the bucket (not the host).
void finishAllReduceBucket(int64_t bucket);

void allGatherDim(const void *in, const Shape &inShape, int dim,
                  int64_t elementBytes, void *out, AxisGroup group);
void reduceScatterDim(const void *in, const Shape &inShape, int dim, DType type,
                      void *out, AxisGroup group);
void allSliceDim(const void *in, const Shape &inShape, int dim,
                 int64_t elementBytes, void *out, AxisGroup group);

/// Sends `in` to group rank sendTo and receives `out` from group rank
/// recvFrom (cleave.send_recv between pipeline stages); either may be
/// kNoPeer. On the communication stream, ordered after the kernels so far
/// and before the next ones.
constexpr int kNoPeer = -1;
void sendRecv(const void *in, void *out, int64_t bytes, int sendTo,
              int recvFrom, AxisGroup group);

/// *out = this rank's index in `group` (cleave.axis_index), on the compute
/// stream.
void writeAxisIndex(int64_t *out, AxisGroup group);

/// Frees the NCCL communicators (CudaDevice.cu, when the program ends).
void destroyCommunicators();

/// Fails the program, naming the communicator's group, when NCCL reports
/// an asynchronous error on one (a peer that died, a network failure).
void checkCommunicators();

/// Aborts every communicator (ncclCommAbort), so that kernels waiting on
/// a peer that will never come return, before the job is aborted.
void abortCommunicators();

} // namespace cleave::rt::cuda

#endif // CLEAVE_RUNTIME_CUDA_CUDACOLLECTIVES_H
