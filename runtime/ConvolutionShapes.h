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

#include <algorithm>

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

/// Samples (of `batch`) whose im2col matrices (`kRows` x `oSize`) one GEMM
/// takes side by side: one, unless
/// a sample's output is small (the late layers of a CNN, down to 1x1,
/// where a per-sample product is a matrix-vector product that reads the
/// whole weight for a few columns); then enough for kMinColumns columns,
/// within kMaxColumnFloats of im2col matrix. The planner times the GEMMs
/// this makes (planner/OpCost.h, Im2colConv).
inline int64_t samplesPerGemm(int64_t batch, int64_t kRows, int64_t oSize) {
  constexpr int64_t kMinColumns = 256;
  constexpr int64_t kMaxColumnFloats = int64_t{1} << 22;
  if (oSize >= kMinColumns || batch <= 1)
    return 1;
  int64_t wanted = (kMinColumns + oSize - 1) / oSize;
  int64_t fits = std::max<int64_t>(1, kMaxColumnFloats /
                                          std::max<int64_t>(1, kRows * oSize));
  return std::max<int64_t>(1, std::min({batch, wanted, fits}));
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CONVOLUTIONSHAPES_H
