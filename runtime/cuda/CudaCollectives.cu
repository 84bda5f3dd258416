//===- CudaCollectives.cu - collectives on device tensors (NCCL) ----------===//
//
// Part of the Cleave runtime's cuda backend. One NCCL communicator per mesh
// axis group, created the first time the group communicates: rank 0 of the
// group makes the ncclUniqueId and broadcasts it over the group's MPI
// communicator (Mesh.cpp), which every rank reaches in the same order
// because the program is SPMD. Byte counters record the ring algorithm's
// volume (CommVolume.h), the bytes NCCL's ring sends; NCCL does not report
// what it actually sent.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaCollectives.h"
#include "runtime/cuda/CudaSupport.h"

#include "runtime/Collectives.h"
#include "runtime/CommVolume.h"
#include "runtime/MeshDetail.h"

#include <nccl.h>

#include <cstring>
#include <map>
#include <vector>

namespace cleave::rt::cuda {

namespace {

#define CLEAVE_NCCL_CHECK(call)                                                \
  do {                                                                         \
    ncclResult_t cleaveResult_ = (call);                                       \
    if (cleaveResult_ != ncclSuccess)                                          \
      cudaFailure(#call, __FILE__, __LINE__,                                   \
                  ncclGetErrorString(cleaveResult_));                          \
  } while (0)

std::map<std::vector<int8_t>, ncclComm_t> communicators;

ncclComm_t communicator(AxisGroup group) {
  std::vector<int8_t> key(group.axes, group.axes + group.count);
  auto it = communicators.find(key);
  if (it != communicators.end())
    return it->second;
  ncclUniqueId id;
  if (groupRank(group) == 0)
    CLEAVE_NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, detail::groupComm(group));
#ifdef CLEAVE_CUDA_HOST_EMULATION
  // The host emulation's NCCL runs over this group's MPI communicator.
  MPI_Comm groupComm = detail::groupComm(group);
  static_assert(sizeof groupComm <= sizeof id, "an MPI_Comm fits an id");
  std::memcpy(&id, &groupComm, sizeof groupComm);
#endif
  ncclComm_t comm;
  CLEAVE_NCCL_CHECK(
      ncclCommInitRank(&comm, groupSize(group), id, groupRank(group)));
  communicators.emplace(key, comm);
  return comm;
}

ncclDataType_t ncclType(DType type) {
  switch (type) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  case DType::Bool:
    return ncclUint8;
  }
  return ncclFloat32;
}

/// An event recorded on `from` that `to` waits for.
void order(cudaStream_t from, cudaStream_t to) {
  cudaEvent_t event;
  CLEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CLEAVE_CUDA_CHECK(cudaEventRecord(event, from));
  CLEAVE_CUDA_CHECK(cudaStreamWaitEvent(to, event, 0));
  // Released once the wait is satisfied.
  CLEAVE_CUDA_CHECK(cudaEventDestroy(event));
}

/// Runs `body` on the communication stream between the compute stream's
/// earlier kernels and its later ones (a collective the step waits for).
template <typename F> void onCommStream(F body) {
  order(computeStream(), commStream());
  body(commStream());
  order(commStream(), computeStream());
}

/// Buckets started but not finished: the event that ends each.
std::map<int64_t, cudaEvent_t> pendingBuckets;
int64_t nextBucket = 0;

/// A tensor seen as [outer, n, inner] around dimension `dim`.
struct Around {
  int64_t outer, n, inner;
  Around(const Shape &shape, int dim)
      : outer(shape.product(0, dim)), n(shape[dim]),
        inner(shape.product(dim + 1, shape.rank)) {}
};

} // namespace

int64_t startAllReduceBucket(const void *const *inputs, void *const *outputs,
                             const int64_t *counts, int numTensors, DType type,
                             AxisGroup group) {
  int g = groupSize(group);
  int64_t total = 0;
  for (int i = 0; i < numTensors; ++i)
    total += counts[i];
  recordCollective(
      CollectiveKind::AllReduce,
      ringAllReduceBytesSent(total, dtypeSize(type), g, groupRank(group)));
  order(computeStream(), commStream());
  if (g == 1) {
    for (int i = 0; i < numTensors; ++i)
      if (outputs[i] != inputs[i])
        CLEAVE_CUDA_CHECK(
            cudaMemcpyAsync(outputs[i], inputs[i], counts[i] * dtypeSize(type),
                            cudaMemcpyDeviceToDevice, commStream()));
  } else {
    // One group call: NCCL fuses the bucket's tensors into one launch, so
    // no staging copy is needed.
    ncclComm_t comm = communicator(group);
    CLEAVE_NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < numTensors; ++i)
      CLEAVE_NCCL_CHECK(ncclAllReduce(inputs[i], outputs[i], counts[i],
                                      ncclType(type), ncclSum, comm,
                                      commStream()));
    CLEAVE_NCCL_CHECK(ncclGroupEnd());
  }
  cudaEvent_t done;
  CLEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CLEAVE_CUDA_CHECK(cudaEventRecord(done, commStream()));
  int64_t id = nextBucket++;
  pendingBuckets.emplace(id, done);
  return id;
}

void finishAllReduceBucket(int64_t bucket) {
  auto it = pendingBuckets.find(bucket);
  CLEAVE_CUDA_CHECK(cudaStreamWaitEvent(computeStream(), it->second, 0));
  CLEAVE_CUDA_CHECK(cudaEventDestroy(it->second));
  pendingBuckets.erase(it);
}

void allGatherDim(const void *in, const Shape &inShape, int dim,
                  int64_t elementBytes, void *out, AxisGroup group) {
  int g = groupSize(group), r = groupRank(group);
  Around a(inShape, dim);
  int64_t blockBytes = inShape.numElements() * elementBytes;
  recordCollective(CollectiveKind::AllGather,
                   allGatherBytesSent(blockBytes, g, r));
  if (g == 1) {
    onCommStream([&](cudaStream_t stream) {
      CLEAVE_CUDA_CHECK(cudaMemcpyAsync(out, in, blockBytes,
                                        cudaMemcpyDeviceToDevice, stream));
    });
    return;
  }
  ncclComm_t comm = communicator(group);
  if (a.outer == 1) {
    onCommStream([&](cudaStream_t stream) {
      CLEAVE_NCCL_CHECK(
          ncclAllGather(in, out, blockBytes, ncclUint8, comm, stream));
    });
    return;
  }
  // Blocks arrive rank-major; interleave them along `dim` with one strided
  // copy per rank.
  DeviceScratch blocks(blockBytes * g);
  int64_t rowBytes = a.n * a.inner * elementBytes;
  onCommStream([&](cudaStream_t stream) {
    CLEAVE_NCCL_CHECK(ncclAllGather(in, blocks.as<char>(), blockBytes,
                                    ncclUint8, comm, stream));
    for (int q = 0; q < g; ++q)
      CLEAVE_CUDA_CHECK(cudaMemcpy2DAsync(
          static_cast<char *>(out) + q * rowBytes, g * rowBytes,
          blocks.as<char>() + q * blockBytes, rowBytes, rowBytes, a.outer,
          cudaMemcpyDeviceToDevice, stream));
  });
}

void reduceScatterDim(const void *in, const Shape &inShape, int dim, DType type,
                      void *out, AxisGroup group) {
  int g = groupSize(group), r = groupRank(group);
  int64_t size = dtypeSize(type);
  Around a(inShape, dim);
  int64_t localN = a.n / g;
  int64_t perRank = a.outer * localN * a.inner;
  recordCollective(CollectiveKind::ReduceScatter,
                   reduceScatterBytesSent(perRank, size, g, r));
  if (g == 1) {
    onCommStream([&](cudaStream_t stream) {
      CLEAVE_CUDA_CHECK(cudaMemcpyAsync(out, in, perRank * size,
                                        cudaMemcpyDeviceToDevice, stream));
    });
    return;
  }
  ncclComm_t comm = communicator(group);
  if (a.outer == 1) {
    onCommStream([&](cudaStream_t stream) {
      CLEAVE_NCCL_CHECK(ncclReduceScatter(in, out, perRank, ncclType(type),
                                          ncclSum, comm, stream));
    });
    return;
  }
  // Make each rank's block contiguous, rank-major, then reduce-scatter.
  DeviceScratch blocks(perRank * g * size);
  int64_t rowBytes = localN * a.inner * size;
  onCommStream([&](cudaStream_t stream) {
    for (int q = 0; q < g; ++q)
      CLEAVE_CUDA_CHECK(cudaMemcpy2DAsync(
          blocks.as<char>() + q * perRank * size, rowBytes,
          static_cast<const char *>(in) + q * rowBytes, g * rowBytes, rowBytes,
          a.outer, cudaMemcpyDeviceToDevice, stream));
    CLEAVE_NCCL_CHECK(ncclReduceScatter(blocks.as<char>(), out, perRank,
                                        ncclType(type), ncclSum, comm, stream));
  });
}

void allSliceDim(const void *in, const Shape &inShape, int dim,
                 int64_t elementBytes, void *out, AxisGroup group) {
  int g = groupSize(group), r = groupRank(group);
  Around a(inShape, dim);
  int64_t rowBytes = a.n / g * a.inner * elementBytes;
  // No communication: this rank's rows, on the compute stream.
  CLEAVE_CUDA_CHECK(cudaMemcpy2DAsync(
      out, rowBytes, static_cast<const char *>(in) + r * rowBytes, g * rowBytes,
      rowBytes, a.outer, cudaMemcpyDeviceToDevice, computeStream()));
}

void sendRecv(const void *in, void *out, int64_t bytes, int sendTo,
              int recvFrom, AxisGroup group) {
  recordCollective(
      CollectiveKind::SendRecv,
      sendRecvBytesSent(bytes, sendTo, groupSize(group), groupRank(group)));
  ncclComm_t comm = communicator(group);
  onCommStream([&](cudaStream_t stream) {
    CLEAVE_NCCL_CHECK(ncclGroupStart());
    if (sendTo != kNoPeer)
      CLEAVE_NCCL_CHECK(ncclSend(in, bytes, ncclUint8, sendTo, comm, stream));
    if (recvFrom != kNoPeer)
      CLEAVE_NCCL_CHECK(
          ncclRecv(out, bytes, ncclUint8, recvFrom, comm, stream));
    CLEAVE_NCCL_CHECK(ncclGroupEnd());
  });
}

void writeAxisIndex(int64_t *out, AxisGroup group) {
  // A pageable source: the copy has read it by the time the call returns.
  int64_t index = groupRank(group);
  CLEAVE_CUDA_CHECK(cudaMemcpyAsync(out, &index, sizeof index,
                                    cudaMemcpyHostToDevice, computeStream()));
}

void checkCommunicators() {
  for (auto &[axes, comm] : communicators) {
    ncclResult_t asyncError = ncclSuccess;
    CLEAVE_NCCL_CHECK(ncclCommGetAsyncError(comm, &asyncError));
    if (asyncError != ncclSuccess && asyncError != ncclInProgress)
      cudaFailure("an NCCL collective", __FILE__, __LINE__,
                  ncclGetErrorString(asyncError));
  }
}

void abortCommunicators() {
  for (auto &[axes, comm] : communicators)
    ncclCommAbort(comm);
  communicators.clear();
}

void destroyCommunicators() {
  for (auto &[key, comm] : communicators)
    CLEAVE_NCCL_CHECK(ncclCommDestroy(comm));
  communicators.clear();
}

} // namespace cleave::rt::cuda
