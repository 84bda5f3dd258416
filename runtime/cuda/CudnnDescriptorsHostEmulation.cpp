//===- CudnnDescriptorsHostEmulation.cpp - cuDNN's handle and descriptors -===//
//
// Part of the host emulation of the cuda target (see CudnnHostEmulation.cpp,
// which computes the convolutions): the handle, the error strings, and the
// descriptors, checked as cuDNN documents and kept in this emulation's
// structs (CudnnHostEmulation.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudnnHostEmulation.h"

#include <cstring>
#include <limits>
#include <string>
#include <utility>

using namespace cleave::rt::cuda::emulation;

namespace {

/// Why the last failing call failed, for cudnnGetErrorString.
std::string lastFailureText;

} // namespace

cudnnStatus_t cleave::rt::cuda::emulation::fail(cudnnStatus_t status,
                                                std::string why) {
  lastFailureText = std::move(why);
  return status;
}

void cleave::rt::cuda::emulation::clearFailure() { lastFailureText.clear(); }

const std::string &cleave::rt::cuda::emulation::lastFailure() {
  return lastFailureText;
}

int64_t cleave::rt::cuda::emulation::count(const int *dims, int rank) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    n *= dims[d];
  return n;
}

extern "C" {

//===----------------------------------------------------------------------===//
// Handle and errors
//===----------------------------------------------------------------------===//

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
  static std::string message;
  switch (status) {
  case CUDNN_STATUS_SUCCESS:
    return "CUDNN_STATUS_SUCCESS";
  case CUDNN_STATUS_BAD_PARAM:
    message = "CUDNN_STATUS_BAD_PARAM";
    break;
  case CUDNN_STATUS_NOT_SUPPORTED:
    message = "CUDNN_STATUS_NOT_SUPPORTED";
    break;
  default:
    message = "cuDNN status " + std::to_string(status);
    break;
  }
  message += " (host emulation" +
             (lastFailure().empty() ? std::string() : ": " + lastFailure()) +
             ")";
  return message.c_str();
}

//===----------------------------------------------------------------------===//
// Descriptors
//===----------------------------------------------------------------------===//

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *desc) {
  if (!desc)
    return fail(CUDNN_STATUS_BAD_PARAM, "a null descriptor pointer");
  *desc = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t desc,
                                         cudnnDataType_t type, int nbDims,
                                         const int dims[],
                                         const int strides[]) {
  if (!desc || !dims || !strides)
    return fail(CUDNN_STATUS_BAD_PARAM, "a null descriptor or array");
  if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "a tensor of rank " + std::to_string(nbDims));
  for (int d = 0; d < nbDims; ++d)
    if (dims[d] <= 0 || strides[d] <= 0)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "a tensor extent or stride that is not positive");
  // cuDNN's limit on a descriptor's size: 2 Giga-elements.
  if (count(dims, nbDims) > std::numeric_limits<int32_t>::max())
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "a tensor of 2^31 elements or more");
  desc->rank = nbDims;
  desc->type = type;
  std::memcpy(desc->dims, dims, nbDims * sizeof(int));
  std::memcpy(desc->strides, strides, nbDims * sizeof(int));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *desc) {
  if (!desc)
    return fail(CUDNN_STATUS_BAD_PARAM, "a null descriptor pointer");
  *desc = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t desc,
                                         cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int nbDims,
                                         const int dims[]) {
  if (!desc || !dims)
    return fail(CUDNN_STATUS_BAD_PARAM, "a null descriptor or array");
  if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "a filter of rank " + std::to_string(nbDims));
  for (int d = 0; d < nbDims; ++d)
    if (dims[d] <= 0)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "a filter extent that is not positive");
  desc->rank = nbDims;
  desc->type = type;
  desc->format = format;
  std::memcpy(desc->dims, dims, nbDims * sizeof(int));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *desc) {
  if (!desc)
    return fail(CUDNN_STATUS_BAD_PARAM, "a null descriptor pointer");
  *desc = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t
cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t desc,
                                              int arrayLength, const int pads[],
                                              const int strides[],
                                              const int dilations[],
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  if (!desc || !pads || !strides || !dilations)
    return fail(CUDNN_STATUS_BAD_PARAM, "a null descriptor or array");
  if (arrayLength < 1)
    return fail(CUDNN_STATUS_BAD_PARAM,
                "a convolution of " + std::to_string(arrayLength) + " dims");
  if (arrayLength > CUDNN_DIM_MAX - 2)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "a convolution of " + std::to_string(arrayLength) + " dims");
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
    return fail(CUDNN_STATUS_BAD_PARAM, "an unknown convolution mode");
  for (int i = 0; i < arrayLength; ++i)
    if (pads[i] < 0 || strides[i] <= 0 || dilations[i] <= 0)
      return fail(CUDNN_STATUS_BAD_PARAM,
                  "a negative pad, or a stride or dilation below 1");
  desc->spatial = arrayLength;
  std::memcpy(desc->pad, pads, arrayLength * sizeof(int));
  std::memcpy(desc->stride, strides, arrayLength * sizeof(int));
  std::memcpy(desc->dilation, dilations, arrayLength * sizeof(int));
  desc->mode = mode;
  desc->computeType = computeType;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc,
                                            int groupCount) {
  if (!desc || groupCount < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, "a group count below 1");
  desc->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                          cudnnMathType_t math) {
  if (!desc ||
      (math != CUDNN_DEFAULT_MATH && math != CUDNN_TENSOR_OP_MATH &&
       math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && math != CUDNN_FMA_MATH))
    return fail(CUDNN_STATUS_BAD_PARAM, "an unknown math type");
  desc->math = math;
  return CUDNN_STATUS_SUCCESS;
}

} // extern "C"
