//===- CublasLtHostEmulation.cpp - the cuBLASLt calls, on the host --------===//
//
// Part of the host emulation of the cuda target (see CudaHostEmulation.cpp):
// the cuBLASLt functions the runtime calls, with cuBLASLt's documented
// semantics, on host memory.
//
//===----------------------------------------------------------------------===//

#include <cublasLt.h>

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  static char emulated;
  *handle = reinterpret_cast<cublasLtHandle_t>(&emulated);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t) {
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
