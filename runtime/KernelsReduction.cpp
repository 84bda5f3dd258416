//===- KernelsReduction.cpp - sum, mean and max over axes -----------------===//
//
// Part of the Cleave runtime. The work items of ReductionBodies.h, the same
// ones the cuda target launches, run on the OpenMP threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"
#include "runtime/ReductionBodies.h"

#include <algorithm>
#include <vector>

namespace cleave::rt {
namespace {

/// Adjacent outputs per work item where the input's innermost dim is kept
/// (ReduceOverAxes::tileOutputs).
constexpr int kReduceLanes = 64;

} // namespace

void reduce(ReduceKind kind, const float *in, const Shape &inShape,
            const int64_t *axes, int numAxes, float *out) {
  auto f = body::ReduceOverAxes<kReduceLanes>::make(kind, in, inShape, axes,
                                                    numAxes, out);
  if (f.outCount == 0)
    return;
  // Nothing reduced: a copy (a sum from 0.0 would turn -0.0 into 0.0).
  if (f.redCount == 1) {
    std::copy(in, in + f.outCount, out);
    return;
  }
  int64_t work = f.outCount * f.redCount;
  // Fewer outputs than threads (a whole tensor to a scalar): each output's
  // reduction is split into a part per thread, merged in part order, so the
  // result does not depend on how the threads are scheduled.
  int threads = detail::maxThreads();
  if (f.outCount < threads && work > detail::kParallelGrain)
    f.splitInto(threads);
  if (f.parts == 1) {
    f.tileOutputs();
    detail::runItems(f.items(), work, f);
    return;
  }
  std::vector<double> partial(f.items());
  f.partial = partial.data();
  detail::runItems(f.items(), work, f);
  detail::runItems(
      f.outCount, 0,
      body::ReduceMerge{f.partial, out, f.acc, f.parts, f.redCount});
}

} // namespace cleave::rt
