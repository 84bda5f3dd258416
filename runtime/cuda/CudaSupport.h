//===- CudaSupport.h - streams, handles, errors (cuda backend) --*- C++ -*-===//
//
// Part of the Cleave runtime's cuda backend: what its kernels and
// collectives share. CudaDevice.cu owns the objects (created once the
// program has chosen its GPU, see cudaDeviceHooks()).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_CUDASUPPORT_H
#define CLEAVE_RUNTIME_CUDA_CUDASUPPORT_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

namespace cleave::rt {
struct DeviceHooks;
} // namespace cleave::rt

namespace cleave::rt::cuda {

/// The stream every kernel of the step runs on, in program order.
cudaStream_t computeStream();
/// The stream collectives run on; ordered against the compute stream with
/// events (CudaCollectives.cu).
cudaStream_t commStream();
/// The cuBLAS handle, bound to the compute stream.
cublasHandle_t cublasHandle();
/// The cuBLASLt handle (GEMMs with fused epilogues; takes the stream per
/// call).
cublasLtHandle_t cublasLtHandle();
/// The cuDNN handle, bound to the compute stream.
cudnnHandle_t cudnnHandle();

/// A CUDA call failed: names the call and the error, exits with status 1.
/// A failure here is a fault of the machine or of cleave, not of the
/// user's input, which the program checked before starting.
[[noreturn]] void cudaFailure(const char *call, const char *file, int line,
                              const char *error);

#define CLEAVE_CUDA_CHECK(call)                                                \
  do {                                                                         \
    cudaError_t cleaveError_ = (call);                                         \
    if (cleaveError_ != cudaSuccess)                                           \
      ::cleave::rt::cuda::cudaFailure(#call, __FILE__, __LINE__,               \
                                      cudaGetErrorString(cleaveError_));       \
  } while (0)

#define CLEAVE_CUBLAS_CHECK(call)                                              \
  do {                                                                         \
    cublasStatus_t cleaveStatus_ = (call);                                     \
    if (cleaveStatus_ != CUBLAS_STATUS_SUCCESS)                                \
      ::cleave::rt::cuda::cudaFailure(#call, __FILE__, __LINE__,               \
                                      cublasGetStatusString(cleaveStatus_));   \
  } while (0)

#define CLEAVE_CUDNN_CHECK(call)                                               \
  do {                                                                         \
    cudnnStatus_t cleaveStatus_ = (call);                                      \
    if (cleaveStatus_ != CUDNN_STATUS_SUCCESS)                                 \
      ::cleave::rt::cuda::cudaFailure(#call, __FILE__, __LINE__,               \
                                      cudnnGetErrorString(cleaveStatus_));     \
  } while (0)

/// Device memory a kernel borrows for one call (im2col columns, a gather's
/// staging buffer), from the kernel-scratch region at the end of the device
/// block (KernelScratch.h), last taken first given back. Given back when
/// the object dies: the next call's kernels, enqueued after this call's on
/// the same stream (collectives make the compute stream wait for theirs),
/// reuse it only after these are done.
class DeviceScratch {
public:
  explicit DeviceScratch(int64_t bytes);
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch &) = delete;
  DeviceScratch &operator=(const DeviceScratch &) = delete;
  template <typename T> T *as() const { return static_cast<T *>(data_); }

private:
  void *data_ = nullptr;
  /// The region's use before this object took its part.
  int64_t previousTop_ = 0;
};

/// The device address of a __device__ array (a generated program's
/// constants).
template <typename T, size_t N> const T *deviceAddress(const T (&symbol)[N]) {
  void *address = nullptr;
  CLEAVE_CUDA_CHECK(cudaGetSymbolAddress(&address, symbol));
  return static_cast<const T *>(address);
}

/// What the driver (Driver.cpp) calls to run the step on this process's GPU.
const DeviceHooks &cudaDeviceHooks();

} // namespace cleave::rt::cuda

#endif // CLEAVE_RUNTIME_CUDA_CUDASUPPORT_H
