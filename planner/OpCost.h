//===- OpCost.h - floating-point work and memory traffic of an op -*- C++
//-*-===//
//
// What one op of a (partitioned) training step costs on one rank: its
// floating-point operations and the bytes it reads and writes, from the
// IR's static shapes. Matrix products (matmul, gemm, convolutions and their
// gradients) are counted as 2 * M * N * K; every other op as one operation
// per result element. The roofline in CostModel turns these into time; the
// kernels the roofline misses (short rows, random numbers, small batched
// matrices) also say their rows and elements, which measured rates time.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_OPCOST_H
#define CLEAVE_PLANNER_OPCOST_H

#include "planner/Cluster.h"
#include "runtime/ConvolutionPath.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace cleave::planner {

struct OpCost {
  double flops = 0;
  double bytes = 0;
  /// A matrix product (runs on the matrix units: the precision's peak).
  bool matrix = false;
  /// Its dimensions, of one matrix where batched; a convolution's as the
  /// product im2col makes of it per group (convProduct in OpCost.cpp).
  double m = 0, n = 0, k = 0;
  /// The op moves no data (a constant, a view): free.
  bool free = false;
  /// A kernel with a measured rate (Cluster::kernelRates), its rows and
  /// elements: its time is at least rows * rowNs + elements * elementNs.
  std::optional<Kernel> kernel;
  double kernelRows = 0, kernelElements = 0;
  /// A convolution pass the cpu runtime runs on oneDNN's direct kernels
  /// (runtime/ConvolutionPath.h), and the multiply-adds those do as a
  /// share of `flops` (rt::directConvWork: the padding skipped, channels
  /// in blocks of 16). Timed at the cluster's measured rate of such
  /// kernels where it has one (applyDirectConvRate).
  struct DirectConv {
    rt::ConvPass pass;
    double work = 1;
    /// Output rows of a call (samples x output positions), which the
    /// measured rate depends on (ConvEfficiency::byRows).
    double rows = 0;
    /// On oneDNN's Winograd kernels (ConvEfficiency::winograd).
    bool winograd = false;
  };
  std::optional<DirectConv> directConv;
  /// A convolution pass the cpu runtime runs as im2col + OpenBLAS
  /// (runtime/KernelsConvolution.cpp): a GEMM per chunk of samples
  /// (rt::samplesPerGemm) and group, each with copies into or out of its
  /// im2col matrix. Timed by those GEMMs' shapes, not the whole product's,
  /// and the calls and copies at the cluster's measured rates
  /// (im2colConvSeconds): splitting a convolution's output channels over
  /// ranks leaves each rank every sample's im2col matrix to build.
  struct Im2colConv {
    rt::ConvPass pass = rt::ConvPass::Forward;
    /// Samples, output channels per group, the product's depth (input
    /// channels per group x live taps), output positions per sample.
    double samples = 0, channels = 0, depth = 0, positions = 0;
    double groups = 1;
    /// A 1x1 convolution reads its input as its im2col matrix.
    bool pointwise = false;

    /// Divides the whole product's dimension `productDim` (0: m, 1: n,
    /// 2: k, as OpCost counts them for this pass) by `by`, as a split of
    /// the op over ranks does.
    void divideProductDim(int productDim, double by);
  };
  std::optional<Im2colConv> im2col;
  /// A convolution's share of its kernel's taps the cpu runtime computes
  /// (the others read only padding: rt::cropDeadTaps); 1 otherwise.
  double liveTaps = 1;
};

/// Whose convolutions costOf counts. The cpu runtime's crop away the
/// kernel taps that read only padding at every output position
/// (runtime/ConvolutionLiveTaps.h: 8 of 9 for a 3x3 kernel on a 1x1 image,
/// the last stage of a CNN on small images) and run most passes on
/// oneDNN's direct kernels (OpCost::directConv); the cuda target's cuDNN
/// and im2col compute every tap.
enum class ConvRuntime { Cuda, Cpu };

/// The convolutions of `cluster`'s target.
ConvRuntime convRuntimeOf(const Cluster &cluster);

/// The cost of `op`; collectives are not costed here (CostModel times them
/// from their bytes). A convolution's work is what `runtime` computes of
/// it (its bytes are all of its operands' either way: a weight is cropped
/// from the whole one).
OpCost costOf(mlir::Operation *op, ConvRuntime runtime);

/// Where `cost` is a direct convolution `cluster` measured the rate of
/// (Cluster::convEfficiency), `flops` becomes the multiply-adds its
/// kernels do and `efficiency` that rate; otherwise both stay.
void applyDirectConvRate(const OpCost &cost, const Cluster &cluster,
                         double &flops, double &efficiency);

/// Seconds of `conv` on `cluster` at `peakFlops` (FLOP/s): its GEMM calls
/// at the efficiency of each one's shape (Cluster::matrixEfficiency), and
/// per call and per element of the im2col matrices the measured rates of
/// the pass's kernel (Kernel::Im2colConv...; zero where not measured).
double im2colConvSeconds(const OpCost::Im2colConv &conv, const Cluster &cluster,
                         double peakFlops);

/// Whether `op` is a collective (its time is communication).
bool isCollective(mlir::Operation *op);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_OPCOST_H
