//===- Cluster.h - what the planner plans for -------------------*- C++ -*-===//
//
// A cluster: nodes of identical devices, the links between them, and the
// few efficiency constants the cost model applies to peak numbers. Read
// from a YAML or JSON file (schema in README.md, "Planning") or taken from
// a built-in preset.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_CLUSTER_H
#define CLEAVE_PLANNER_CLUSTER_H

#include "runtime/BlasPacking.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace cleave::planner {

/// The runtime's collectives whose time `cleave calibrate` measures on
/// the runtime's own code (runtime/CollectiveKernels.h, as a program calls
/// them: an all-reduce bucket on the communication thread, reduce-scatter
/// and all-gather on the caller's).
enum class MeasuredCollective { AllReduce, ReduceScatter, AllGather };
constexpr size_t kMeasuredCollectiveCount = 3;

/// The collective's name in cluster files ("all_reduce", "reduce_scatter",
/// "all_gather").
llvm::StringRef measuredCollectiveName(MeasuredCollective kind);

/// The bytes one rank of a group of `groupSize` sends (what --print-comm
/// counts, runtime/CommVolume.h) in the cpu runtime's `kind` over a buffer
/// of `bufferBytes` of fp32 elements: the tensors an all-reduce sums, a
/// reduce-scatter's input or an all-gather's output (all the group's
/// blocks).
double measuredCollectiveBytesSent(MeasuredCollective kind,
                                   double bufferBytes, int64_t groupSize);

/// One measurement of a collective: its bus bandwidth (the bytes one rank
/// sends, measuredCollectiveBytesSent, per second; nccl-tests' "busbw") at
/// a buffer of `bytes`.
struct CollectivePoint {
  double bytes = 0, busBandwidthGBs = 0;
};

/// The runtime's collectives measured on groups of `groupSize` ranks (all
/// the groups of that size at once, as the collectives over a mesh axis
/// run): each kind's points by increasing size, empty when not measured.
struct MeasuredGroup {
  int64_t groupSize = 0;
  std::array<std::vector<CollectivePoint>, kMeasuredCollectiveCount> points{};
};

/// A point-to-point link: bandwidth one device gets in one direction, and
/// the latency of one message; optionally, the runtime's collectives as
/// `cleave calibrate` measured them over it.
struct Link {
  double bandwidthGBs = 0; // 1e9 bytes per second
  double latencyUs = 0;
  /// By increasing group size.
  std::vector<MeasuredGroup> collectives;

  /// Seconds of the collective `kind` over a buffer of `bufferBytes` in
  /// which one rank of a group of `groupSize` sends `bytesSent`, from the
  /// measurements on the group size nearest `groupSize` (by ratio; the
  /// larger of two as near) that measured `kind`: the time measured at
  /// that size (linear between sizes; the smallest size's time below it,
  /// the largest size's bus bandwidth above it), scaled by bytesSent over
  /// what a rank of the measured groups sends at that size (a group of
  /// another size: the same bus bandwidth). None when `kind` was not
  /// measured on this link.
  std::optional<double> measuredSeconds(MeasuredCollective kind,
                                        double bufferBytes, double bytesSent,
                                        int64_t groupSize) const;
};

/// Kernels whose time the roofline misses on a cpu: short rows (a
/// softmax's or LayerNorm's per-row work), random numbers (dropout), many
/// small matrices (attention's batched products), windows over small planes
/// (pooling), BatchNorm's passes in double.
enum class Kernel {
  Softmax,
  SoftmaxGrad,
  LayerNorm,
  LayerNormGrad,
  Dropout,
  BatchedMatmul,
  MaxPool,
  MaxPoolGrad,
  AvgPool,
  AvgPoolGrad,
  BatchNorm,
  BatchNormGrad,
  Im2colConv,
  Im2colConvGradInput,
  Im2colConvGradWeight,
};
constexpr size_t kKernelCount = 15;

/// The kernel's name in cluster files ("softmax", "layer_norm_grad", ...).
llvm::StringRef kernelName(Kernel kernel);

/// A kernel's measured time: per row (a softmax's or LayerNorm's line, a
/// batched product's matrix, a pool's or BatchNorm's plane, an im2col
/// convolution's GEMM call) and per element (a pool's output element and
/// window tap, an element of an im2col matrix), in nanoseconds.
struct KernelRate {
  double rowNs = 0, elementNs = 0;
};

/// The fraction of peak a matrix product reaches when its smallest
/// dimension is `smallestDim`: `mn` where that is a row or column count of
/// the result (a layer's forward product or input gradient at a small
/// batch), `k` where it is the summed dimension (its weight gradient).
struct GemmEfficiency {
  int64_t smallestDim = 0;
  double mn = 0, k = 0;
};

/// GemmEfficiency of products whose other two dimensions have the
/// geometric mean `width` (by increasing smallestDim).
struct GemmEfficiencyAtWidth {
  int64_t width = 0;
  std::vector<GemmEfficiency> points;
};

/// Rates of oneDNN's direct convolution kernels, per pass: the GFLOP/s of
/// the multiply-adds they do (rt::directConvWork), over the peak.
struct ConvRates {
  double forward = 0, inputGrad = 0, weightGrad = 0;
};

/// oneDNN's direct convolutions, the cpu runtime's path for most dense
/// convolutions (runtime/ConvolutionPath.h). Above 1 where they outrun the
/// GEMM that sets the peak. 0: not measured (time them as matrix products
/// by efficiency.gemm).
struct ConvEfficiency {
  /// The rates `cleave calibrate` measures on 8 images of 16x16 (2048
  /// output rows per call), and of every call where byRows is empty.
  ConvRates rates;
  /// The rates by output rows per call (samples x output positions), by
  /// increasing rows: a call reorders the whole weight into and out of
  /// oneDNN's layouts, which fewer rows share (ResNet-18's 2x2 images at
  /// batch 16 run at a third of the 16x16 rate).
  std::vector<std::pair<int64_t, ConvRates>> byRows;
  /// The rates of oneDNN's Winograd kernels (the path of 3x3 convolutions
  /// over large planes, rt::winogradApplies), counted on the multiply-adds
  /// the direct kernels would do: their saving shows as a higher rate.
  /// `cleave calibrate` measures them on 8 images of 16x16 with 64
  /// channels. 0: not measured (time them as direct ones).
  ConvRates winograd;
  /// The largest rate a file may give. oneDNN's kernels may outrun the
  /// GEMM that sets the peak by a lot where OpenBLAS runs kernels for an
  /// older CPU (4.5x on a Xeon that OpenBLAS 0.3.21 does not know, without
  /// OPENBLAS_CORETYPE); more than 32x is a measurement gone wrong.
  static constexpr double kMost = 32;

  /// The rate of pass `pass` on calls of `rows` output rows: on Winograd's
  /// kernels (`winograd`) `winograd`'s where measured; else from byRows
  /// (linear in log2 of the rows between two measured, the nearest one's
  /// outside them), else `rates`.
  double at(double ConvRates::*pass, double rows, bool winograd) const;
};

struct Cluster {
  std::string name;
  /// The target programs are compiled for: "cuda" or "cpu".
  std::string target = "cuda";
  /// Nodes in the file (0: not given; `--nodes`/`--ranks` size the cluster).
  int64_t nodes = 0;
  int64_t devicesPerNode = 1;
  /// Memory one device gives a rank, in GiB.
  double memoryGiB = 0;
  /// On the cpu target, the OpenMP threads each rank runs (OMP_NUM_THREADS):
  /// oneDNN sizes its convolutions' scratchpads for them (CpuWorkspace.h).
  int64_t threads = 1;
  /// Peak dense FLOP/s per precision, in TFLOP/s.
  double peakTflopsFp32 = 0, peakTflopsTf32 = 0, peakTflopsBf16 = 0;
  /// Device memory bandwidth.
  double memoryBandwidthGBs = 0;
  /// A cache memory-bound ops run from when their bytes fit it (0: none):
  /// the L2 and the last-level cache (a cpu's L3; its share per rank).
  double cacheMiB = 0, cacheBandwidthGBs = 0;
  double llcMiB = 0, llcBandwidthGBs = 0;
  /// What one op of a step costs beyond its roofline time (the call, its
  /// checks, the start of its loops; a GPU's kernel launch), in
  /// microseconds: `cleave calibrate` measures it on tiny tensors.
  double opOverheadUs = 0;
  /// What a collective run on a communication thread costs beyond its
  /// messages (handing it over, waking the thread that waits for it), in
  /// microseconds: a pipeline hand-over waits for it. `cleave calibrate`
  /// measures it on a cpu; 0 for the presets.
  double handOffUs = 0;
  /// The share of a started all-reduce's time that compute on the same
  /// rank hides: 1 (the presets, and the default) where the collective
  /// needs nothing compute needs (a GPU's copy engines, spare cores), 0
  /// where the two take turns, below 0 where running both costs more than
  /// running them in turn (a cpu whose cores the communication thread
  /// shares: its polls and copies wait for the cores, its peers for it).
  /// While both run, each takes 1 - commOverlap of their common time
  /// longer. `cleave calibrate` measures it on a cpu.
  double commOverlap = 1;
  /// Measured kernel rates (`cleave calibrate`; zero: the roofline alone).
  std::array<KernelRate, kKernelCount> kernelRates{};
  Link intraNode, interNode;
  /// Fractions of peak reached in practice: matrix products, memory-bound
  /// ops, links.
  double computeEfficiency = 1, memoryEfficiency = 1, networkEfficiency = 1;
  /// Matrix products by the size of their other two dimensions and by
  /// their smallest (`cleave calibrate` measures them; by increasing
  /// width; empty: computeEfficiency for every product).
  std::vector<GemmEfficiencyAtWidth> gemmEfficiency;
  /// Direct convolutions (`cleave calibrate` measures them on a cpu).
  ConvEfficiency convEfficiency;
  /// The cpu target's OpenBLAS blocking, measured by `cleave calibrate`
  /// (device.blas_packing); unknown (no packing predicted) otherwise.
  rt::BlasBlocking blasBlocking;
  /// What the communication library keeps for itself on each rank of a
  /// run of more than one (MPI's request and fragment lists, messages that
  /// arrive before their receive): `cleave calibrate` measures it on a cpu
  /// (device.comm_library_bytes); 0 (none predicted) otherwise.
  int64_t commLibraryBytes = 0;
  /// What oneDNN keeps for each convolution primitive a rank creates (its
  /// objects, generated code and operands' reorders, beyond the
  /// workspaces): `cleave calibrate` measures it
  /// (device.onednn_primitive_bytes); 0 (none predicted) otherwise.
  int64_t oneDnnPrimitiveBytes = 0;
  /// Where the numbers come from (shown in `cleave plan`'s header).
  std::string source;

  /// The fraction of peak an M x N x K matrix product reaches: from
  /// gemmEfficiency by its smallest dimension and the geometric mean of
  /// the other two (linear in log2 of each between the sizes measured, the
  /// nearest one's outside them), or computeEfficiency without
  /// measurements or dimensions (0: unknown).
  double matrixEfficiency(double m, double n, double k) const;

  /// The most any matrix product reaches (a lower bound's rate).
  double bestMatrixEfficiency() const;

  /// Floating-point operations a device does (at its best matrix rate)
  /// while `link` moves one byte of the fp32 program (half a byte in
  /// bf16): what the pipeline stage cut weighs a byte crossing it as
  /// (cleave-pipeline-stages' link-balance).
  double operationsPerByteSent(const Link &link, bool bf16) const;

  int64_t memoryBytes() const {
    return static_cast<int64_t>(memoryGiB * 1024 * 1024 * 1024);
  }

  /// Seconds of a collective on `link` in which one rank of a group of
  /// `groupSize` sends `bytesSent` (the fp32 elements of a buffer of
  /// `bufferBytes`; Link::measuredSeconds) in `steps` dependent
  /// messages: the link's measurement of `kind` where it has one (which
  /// the network efficiency does not scale: it is what was reached), else
  /// steps * latency + bytesSent / (bandwidth * network efficiency).
  double collectiveSeconds(const Link &link,
                           std::optional<MeasuredCollective> kind,
                           double bufferBytes, double bytesSent,
                           int64_t groupSize, int64_t steps) const;
};

/// The built-in presets' names.
std::vector<std::string> clusterPresetNames();

/// A preset by name, or the file at `nameOrPath` (YAML or JSON). Errors
/// name the file and field (missing, negative, unknown), or list the
/// presets.
llvm::Expected<Cluster> loadCluster(llvm::StringRef nameOrPath);

/// Parses a cluster description held in `text`, named `file` in errors.
llvm::Expected<Cluster> parseCluster(llvm::StringRef text,
                                     llvm::StringRef file);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_CLUSTER_H
