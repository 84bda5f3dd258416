//===- OpCost.cpp - floating-point work and memory traffic of an op -------===//

#include "planner/OpCost.h"

#include <tuple>

#include "codegen/MemoryPlan.h"
#include "dialects/cleave/CleaveOps.h"
#include "planner/CpuConvolution.h"
#include "runtime/ConvolutionPath.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

double elements(Value value) {
  auto type = dyn_cast<ShapedType>(value.getType());
  return type && type.hasStaticShape()
             ? static_cast<double>(type.getNumElements())
             : 1.0;
}

double bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape()
             ? static_cast<double>(mlir::cleave::tensorBytes(type))
             : 0.0;
}

/// Elements of a convolution weight per output channel: the multiply-adds
/// of one output element.
double perOutputElement(Value weight) {
  auto type = cast<ShapedType>(weight.getType());
  return elements(weight) / std::max<int64_t>(type.getDimSize(0), 1);
}

/// A convolution as the products im2col makes of it, per group: its rows
/// (samples x output positions), output channels, and the sum over input
/// channels x taps. The forward pass is rows x channels x taps, the input
/// gradient rows x taps x channels, the weight gradient channels x taps x
/// rows.
std::tuple<double, double, double> convProduct(Value output, Value weight,
                                               int64_t group) {
  auto y = cast<ShapedType>(output.getType());
  auto w = cast<ShapedType>(weight.getType());
  if (!y.hasStaticShape() || !w.hasStaticShape() || y.getRank() < 2)
    return {0, 0, 0};
  double rows = elements(output) / std::max<int64_t>(y.getDimSize(1), 1);
  double channels =
      double(w.getDimSize(0)) / double(std::max<int64_t>(group, 1));
  return {rows, channels, perOutputElement(weight)};
}

/// What the cpu runtime computes of a convolution pass, on the shapes of
/// this rank's partitioned op (CpuConvolution.h, as on one thread: the
/// rule differs on more only below 2 MFLOP): the share of the kernel's
/// taps it keeps, and the multiply-adds oneDNN's direct or Winograd
/// kernels do (dense convolutions only, a depthwise one runs kernels of
/// another kind), or the products of im2col + GEMMs.
struct CpuConvolution {
  double liveTaps = 1;
  std::optional<OpCost::DirectConv> direct;
  std::optional<OpCost::Im2colConv> im2col;
};

CpuConvolution cpuConvolution(Operation *op) {
  CpuConvolution result;
  std::optional<CpuConvCall> call = cpuConvCall(op, /*threads=*/1);
  if (!call)
    return result;
  result.liveTaps = call->liveTaps;
  const rt::Shape &x = call->x, &w = call->w, &y = call->y;
  body::Window3 window(x, y, w.dims + 2, call->strides, call->pads,
                       call->dilations);
  if (call->oneDnn) {
    if (call->group == 1)
      result.direct = OpCost::DirectConv{
          call->pass, rt::directConvWork(call->pass, w, call->layout, window),
          double(y.dims[0]) * double(window.outSize()),
          call->layout == rt::OneDnnLayout::Winograd};
    return result;
  }
  if (x.numElements() == 0 || y.numElements() == 0 || w.numElements() == 0)
    return result;
  rt::ConvDims dims(x, w, call->group, window);
  OpCost::Im2colConv conv;
  conv.pass = call->pass;
  conv.samples = double(dims.batch);
  conv.channels = double(dims.groupOut);
  conv.depth = double(dims.kRows);
  conv.positions = double(window.outSize());
  conv.groups = double(call->group);
  conv.pointwise = rt::isPointwise(window);
  result.im2col = conv;
  return result;
}

/// Lines of `value` along `axis` (each a row the kernel walks).
double linesAlong(Value value, int64_t axis) {
  auto type = cast<ShapedType>(value.getType());
  return elements(value) / std::max<int64_t>(type.getDimSize(axis), 1);
}

/// Rows of a LayerNorm over dims [axis, rank).
double rowsBefore(Value value, int64_t axis) {
  auto type = cast<ShapedType>(value.getType());
  double rows = 1;
  for (int64_t d = 0; d < axis; ++d)
    rows *= type.getDimSize(d);
  return rows;
}

/// Planes of an [N, C, ...] tensor: the rows of pooling and BatchNorm.
double planes(Value value) {
  auto type = cast<ShapedType>(value.getType());
  return type.getRank() >= 2 ? double(type.getDimSize(0)) * type.getDimSize(1)
                             : 1.0;
}

/// A pool's window work: every output element once per tap.
double windowWork(Value output, llvm::ArrayRef<int64_t> kernelShape) {
  double taps = 1;
  for (int64_t k : kernelShape)
    taps *= k;
  return elements(output) * taps;
}

/// The measured-rate kernel `op` runs, with its rows and elements.
void setKernel(Operation *op, OpCost &cost) {
  auto set = [&](Kernel kernel, double rows, double itemElements) {
    cost.kernel = kernel;
    cost.kernelRows = rows;
    cost.kernelElements = itemElements;
  };
  // A softmax-like kernel over the lines of `x` along `axis`.
  auto lines = [&](Kernel kernel, Value x, int64_t axis) {
    set(kernel, linesAlong(x, axis), elements(x));
  };
  // BatchNorm's rates are of the whole training op: statistics (two passes
  // over x, and dy for the gradient) and the pass that writes; a batch split
  // over ranks runs them as separate ops, each its share of the planes and
  // elements.
  auto statistics = [&](Kernel kernel, Value x, double share) {
    set(kernel, planes(x) * share, elements(x) * share);
  };
  if (auto softmax = dyn_cast<SoftmaxOp>(op))
    lines(Kernel::Softmax, softmax.getInput(), softmax.getAxis());
  else if (auto logSoftmax = dyn_cast<LogSoftmaxOp>(op))
    lines(Kernel::Softmax, logSoftmax.getInput(), logSoftmax.getAxis());
  else if (auto grad = dyn_cast<SoftmaxGradOp>(op))
    lines(Kernel::SoftmaxGrad, grad.getOutput(), grad.getAxis());
  else if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(op))
    lines(Kernel::Softmax, loss.getScores(), 1);
  else if (auto grad = dyn_cast<SoftmaxCrossEntropyGradOp>(op))
    lines(Kernel::SoftmaxGrad, grad.getLogProb(), 1);
  else if (auto norm = dyn_cast<LayerNormOp>(op))
    set(Kernel::LayerNorm, rowsBefore(norm.getInput(), norm.getAxis()),
        elements(norm.getInput()));
  else if (auto grad = dyn_cast<LayerNormGradOp>(op))
    set(Kernel::LayerNormGrad, rowsBefore(grad.getInput(), grad.getAxis()),
        elements(grad.getInput()));
  else if (auto dropout = dyn_cast<DropoutOp>(op);
           dropout && dropout.getTraining() &&
           dropout.getRatio().convertToFloat() > 0)
    set(Kernel::Dropout, 0, elements(dropout.getInput()));
  else if (auto pool = dyn_cast<MaxPoolOp>(op))
    set(Kernel::MaxPool, planes(pool.getInput()),
        windowWork(pool.getResult(), pool.getKernelShape()));
  else if (auto pool = dyn_cast<AvgPoolOp>(op))
    set(Kernel::AvgPool, planes(pool.getInput()),
        windowWork(pool.getResult(), pool.getKernelShape()));
  else if (auto grad = dyn_cast<MaxPoolGradOp>(op))
    set(Kernel::MaxPoolGrad, planes(grad.getInput()),
        windowWork(grad.getOutputGrad(), grad.getKernelShape()));
  else if (auto grad = dyn_cast<AvgPoolGradOp>(op))
    set(Kernel::AvgPoolGrad, planes(grad.getInputGrad()),
        windowWork(grad.getOutputGrad(), grad.getKernelShape()));
  else if (auto batchNorm = dyn_cast<BatchNormOp>(op))
    statistics(Kernel::BatchNorm, batchNorm.getInput(),
               batchNorm.getTraining() && batchNorm.getBatchStatistics().empty()
                   ? 1.0
                   : 1.0 / 3);
  else if (auto sum = dyn_cast<BatchNormSumOp>(op))
    statistics(Kernel::BatchNorm, sum.getInput(), 1.0 / 3);
  else if (auto sum = dyn_cast<BatchNormSquaredDeviationSumOp>(op))
    statistics(Kernel::BatchNorm, sum.getInput(), 1.0 / 3);
  else if (auto grad = dyn_cast<BatchNormGradOp>(op))
    statistics(Kernel::BatchNormGrad, grad.getInput(), 1.0);
  else if (auto sums = dyn_cast<BatchNormGradSumsOp>(op))
    statistics(Kernel::BatchNormGrad, sums.getInput(), 2.0 / 3);
  else if (auto grad = dyn_cast<BatchNormGradFromSumsOp>(op))
    statistics(Kernel::BatchNormGrad, grad.getInput(), 1.0 / 3);
  else if (auto matmul = dyn_cast<MatmulOp>(op)) {
    // Batched: timed per matrix.
    auto result = cast<ShapedType>(matmul.getType());
    if (result.getRank() >= 3) {
      double matrix = result.getDimSize(result.getRank() - 1) *
                      result.getDimSize(result.getRank() - 2);
      set(Kernel::BatchedMatmul, elements(matmul.getResult()) / matrix, 0);
    }
  }
}

} // namespace

void OpCost::Im2colConv::divideProductDim(int productDim, double by) {
  // OpCost's m, n, k of each pass (costOf): the forward product is rows
  // (samples x positions) x channels x depth, the input gradient's rows x
  // depth x channels, the weight gradient's channels x depth x rows.
  static constexpr int kSamples = 0, kChannels = 1, kDepth = 2;
  static constexpr int kDims[3][3] = {{kSamples, kChannels, kDepth},
                                      {kSamples, kDepth, kChannels},
                                      {kChannels, kDepth, kSamples}};
  double *dims[3] = {&samples, &channels, &depth};
  *dims[kDims[static_cast<int>(pass)][productDim]] /= by;
}

double im2colConvSeconds(const OpCost::Im2colConv &conv, const Cluster &cluster,
                         double peakFlops) {
  auto count = [](double value) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::llround(value)));
  };
  double perGemm = double(rt::samplesPerGemm(
      count(conv.samples), count(conv.depth), count(conv.positions)));
  double calls = std::ceil(conv.samples / perGemm) * conv.groups;
  double columns = perGemm * conv.positions;
  double m = conv.channels, n = columns, k = conv.depth;
  if (conv.pass == rt::ConvPass::GradInput)
    std::tie(m, n, k) = std::make_tuple(conv.depth, columns, conv.channels);
  else if (conv.pass == rt::ConvPass::GradWeight)
    std::tie(m, n, k) = std::make_tuple(conv.channels, conv.depth, columns);
  double efficiency = cluster.matrixEfficiency(
      std::max(m, 1.0), std::max(n, 1.0), std::max(k, 1.0));
  if (efficiency <= 0)
    efficiency = cluster.computeEfficiency;
  double flops = 2 * conv.channels * conv.depth * conv.positions *
                 conv.samples * conv.groups;
  double gemms =
      peakFlops > 0 && efficiency > 0 ? flops / (peakFlops * efficiency) : 0;
  // A pointwise convolution's GEMM reads one sample's input in place; with
  // several samples side by side it gathers them.
  double elements =
      conv.pointwise && perGemm == 1
          ? 0
          : conv.depth * conv.positions * conv.samples * conv.groups;
  Kernel kernel = conv.pass == rt::ConvPass::Forward ? Kernel::Im2colConv
                  : conv.pass == rt::ConvPass::GradInput
                      ? Kernel::Im2colConvGradInput
                      : Kernel::Im2colConvGradWeight;
  const KernelRate &rate = cluster.kernelRates[static_cast<size_t>(kernel)];
  return gemms + (calls * rate.rowNs + elements * rate.elementNs) * 1e-9;
}

bool isCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, BroadcastOp,
             SendRecvOp>(op);
}

void applyDirectConvRate(const OpCost &cost, const Cluster &cluster,
                         double &flops, double &efficiency) {
  if (!cost.directConv)
    return;
  double ConvRates::*pass = nullptr;
  switch (cost.directConv->pass) {
  case rt::ConvPass::Forward:
    pass = &ConvRates::forward;
    break;
  case rt::ConvPass::GradInput:
    pass = &ConvRates::inputGrad;
    break;
  case rt::ConvPass::GradWeight:
    pass = &ConvRates::weightGrad;
    break;
  }
  double rate = cluster.convEfficiency.at(pass, cost.directConv->rows,
                                          cost.directConv->winograd);
  if (rate <= 0)
    return;
  flops = cost.flops * cost.directConv->work;
  efficiency = rate;
}

ConvRuntime convRuntimeOf(const Cluster &cluster) {
  return cluster.target == "cpu" ? ConvRuntime::Cpu : ConvRuntime::Cuda;
}

OpCost costOf(Operation *op, ConvRuntime runtime) {
  OpCost cost;
  if (isa<ConstantOp, ReshapeOp, AxisIndexOp, func::ReturnOp>(op) ||
      op->getNumResults() == 0) {
    cost.free = true;
    return cost;
  }
  for (Value operand : op->getOperands())
    if (!isa_and_nonnull<ConstantOp>(operand.getDefiningOp()))
      cost.bytes += bytesOf(operand);
  double resultElements = 0;
  for (Value result : op->getResults()) {
    cost.bytes += bytesOf(result);
    resultElements = std::max(resultElements, elements(result));
  }
  cost.flops = resultElements;
  setKernel(op, cost);
  // A convolution's share of live taps, and the product dimension that
  // sums over its taps.
  CpuConvolution cpu;
  double *tapsDim = nullptr;
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    auto lhs = cast<ShapedType>(matmul.getLhs().getType());
    auto result = cast<ShapedType>(matmul.getType());
    double k = lhs.getRank() ? lhs.getDimSize(lhs.getRank() - 1) : 1;
    cost.flops = 2 * elements(matmul.getResult()) * k;
    cost.matrix = true;
    // A product by one matrix runs as one GEMM over all the rows; a batched
    // one as a product per matrix.
    int64_t rank = result.getRank();
    auto rhs = cast<ShapedType>(matmul.getRhs().getType());
    cost.n = rank >= 1 ? result.getDimSize(rank - 1) : 1;
    cost.m = rhs.getRank() <= 2 ? elements(matmul.getResult()) / cost.n
             : rank >= 2        ? result.getDimSize(rank - 2)
                                : 1;
    cost.k = k;
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    auto a = cast<ShapedType>(gemm.getA().getType());
    auto result = cast<ShapedType>(gemm.getType());
    double k = a.getDimSize(gemm.getTransA() ? 0 : 1);
    cost.flops = 2 * elements(gemm.getResult()) * k;
    cost.matrix = true;
    cost.m = result.getDimSize(0);
    cost.n = result.getDimSize(1);
    cost.k = k;
  } else if (auto conv = dyn_cast<ConvOp>(op)) {
    cost.flops =
        2 * elements(conv.getResult()) * perOutputElement(conv.getWeight());
    cost.matrix = true;
    auto [rows, channels, taps] =
        convProduct(conv.getResult(), conv.getWeight(), conv.getGroup());
    std::tie(cost.m, cost.n, cost.k) = std::make_tuple(rows, channels, taps);
    cpu = cpuConvolution(op);
    tapsDim = &cost.k;
  } else if (auto grad = dyn_cast<ConvGradInputOp>(op)) {
    cost.flops =
        2 * elements(grad.getOutputGrad()) * perOutputElement(grad.getWeight());
    cost.matrix = true;
    auto [rows, channels, taps] =
        convProduct(grad.getOutputGrad(), grad.getWeight(), grad.getGroup());
    std::tie(cost.m, cost.n, cost.k) = std::make_tuple(rows, taps, channels);
    cpu = cpuConvolution(op);
    tapsDim = &cost.n;
  } else if (auto grad = dyn_cast<ConvGradWeightOp>(op)) {
    cost.flops = 2 * elements(grad.getOutputGrad()) *
                 perOutputElement(grad.getWeightGrad());
    cost.matrix = true;
    auto [rows, channels, taps] = convProduct(
        grad.getOutputGrad(), grad.getWeightGrad(), grad.getGroup());
    std::tie(cost.m, cost.n, cost.k) = std::make_tuple(channels, taps, rows);
    cpu = cpuConvolution(op);
    tapsDim = &cost.n;
  }
  if (runtime == ConvRuntime::Cpu && tapsDim) {
    cost.flops *= cpu.liveTaps;
    *tapsDim *= cpu.liveTaps;
    cost.directConv = cpu.direct;
    cost.im2col = cpu.im2col;
    cost.liveTaps = cpu.liveTaps;
  }
  return cost;
}

} // namespace cleave::planner
