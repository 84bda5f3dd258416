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

namespace cleave::rt::cuda {
namespace {

/// Items that keep every SM of a large GPU busy, and the fewest reduced
/// elements worth an item of their own (below it, the merge costs more than
/// the split saves).
constexpr int64_t kTargetItems = int64_t(1) << 16;
constexpr int64_t kMinChunk = 2048;

} // namespace

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
  if (f.outCount < kTargetItems)
    f.splitInto(std::min((kTargetItems + f.outCount - 1) / f.outCount,
                         (f.redCount + kMinChunk - 1) / kMinChunk));
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
