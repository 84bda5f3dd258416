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
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <set>

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

/// The products im2col runs a convolution pass as (KernelsConvolution.cpp):
/// per chunk of samples and group, C [groupOut, columns] from the kernel
/// [groupOut, kRows] and the chunk's im2col matrix [kRows, columns].
struct ConvGemm {
  int64_t samples, perGemm, groupOut, kRows, columns;
};

ConvGemm convGemm(const CpuConvCall &call) {
  auto product = [](const rt::Shape &shape, int from) {
    int64_t p = 1;
    for (int d = from; d < shape.rank; ++d)
      p *= shape.dims[d];
    return p;
  };
  ConvGemm g;
  g.samples = call.x.dims[0];
  g.groupOut = call.w.dims[0] / call.group;
  g.kRows = call.x.dims[1] / call.group * product(call.w, 2);
  int64_t oSize = product(call.y, 2);
  g.perGemm = rt::samplesPerGemm(g.samples, g.kRows, oSize);
  g.columns = g.perGemm * oSize;
  return g;
}

/// Whether gemm() sends a product to skinnyGemmXWt (KernelsLinalg.cpp,
/// where the kernel is built: GemmDispatch.h).
bool runsSkinnyForward(bool transA, bool transB, bool alphaNonZero, int64_t m,
                       int64_t n, int64_t k) {
  return !transA && transB && alphaNonZero && rt::skinnyGemmShapePays(m, n, k);
}

} // namespace

std::vector<int64_t>
cpuKernelWorkspaceBytes(func::FuncOp step, const FusionPlan &fusion,
                        const SkinnyBackwardPairs &skinnyBackward,
                        int64_t stages, int threads) {
  threads = std::max(threads, 1);
  // Per stage, each workspace's largest call: oneDNN's, the strided
  // products' buffer, the skinny kernels' buffers on the calling thread
  // (forward x^T, backward dy^T and x), then theirs on each thread
  // (forward y^T, backward dx) (runtime/GemmDispatch.h, SkinnyBuffers).
  constexpr int kStrided = rt::kOneDnnWorkspaces, kForwardXt = kStrided + 1,
                kBackwardDyt = kStrided + 2, kBackwardXt = kStrided + 3,
                kPerThread = kStrided + 4;
  auto forwardYt = [&](int64_t t) { return int(kPerThread + t); };
  auto backwardDxt = [&](int64_t t) { return int(kPerThread + threads + t); };
  std::vector<std::vector<int64_t>> largest(
      std::max<int64_t>(stages, 1),
      std::vector<int64_t>(kPerThread + 2 * threads, 0));
  auto note = [&](Operation *op, int slot, int64_t bytes) {
    int64_t stage = stages > 1 ? stageOf(op) : -1;
    for (int64_t s = 0; s < static_cast<int64_t>(largest.size()); ++s)
      if (stage < 0 || stage == s)
        largest[s][slot] = std::max(largest[s][slot], bytes);
  };
  constexpr int64_t kFloat = sizeof(float);
  using rt::SkinnyBuffers;
  // A product gemm() sends to skinnyGemmXWt (GemmDispatch.h).
  auto noteSkinnyForward = [&](Operation *op, bool transA, bool transB,
                               bool alphaNonZero, int64_t rows, int64_t n,
                               int64_t k) {
    if (!runsSkinnyForward(transA, transB, alphaNonZero, rows, n, k))
      return;
    note(op, kForwardXt, SkinnyBuffers::forwardXt(rows, k) * kFloat);
    for (int64_t t = 0; t < threads; ++t)
      note(op, forwardYt(t),
           SkinnyBuffers::forwardYt(rows, n, t, threads) * kFloat);
  };
  step.walk([&](Operation *op) {
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      ArrayRef<int64_t> a = cast<ShapedType>(gemm.getA().getType()).getShape();
      ArrayRef<int64_t> b = cast<ShapedType>(gemm.getB().getType()).getShape();
      ArrayRef<int64_t> r = cast<ShapedType>(gemm.getType()).getShape();
      if (skinnyBackward.count(op)) {
        // skinnyLinearBackward: dy [rows, n], w [n, k].
        int64_t rows = a[0], n = b[0], k = b[1];
        note(op, kBackwardDyt, SkinnyBuffers::backwardDyt(rows, n) * kFloat);
        note(op, kBackwardXt, SkinnyBuffers::backwardXt(rows, k) * kFloat);
        for (int64_t t = 0; t < threads; ++t)
          note(op, backwardDxt(t),
               SkinnyBuffers::backwardDxt(rows, k, t, threads) * kFloat);
        return;
      }
      noteSkinnyForward(op, gemm.getTransA(), gemm.getTransB(),
                        gemm.getAlpha().convertToFloat() != 0.0f, r[0], r[1],
                        gemm.getTransA() ? a[0] : a[1]);
      return;
    }
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
          op, kStrided,
          rt::stridedProductBufferFloats(count, shape[r - 2], shape[r - 1], k) *
              kFloat);
      return;
    }
    std::optional<CpuConvCall> call = cpuConvCall(op, threads);
    if (!call)
      return;
    if (!call->oneDnn) {
      // An im2col weight gradient's products (im2colConvGradWeight).
      if (call->pass == rt::ConvPass::GradWeight) {
        ConvGemm g = convGemm(*call);
        noteSkinnyForward(op, false, true, true, g.groupOut, g.kRows,
                          g.columns);
      }
      return;
    }
    int64_t bytes[rt::kOneDnnWorkspaces];
    rt::oneDnnConvWorkspaces(
        call->pass, call->x, call->w, call->y, call->strides, call->pads,
        call->dilations, call->group, call->bias, call->layout, threads, bytes);
    for (int i = 0; i < rt::kOneDnnWorkspaces; ++i)
      note(op, i, bytes[i]);
  });
  std::vector<int64_t> total;
  for (const std::vector<int64_t> &slots : largest) {
    int64_t sum = 0;
    for (int64_t bytes : slots)
      sum += bytes;
    total.push_back(sum);
  }
  return total;
}

std::vector<int64_t> cpuOneDnnPrimitives(func::FuncOp step, int64_t stages,
                                         int threads) {
  threads = std::max(threads, 1);
  // A primitive per distinct call, as the runtime's cache keys them.
  std::vector<std::set<std::vector<int64_t>>> calls(
      std::max<int64_t>(stages, 1));
  step.walk([&](Operation *op) {
    std::optional<CpuConvCall> call = cpuConvCall(op, threads);
    if (!call || !call->oneDnn)
      return;
    int64_t bytes[rt::kOneDnnWorkspaces];
    // Geometries oneDNN refuses run on im2col.
    if (!rt::oneDnnConvWorkspaces(call->pass, call->x, call->w, call->y,
                                  call->strides, call->pads, call->dilations,
                                  call->group, call->bias, call->layout,
                                  threads, bytes))
      return;
    int spatial = call->x.rank - 2;
    std::vector<int64_t> key = {static_cast<int64_t>(call->pass),
                                static_cast<int64_t>(call->layout), call->bias,
                                call->group};
    for (const rt::Shape *shape : {&call->x, &call->w, &call->y})
      key.insert(key.end(), shape->dims, shape->dims + shape->rank);
    key.insert(key.end(), call->strides, call->strides + spatial);
    key.insert(key.end(), call->pads, call->pads + 2 * spatial);
    key.insert(key.end(), call->dilations, call->dilations + spatial);
    int64_t stage = stages > 1 ? stageOf(op) : -1;
    for (int64_t s = 0; s < static_cast<int64_t>(calls.size()); ++s)
      if (stage < 0 || stage == s)
        calls[s].insert(key);
  });
  std::vector<int64_t> counts;
  for (const auto &stageCalls : calls)
    counts.push_back(static_cast<int64_t>(stageCalls.size()));
  return counts;
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
  if (runsSkinnyForward(transA, transB, alphaNonZero, m, n, k))
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
                    const SkinnyBackwardPairs &skinnyBackward, int64_t stages,
                    int threads, const rt::BlasBlocking &blocking) {
  std::vector<StagePacking> largest(std::max<int64_t>(stages, 1));
  if (!blocking.known())
    return std::vector<int64_t>(largest.size(), 0);
  llvm::DenseSet<Operation *> onSkinnyKernels;
  for (auto [inputGradient, update] : skinnyBackward) {
    onSkinnyKernels.insert(inputGradient);
    onSkinnyKernels.insert(update);
  }
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
    ConvGemm g = convGemm(*call);
    // Forward and input-gradient chunks run on the threads when there
    // are enough of them (forEachChunk).
    int64_t chunks = (g.samples + g.perGemm - 1) / g.perGemm;
    bool chunksConcurrent = threads > 1 && chunks >= threads;
    switch (call->pass) {
    case rt::ConvPass::Forward:
      note(false, false, g.groupOut, g.columns, g.kRows, true,
           chunksConcurrent);
      break;
    case rt::ConvPass::GradInput:
      note(true, false, g.kRows, g.columns, g.groupOut, true, chunksConcurrent);
      break;
    case rt::ConvPass::GradWeight:
      note(false, true, g.groupOut, g.kRows, g.columns, true, false);
      break;
    }
  });
  std::vector<int64_t> total;
  for (const StagePacking &stage : largest)
    total.push_back(stage.first + (threads - 1) * stage.others);
  return total;
}

} // namespace cleave::planner
