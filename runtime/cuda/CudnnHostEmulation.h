//===- CudnnHostEmulation.h - the emulated cuDNN's descriptors --*- C++ -*-===//
//
// Part of the host emulation of the cuda target: what the emulated cuDNN's
// descriptor calls (CudnnDescriptorsHostEmulation.cpp) and its convolutions
// (CudnnHostEmulation.cpp) share. Included by those two files only.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_CUDNNHOSTEMULATION_H
#define CLEAVE_RUNTIME_CUDA_CUDNNHOSTEMULATION_H

#include <cudnn.h>

#include <cstdint>
#include <string>

/// An emulated tensor descriptor (cudnnSetTensorNdDescriptor).
struct cudnnTensorStruct {
  int rank = 0; ///< 0 until set
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int dims[CUDNN_DIM_MAX] = {};
  int strides[CUDNN_DIM_MAX] = {};
};

/// An emulated filter descriptor (cudnnSetFilterNdDescriptor).
struct cudnnFilterStruct {
  int rank = 0; ///< 0 until set
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int dims[CUDNN_DIM_MAX] = {};
};

/// An emulated convolution descriptor, with cuDNN's defaults for what
/// cudnnSetConvolutionNdDescriptor does not set.
struct cudnnConvolutionStruct {
  int spatial = 0; ///< 0 until set
  int pad[CUDNN_DIM_MAX - 2] = {};
  int stride[CUDNN_DIM_MAX - 2] = {};
  int dilation[CUDNN_DIM_MAX - 2] = {};
  cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
  cudnnDataType_t computeType = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

namespace cleave::rt::cuda::emulation {

/// Records why a call fails, for cudnnGetErrorString, and returns `status`.
cudnnStatus_t fail(cudnnStatus_t status, std::string why);
/// Forgets the last failure (a call whose descriptors were read anew).
void clearFailure();
/// Why the last failing call failed; empty when none did since
/// clearFailure.
const std::string &lastFailure();

/// The number of elements of extents `dims`.
int64_t count(const int *dims, int rank);

} // namespace cleave::rt::cuda::emulation

#endif // CLEAVE_RUNTIME_CUDA_CUDNNHOSTEMULATION_H
