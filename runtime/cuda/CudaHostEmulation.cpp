//===- CudaHostEmulation.cpp - the CUDA APIs the runtime uses, on the host ===//
//
// Part of Cleave's tests of the cuda target, for machines without a GPU.
// With CLEAVE_CUDA_HOST_EMULATION, runtime/cuda and a generated .cu are
// built by nvcc as usual, except that launch() runs the work items on the
// host (Launch.cuh) and the program links this file instead of the CUDA
// runtime, cuBLAS and NCCL: the calls the runtime makes, implemented on host
// memory (device pointers are host pointers, streams run everything at
// once), cuBLAS's column-major sgemm on OpenBLAS, NCCL's collectives on the
// group's MPI communicator. A training program then runs its own cuda code
// path end to end (the emitted .cu, every cuda kernel's launch arguments
// and phases, the cuBLAS operand mapping, the collectives' data layout) and
// its losses can be checked against PyTorch. What it cannot check is the
// GPU itself: kernel code generation, concurrency, streams and events.
//
//===----------------------------------------------------------------------===//

#include <cblas.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void *hostAllocate(size_t bytes) {
  return std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
}

/// The emulated machine's size from the environment: the value of `name`
/// if it is set, else `fallback`. Anything but a whole number stops the run.
size_t fromEnvironment(const char *name, size_t fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  size_t value = std::strtoull(text, &end, 10);
  if (*end || !std::isdigit(static_cast<unsigned char>(*text))) {
    std::fprintf(stderr,
                 "error: %s='%s' is not a whole number; set it to one or "
                 "unset it\n",
                 name, text);
    std::exit(1);
  }
  return value;
}

/// Streams and events are only handles here: every operation is done by
/// the time its call returns.
template <typename Handle> Handle newHandle() {
  static char handles[1];
  return reinterpret_cast<Handle>(handles);
}

} // namespace

//===----------------------------------------------------------------------===//
// The CUDA runtime
//===----------------------------------------------------------------------===//

extern "C" {

/// Enough emulated GPUs for the mesh tests' ranks on one machine, or
/// CLEAVE_EMULATED_GPUS of them (a test of too many ranks per node).
cudaError_t cudaGetDeviceCount(int *count) {
  *count = static_cast<int>(fromEnvironment("CLEAVE_EMULATED_GPUS", 8));
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *properties, int) {
  std::memset(properties, 0, sizeof *properties);
  std::strcpy(properties->name, "host emulation");
  return cudaSuccess;
}
/// 16 GiB free of 16, or CLEAVE_EMULATED_GPU_MIB MiB (a test of a model
/// too large for its GPU).
cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes) {
  *freeBytes = *totalBytes = fromEnvironment("CLEAVE_EMULATED_GPU_MIB", 16384)
                             << 20;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "error (host emulation)";
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  *stream = newHandle<cudaStream_t>();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) {
  return cudaSuccess;
}
// Work runs when it is enqueued: an event happens when it is recorded, and
// holds the host's time then (what --trace reads).
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) {
  *event = reinterpret_cast<cudaEvent_t>(
      new std::chrono::steady_clock::time_point());
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, 0);
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  *reinterpret_cast<std::chrono::steady_clock::time_point *>(event) =
      std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                 cudaEvent_t end) {
  using TimePoint = std::chrono::steady_clock::time_point;
  *ms = std::chrono::duration<float, std::milli>(
            *reinterpret_cast<TimePoint *>(end) -
            *reinterpret_cast<TimePoint *>(start))
            .count();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<std::chrono::steady_clock::time_point *>(event);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **pointer, size_t bytes) {
  *pointer = hostAllocate(bytes);
  return *pointer ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *pointer) {
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void **pointer, size_t bytes) {
  return cudaMalloc(pointer, bytes);
}
cudaError_t cudaFreeHost(void *pointer) { return cudaFree(pointer); }
cudaError_t cudaMemset(void *pointer, int value, size_t bytes) {
  std::memset(pointer, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *pointer, int value, size_t bytes,
                            cudaStream_t) {
  return cudaMemset(pointer, value, bytes);
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind, cudaStream_t) {
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind, cudaStream_t) {
  for (size_t row = 0; row < height; ++row)
    std::memmove(static_cast<char *>(dst) + row * dpitch,
                 static_cast<const char *>(src) + row * spitch, width);
  return cudaSuccess;
}
/// nvcc keeps a __device__ variable's initial value in its host shadow,
/// which is where the emulated device reads it.
cudaError_t cudaGetSymbolAddress(void **address, const void *symbol) {
  *address = const_cast<void *>(symbol);
  return cudaSuccess;
}

// What nvcc's generated host code calls to register the device code.
void **__cudaRegisterFatBinary(void *) {
  static void *handle;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void **) {}
void __cudaUnregisterFatBinary(void **) {}
void __cudaRegisterVar(void **, char *, char *, const char *, int, size_t, int,
                       int) {}
void __cudaRegisterFunction(void **, const char *, char *, const char *, int,
                            uint3 *, uint3 *, dim3 *, dim3 *, int *) {}
char __cudaInitModule(void **) { return 0; }

//===----------------------------------------------------------------------===//
// cuBLAS: column-major, as its documentation defines
//===----------------------------------------------------------------------===//

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  *handle = newHandle<cublasHandle_t>();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? "success" : "error (host emulation)";
}

cublasStatus_t cublasSgemm_v2_64(cublasHandle_t, cublasOperation_t transa,
                                 cublasOperation_t transb, int64_t m, int64_t n,
                                 int64_t k, const float *alpha, const float *a,
                                 int64_t lda, const float *b, int64_t ldb,
                                 const float *beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasColMajor, transa == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
              transb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k,
              *alpha, a, lda, b, ldb, *beta, c, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int64_t m, int64_t n, int64_t k, const float *alpha, const float *a,
    int64_t lda, long long strideA, const float *b, int64_t ldb,
    long long strideB, const float *beta, float *c, int64_t ldc,
    long long strideC, int64_t batchCount) {
  for (int64_t i = 0; i < batchCount; ++i)
    cublasSgemm_v2_64(handle, transa, transb, m, n, k, alpha, a + i * strideA,
                      lda, b + i * strideB, ldb, beta, c + i * strideC, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSscal_v2_64(cublasHandle_t, int64_t n, const float *alpha,
                                 float *x, int64_t incx) {
  cblas_sscal(n, *alpha, x, incx);
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"

//===----------------------------------------------------------------------===//
// NCCL on MPI
//===----------------------------------------------------------------------===//

/// CudaCollectives.cu writes the group's MPI communicator into the id in
/// emulation builds; the emulated NCCL communicator is a duplicate of it.
struct ncclComm {
  MPI_Comm comm;
};

namespace {

MPI_Datatype mpiType(ncclDataType_t type) {
  switch (type) {
  case ncclFloat32:
    return MPI_FLOAT;
  case ncclFloat64:
    return MPI_DOUBLE;
  case ncclInt64:
    return MPI_INT64_T;
  case ncclInt32:
    return MPI_INT32_T;
  default:
    return MPI_UINT8_T;
  }
}

} // namespace

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  std::memset(id, 0, sizeof *id);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int, ncclUniqueId id, int) {
  MPI_Comm group;
  std::memcpy(&group, &id, sizeof group);
  *comm = new ncclComm;
  MPI_Comm_dup(group, &(*comm)->comm);
  return ncclSuccess;
}
// Collectives run to the end when they are called: none is ever pending
// with an error.
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *asyncError) {
  *asyncError = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  MPI_Comm_free(&comm->comm);
  delete comm;
  return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t result) {
  return result == ncclSuccess ? "no error" : "error (host emulation)";
}
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t, ncclComm_t comm,
                           cudaStream_t) {
  MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, count, mpiType(type),
                MPI_SUM, comm->comm);
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm, cudaStream_t) {
  MPI_Allgather(send, count, mpiType(type), recv, count, mpiType(type),
                comm->comm);
  return ncclSuccess;
}
// Blocking point-to-point messages: every rank runs its transfers in the
// one program's order, so each finds its peer (Collectives.h).
ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t comm, cudaStream_t) {
  MPI_Send(send, count, mpiType(type), peer, 0, comm->comm);
  return ncclSuccess;
}
ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t) {
  MPI_Recv(recv, count, mpiType(type), peer, 0, comm->comm, MPI_STATUS_IGNORE);
  return ncclSuccess;
}
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t,
                               ncclComm_t comm, cudaStream_t) {
  MPI_Reduce_scatter_block(send, recv, count, mpiType(type), MPI_SUM,
                           comm->comm);
  return ncclSuccess;
}

} // extern "C"
