//===- KernelsReduction.cu - sum, mean and max over axes on the GPU -------===//
//
// Part of the Cleave runtime's cuda backend: ReduceOverAxes of
// ReductionBodies.h, one item per output element, or per part of one when
// there are too few outputs to keep the GPU busy.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/ReductionBodies.h"
#include "runtime/cuda/KernelScratch.h"

namespace cleave::rt::cuda {

void reduce(ReduceKind kind, const float *in, const Shape &inShape,
            const int64_t *axes, int numAxes, float *out) {
  auto f = body::ReduceOverAxes<>::make(kind, in, inShape, axes, numAxes, out);
  if (f.outCount == 0)
    return;
  // Nothing reduced: a copy, exactly as the cpu target makes it (a sum
  // from 0.0 would turn -0.0 into 0.0).
  if (f.redCount == 1) {
    copyN(in, f.outCount, out);
    return;
  }
  // Enough items for every SM of a large GPU, none over too few inputs
  // (below that, the merge costs more than the split saves).
  f.splitInto(scratch::reductionParts(f.outCount, f.redCount));
  if (f.parts == 1) {
    launch(f.items(), f);
    return;
  }
  DeviceScratch partial(f.items() * static_cast<int64_t>(sizeof(double)));
  f.partial = partial.as<double>();
  launch(f.items(), f);
  launch(f.outCount,
         body::ReduceMerge{f.partial, out, f.acc, f.parts, f.redCount});
}

} // namespace cleave::rt::cuda
