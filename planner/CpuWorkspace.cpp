//===- CpuWorkspace.cpp - memory the cpu kernels hold beside the plan -----===//

#include "planner/CpuWorkspace.h"

#include "dialects/cleave/CleaveDialect.h"
#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/RuntimeShape.h"
#include "planner/CpuConvolution.h"
#include "runtime/ConvolutionShapes.h"
#include "runtime/GemmDispatch.h"
#include "runtime/MatmulGeometry.h"
#include "runtime/OneDnnConvolution.h"

#include <algorithm>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The stage `op` runs on: its own or its nearest ancestor's; -1 for all.
int64_t stageOf(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto at = op->getAttrOfType<IntegerAttr>(CleaveDialect::kStageAttrName))
      return at.getInt();
  return -1;
}

} // namespace

std::vector<int64_t> cpuKernelWorkspaceBytes(func::FuncOp step,
                                             const FusionPlan &fusion,
                                             int64_t stages, int threads) {
  // Per stage, each workspace's largest call (oneDNN's, then the strided
  // products' buffer; the step calls those on one thread).
  using Slots = std::array<int64_t, rt::kOneDnnWorkspaces + 1>;
  std::vector<Slots> largest(std::max<int64_t>(stages, 1), Slots{});
  auto note = [&](Operation *op, int slot, int64_t bytes) {
    int64_t stage = stages > 1 ? stageOf(op) : -1;
    for (int64_t s = 0; s < static_cast<int64_t>(largest.size()); ++s)
      if (stage < 0 || stage == s)
        largest[s][slot] = std::max(largest[s][slot], bytes);
  };
  step.walk([&](Operation *op) {
    if (auto matmul = dyn_cast<MatmulOp>(op);
        matmul && runsStrided(matmul, fusion)) {
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(matmul.getType()).getShape();
      size_t r = shape.size();
      int64_t count = 1;
      for (int64_t d : shape.drop_back(2))
        count *= d;
      int64_t k =
          cast<RankedTensorType>(matmul.getLhs().getType()).getShape().back();
      note(
          op, rt::kOneDnnWorkspaces,
          rt::stridedProductBufferFloats(count, shape[r - 2], shape[r - 1], k) *
              int64_t(sizeof(float)));
      return;
    }
    std::optional<CpuConvCall> call = cpuConvCall(op, threads);
    if (!call || !call->oneDnn)
      return;
    int64_t bytes[rt::kOneDnnWorkspaces];
    rt::oneDnnConvWorkspaces(
        call->pass, call->x, call->w, call->y, call->strides, call->pads,
        call->dilations, call->group, call->bias, call->layout, threads, bytes);
    for (int i = 0; i < rt::kOneDnnWorkspaces; ++i)
      note(op, i, bytes[i]);
  });
  std::vector<int64_t> total;
  for (const Slots &slots : largest) {
    int64_t sum = 0;
    for (int64_t bytes : slots)
      sum += bytes;
    total.push_back(sum);
  }
  return total;
}

namespace {

/// The largest packing of the products one stage's ranks run.
struct StagePacking {
  /// Products on thread 0, alone or as its block of a split one.
  int64_t first = 0;
  /// Blocks the other threads run at the same time.
  int64_t others = 0;
};

/// The OpenBLAS calls of one runtime product, noted in `into` as gemm()
/// makes them (GemmDispatch.h): none where the skinny kernel runs it, one
/// on the calling thread, or a block per thread; `concurrent` where the
/// caller already runs it on one of `threads` threads beside others.
void notePacking(StagePacking &into, const rt::BlasBlocking &blocking,
                 int threads, bool transA, bool transB, int64_t m, int64_t n,
                 int64_t k, bool alphaNonZero, bool concurrent) {
  if (!transA && transB && alphaNonZero && rt::skinnyGemmShapePays(m, n, k))
    return;
  auto bytes = [&](int64_t rows, int64_t cols) {
    return rt::blasPackingBytes(blocking, transA, transB, rows, cols, k);
  };
  if (concurrent) {
    int64_t each = bytes(m, n);
    into.first = std::max(into.first, each);
    if (threads > 1)
      into.others = std::max(into.others, each);
    return;
  }
  if (threads == 1 || m * n * k < rt::kThreadedProduct) {
    into.first = std::max(into.first, bytes(m, n));
    return;
  }
  rt::GemmSplit split(m, n);
  for (int64_t t = 0; t < threads; ++t) {
    int64_t extent = split.last(t, threads) - split.first(t, threads);
    if (extent <= 0)
      continue;
    int64_t each = split.byRows ? bytes(extent, n) : bytes(m, extent);
    int64_t &slot = t == 0 ? into.first : into.others;
    slot = std::max(slot, each);
  }
}

int64_t product(const rt::Shape &shape, int from) {
  int64_t p = 1;
  for (int d = from; d < shape.rank; ++d)
    p *= shape.dims[d];
  return p;
}

} // namespace

bool runsSkinnyBackward(GemmOp inputGradient) {
  ArrayRef<int64_t> dy =
      cast<ShapedType>(inputGradient.getA().getType()).getShape();
  ArrayRef<int64_t> w =
      cast<ShapedType>(inputGradient.getB().getType()).getShape();
  return rt::skinnyBackwardShapePays(dy[0], w[0], w[1]);
}

std::vector<int64_t>
cpuBlasPackingBytes(func::FuncOp step, const FusionPlan &fusion,
                    const llvm::DenseSet<Operation *> &onSkinnyKernels,
                    int64_t stages, int threads,
                    const rt::BlasBlocking &blocking) {
  std::vector<StagePacking> largest(std::max<int64_t>(stages, 1));
  if (!blocking.known())
    return std::vector<int64_t>(largest.size(), 0);
  threads = std::max(threads, 1);
  step.walk([&](Operation *op) {
    int64_t stage = stages > 1 ? stageOf(op) : -1;
    auto note = [&](bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                    bool alphaNonZero, bool concurrent) {
      for (int64_t s = 0; s < static_cast<int64_t>(largest.size()); ++s)
        if (stage < 0 || stage == s)
          notePacking(largest[s], blocking, threads, transA, transB, m, n, k,
                      alphaNonZero, concurrent);
    };
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (onSkinnyKernels.contains(op))
        return;
      ArrayRef<int64_t> a = cast<ShapedType>(gemm.getA().getType()).getShape();
      ArrayRef<int64_t> r = cast<ShapedType>(gemm.getType()).getShape();
      // (Under plain SGD the update's product keeps this shape and
      // transposes: EmitTraining.cpp.)
      note(gemm.getTransA(), gemm.getTransB(), r[0], r[1],
           gemm.getTransA() ? a[0] : a[1],
           gemm.getAlpha().convertToFloat() != 0.0f, false);
      return;
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      rt::MatmulGeometry g(runtimeShape(matmul.getLhs()),
                           runtimeShape(matmul.getRhs()));
      if (g.empty())
        return;
      if (!runsStrided(matmul, fusion)) {
        if (g.isTallProduct())
          note(false, false, g.batchCount * g.m, g.n, g.k, true, false);
        else
          note(false, false, g.m, g.n, g.k, true, false);
        return;
      }
      // productsThroughStrides (KernelsLinalg.cpp): a matrix whose columns
      // are not contiguous is its transpose; a result so is written as c^T.
      auto transposed = [&](int index) {
        SmallVector<int64_t> strides =
            stridedMatmulView(matmul, index, fusion).second;
        return strides.size() >= 2 && strides.back() != 1;
      };
      bool transA = transposed(0), transB = transposed(1);
      bool concurrent = threads > 1 && g.batchCount > 1 &&
                        g.batchCount * g.m * g.n * g.k >= rt::kThreadedProduct;
      if (transposed(-1))
        note(!transB, !transA, g.n, g.m, g.k, true, concurrent);
      else
        note(transA, transB, g.m, g.n, g.k, true, concurrent);
      return;
    }
    std::optional<CpuConvCall> call = cpuConvCall(op, threads);
    if (!call || call->oneDnn)
      return;
    // im2colConv, im2colConvGradInput, im2colConvGradWeight
    // (KernelsConvolution.cpp): a GEMM per chunk of samples and group.
    int64_t group = call->group;
    int64_t batch = call->x.dims[0];
    int64_t groupOut = call->w.dims[0] / group;
    int64_t kRows = call->x.dims[1] / group * product(call->w, 2);
    int64_t oSize = product(call->y, 2);
    int64_t per = rt::samplesPerGemm(batch, kRows, oSize);
    int64_t columns = per * oSize;
    // Forward and input-gradient chunks run on the threads when there
    // are enough of them (forEachChunk).
    bool chunksConcurrent = threads > 1 && (batch + per - 1) / per >= threads;
    switch (call->pass) {
    case rt::ConvPass::Forward:
      note(false, false, groupOut, columns, kRows, true, chunksConcurrent);
      break;
    case rt::ConvPass::GradInput:
      note(true, false, kRows, columns, groupOut, true, chunksConcurrent);
      break;
    case rt::ConvPass::GradWeight:
      note(false, true, groupOut, kRows, columns, true, false);
      break;
    }
  });
  std::vector<int64_t> total;
  for (const StagePacking &stage : largest)
    total.push_back(stage.first + (threads - 1) * stage.others);
  return total;
}

} // namespace cleave::planner
