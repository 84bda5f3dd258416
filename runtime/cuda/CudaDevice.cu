//===- CudaDevice.cu - this process's GPU, its streams and memory ---------===//
//
// Part of the Cleave runtime's cuda backend. Chooses one GPU per rank by
// node-local rank, owns the compute and communication streams and the
// cuBLAS handle, reserves the one block of device memory the compiler's
// plan asks for, and moves tensors between the host copies the driver keeps
// and the device (the DeviceHooks of Program.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaCollectives.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/KernelScratch.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/Collectives.h"
#include "runtime/HostDevice.h"
#include "runtime/KernelInstantiations.h"
#include "runtime/MeshDetail.h"
#include "runtime/Program.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace cleave::rt::cuda {

namespace {

struct DeviceState {
  int device = -1;
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublasLt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  char *block = nullptr;
  /// The kernel-scratch region at the end of the block, and how much of it
  /// the live DeviceScratch objects hold.
  char *kernelScratch = nullptr;
  int64_t kernelScratchBytes = 0;
  int64_t kernelScratchTop = 0;
  /// --trace's marks: events on the compute stream, the first the origin.
  std::vector<cudaEvent_t> traceEvents;
};
DeviceState state;

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
  return text;
}

/// This process's rank among the processes on its node, and their number
/// (0 of 1 for a program run without mpirun).
void nodeLocalRank(int &rank, int &size) {
  rank = 0;
  size = 1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &node);
  MPI_Comm_rank(node, &rank);
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
}

bool start(std::string &error) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    // Without a GPU (or its driver) the runtime reports "driver version is
    // insufficient" or "no CUDA-capable device": say what that means here.
    error =
        std::string("no usable CUDA GPU on this machine (CUDA says: ") +
        (status != cudaSuccess ? cudaGetErrorString(status) : "no devices") +
        "); this program was compiled with --target cuda: run it on a "
        "machine with an NVIDIA GPU and driver, or recompile without "
        "--target cuda to train on the cpu";
    return false;
  }
  int local = 0, localSize = 1;
  nodeLocalRank(local, localSize);
  if (localSize > count) {
    error = std::to_string(localSize) + " ranks run on this node but it has " +
            std::to_string(count) + " GPU" + (count == 1 ? "" : "s") +
            "; start at most one rank per GPU (mpirun --map-by ppr:" +
            std::to_string(count) + ":node)";
    return false;
  }
  state.device = local;
  CLEAVE_CUDA_CHECK(cudaSetDevice(state.device));
  CLEAVE_CUDA_CHECK(
      cudaStreamCreateWithFlags(&state.compute, cudaStreamNonBlocking));
  CLEAVE_CUDA_CHECK(
      cudaStreamCreateWithFlags(&state.comm, cudaStreamNonBlocking));
  CLEAVE_CUBLAS_CHECK(cublasCreate(&state.cublas));
  CLEAVE_CUBLAS_CHECK(cublasSetStream(state.cublas, state.compute));
  CLEAVE_CUBLAS_CHECK(cublasLtCreate(&state.cublasLt));
  CLEAVE_CUDNN_CHECK(cudnnCreate(&state.cudnn));
  CLEAVE_CUDNN_CHECK(cudnnSetStream(state.cudnn, state.compute));
  return true;
}

char *reserve(int64_t bytes, int64_t persistentBytes, int64_t scratchBytes,
              int64_t kernelScratchBytes, bool report, std::string &error) {
  size_t freeBytes = 0, totalBytes = 0;
  CLEAVE_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  cudaDeviceProp properties;
  CLEAVE_CUDA_CHECK(cudaGetDeviceProperties(&properties, state.device));
  std::string what = mib(bytes) + " of device memory (parameters and state " +
                     mib(persistentBytes) + ", scratch " + mib(scratchBytes) +
                     ", kernel workspaces " + mib(kernelScratchBytes) +
                     ", inputs and gradients the rest)";
  if (report)
    std::fprintf(stderr, "GPU %d (%s): needs %s; %s free of %s\n", state.device,
                 properties.name, what.c_str(), mib(freeBytes).c_str(),
                 mib(totalBytes).c_str());
  if (static_cast<size_t>(bytes) > freeBytes) {
    error = "the step needs " + what + " but GPU " +
            std::to_string(state.device) + " (" + properties.name + ") has " +
            mib(freeBytes) +
            " free; shard the model over more GPUs (--mesh with "
            "--strategy zero3 or megatron) or use a smaller batch";
    return nullptr;
  }
  void *block = nullptr;
  if (cudaMalloc(&block, bytes ? bytes : 256) != cudaSuccess) {
    error = "cudaMalloc of " + what + " failed on GPU " +
            std::to_string(state.device);
    return nullptr;
  }
  CLEAVE_CUDA_CHECK(cudaMemset(block, 0, bytes));
  state.block = static_cast<char *>(block);
  state.kernelScratch = state.block + bytes - kernelScratchBytes;
  state.kernelScratchBytes = kernelScratchBytes;
  return state.block;
}

void *allocateHost(int64_t bytes) {
  void *host = nullptr;
  CLEAVE_CUDA_CHECK(cudaMallocHost(&host, bytes));
  return host;
}

void freeHost(void *host) { CLEAVE_CUDA_CHECK(cudaFreeHost(host)); }

void upload(void *device, const void *host, int64_t bytes) {
  CLEAVE_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice,
                                    state.compute));
}

void download(void *host, const void *device, int64_t bytes) {
  CLEAVE_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost,
                                    state.compute));
  CLEAVE_CUDA_CHECK(cudaStreamSynchronize(state.compute));
}

/// A trace mark: an event recorded where the compute stream now is (its
/// time is when the GPU gets there, not when the host queues it).
int64_t traceMark() {
  cudaEvent_t event;
  CLEAVE_CUDA_CHECK(cudaEventCreate(&event));
  CLEAVE_CUDA_CHECK(cudaEventRecord(event, state.compute));
  state.traceEvents.push_back(event);
  return static_cast<int64_t>(state.traceEvents.size()) - 1;
}

/// A mark's time after the first mark, in microseconds (CUDA gives
/// milliseconds at about half a microsecond's resolution).
double traceMicroseconds(int64_t mark) {
  cudaEvent_t event = state.traceEvents[mark];
  CLEAVE_CUDA_CHECK(cudaEventSynchronize(event));
  float ms = 0;
  CLEAVE_CUDA_CHECK(
      cudaEventElapsedTime(&ms, state.traceEvents.front(), event));
  return ms * 1000.0;
}

void stop() {
  CLEAVE_CUDA_CHECK(cudaStreamSynchronize(state.compute));
  CLEAVE_CUDA_CHECK(cudaStreamSynchronize(state.comm));
  for (cudaEvent_t event : state.traceEvents)
    CLEAVE_CUDA_CHECK(cudaEventDestroy(event));
  destroyCommunicators();
  CLEAVE_CUBLAS_CHECK(cublasDestroy(state.cublas));
  CLEAVE_CUBLAS_CHECK(cublasLtDestroy(state.cublasLt));
  CLEAVE_CUDNN_CHECK(cudnnDestroy(state.cudnn));
  CLEAVE_CUDA_CHECK(cudaFree(state.block));
  CLEAVE_CUDA_CHECK(cudaStreamDestroy(state.compute));
  CLEAVE_CUDA_CHECK(cudaStreamDestroy(state.comm));
  state = DeviceState();
}

/// *dst = value: one work item, so that writing a scalar never waits.
struct SetScalar {
  float *dst;
  float value;
  CLEAVE_HD void operator()(int64_t) const { *dst = value; }
};

} // namespace

cudaStream_t computeStream() { return state.compute; }
cudaStream_t commStream() { return state.comm; }
cublasHandle_t cublasHandle() { return state.cublas; }
cublasLtHandle_t cublasLtHandle() { return state.cublasLt; }
cudnnHandle_t cudnnHandle() { return state.cudnn; }

void cudaFailure(const char *call, const char *file, int line,
                 const char *error) {
  std::fprintf(stderr,
               "error: %s failed on GPU %d: %s (%s:%d); this is a fault of "
               "the GPU, its driver or cleave, not of the model or data\n",
               call, state.device, error, file, line);
  std::fflush(stderr);
  std::_Exit(1);
}

DeviceScratch::DeviceScratch(int64_t bytes) {
  previousTop_ = state.kernelScratchTop;
  if (bytes <= 0)
    return;
  int64_t size = scratch::aligned(bytes);
  if (previousTop_ + size > state.kernelScratchBytes) {
    char message[200];
    std::snprintf(message, sizeof message,
                  "a kernel needs %lld bytes of scratch with %lld of the "
                  "%lld the compiler planned in use "
                  "(runtime/cuda/KernelScratch.h)",
                  static_cast<long long>(size),
                  static_cast<long long>(previousTop_),
                  static_cast<long long>(state.kernelScratchBytes));
    cudaFailure("DeviceScratch", __FILE__, __LINE__, message);
  }
  data_ = state.kernelScratch + previousTop_;
  state.kernelScratchTop = previousTop_ + size;
}

DeviceScratch::~DeviceScratch() { state.kernelScratchTop = previousTop_; }

const DeviceHooks &cudaDeviceHooks() {
  static const DeviceHooks hooks{start,    reserve,  allocateHost,
                                 freeHost, upload,   download,
                                 stop,     traceMark, traceMicroseconds};
  return hooks;
}

template <typename T> void copyN(const T *src, int64_t n, T *dst) {
  if (n > 0 && src != dst)
    CLEAVE_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T),
                                      cudaMemcpyDeviceToDevice, state.compute));
}

void fillN(bool *dst, int64_t n, bool value) {
  if (n > 0)
    CLEAVE_CUDA_CHECK(cudaMemsetAsync(dst, value ? 1 : 0, n, state.compute));
}

/// cudaStreamSynchronize(compute), under the collective watchdog: a step
/// whose NCCL collectives wait for a peer that stopped would block there
/// forever. Polls the stream's progress and NCCL's asynchronous errors;
/// after --collective-timeout seconds without the stream finishing it
/// aborts the communicators and the job, as NCCL's watchdog does.
void waitForCompute() {
  cudaEvent_t done;
  CLEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CLEAVE_CUDA_CHECK(cudaEventRecord(done, state.compute));
  using Clock = std::chrono::steady_clock;
  int64_t limit = collectiveTimeout();
  Clock::time_point start = Clock::now();
  auto sleep = std::chrono::microseconds(20);
  for (;;) {
    cudaError_t status = cudaEventQuery(done);
    if (status == cudaSuccess)
      break;
    if (status != cudaErrorNotReady)
      CLEAVE_CUDA_CHECK(status);
    checkCommunicators();
    int64_t waited = std::chrono::duration_cast<std::chrono::seconds>(
                         Clock::now() - start)
                         .count();
    if (limit > 0 && waited >= limit) {
      std::fprintf(stderr,
                   "%s: error: rank %d: the step's GPU work (its NCCL "
                   "collectives) made no progress for %lld s; another rank "
                   "has stopped or is stuck; aborting the job "
                   "(--collective-timeout)\n",
                   detail::meshProgramName(), worldRank(),
                   static_cast<long long>(waited));
      std::fflush(stderr);
      abortCommunicators();
      MPI_Abort(MPI_COMM_WORLD, 1);
      std::_Exit(1);
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(2 * sleep, std::chrono::microseconds(1000));
  }
  CLEAVE_CUDA_CHECK(cudaEventDestroy(done));
}

template <typename T> T readScalar(const T *src) {
  T value{};
  CLEAVE_CUDA_CHECK(cudaMemcpyAsync(&value, src, sizeof(T),
                                    cudaMemcpyDeviceToHost, state.compute));
  waitForCompute();
  return value;
}

void writeScalar(float *dst, float value) { launch(1, SetScalar{dst, value}); }

void synchronize() { waitForCompute(); }

#define CLEAVE_INSTANTIATE_HOST_ACCESS(T)                                      \
  template void copyN<T>(const T *, int64_t, T *);                             \
  template T readScalar<T>(const T *);
CLEAVE_FOR_EACH_ELEMENT_TYPE(CLEAVE_INSTANTIATE_HOST_ACCESS)
#undef CLEAVE_INSTANTIATE_HOST_ACCESS

} // namespace cleave::rt::cuda
