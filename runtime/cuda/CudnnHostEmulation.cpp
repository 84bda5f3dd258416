//===- CudnnHostEmulation.cpp - the cuDNN calls, on the host --------------===//
//
// Part of the host emulation of the cuda target (see CudaHostEmulation.cpp):
// the cuDNN functions the runtime calls, with cuDNN's documented semantics,
// on host memory.
//
//===----------------------------------------------------------------------===//

#include <cudnn.h>

extern "C" {

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  static char emulated;
  *handle = reinterpret_cast<cudnnHandle_t>(&emulated);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetStream(cudnnHandle_t, cudaStream_t) {
  return CUDNN_STATUS_SUCCESS;
}
const char *cudnnGetErrorString(cudnnStatus_t status) {
  return status == CUDNN_STATUS_SUCCESS ? "success" : "error (host emulation)";
}

} // extern "C"
