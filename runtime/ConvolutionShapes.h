//===- ConvolutionShapes.h - a grouped convolution --------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The shapes both targets'
// convolution kernels (KernelsConvolution.cpp, cuda/KernelsConvolution.cu)
// derive from an op's operands before they choose how to compute it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CONVOLUTIONSHAPES_H
#define CLEAVE_RUNTIME_CONVOLUTIONSHAPES_H

#include "runtime/ConvolutionBodies.h"
#include "runtime/Shape.h"

#include <cstdint>

namespace cleave::rt {

/// Shapes of a grouped convolution.
struct ConvDims {
  int64_t batch, inChannels, outChannels, groupIn, groupOut, kRows;
  ConvDims(const Shape &xShape, const Shape &wShape, int64_t group,
           const body::Window3 &w) {
    batch = xShape.dims[0];
    inChannels = xShape.dims[1];
    outChannels = wShape.dims[0];
    groupIn = inChannels / group;
    groupOut = outChannels / group;
    kRows = groupIn * w.kernelSize();
  }
};

/// True when the convolution reads x unchanged as its im2col matrix.
inline bool isPointwise(const body::Window3 &w) {
  for (int d = 0; d < 3; ++d)
    if (w.kernel[d] != 1 || w.stride[d] != 1 || w.padBegin[d] != 0 ||
        w.out[d] != w.in[d])
      return false;
  return true;
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CONVOLUTIONSHAPES_H
