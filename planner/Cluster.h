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

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <string>
#include <vector>

namespace cleave::planner {

/// A point-to-point link: bandwidth one device gets in one direction, and
/// the latency of one message.
struct Link {
  double bandwidthGBs = 0; // 1e9 bytes per second
  double latencyUs = 0;
};

/// Kernels whose time the roofline misses on a cpu: short rows (a
/// softmax's or LayerNorm's per-row work), random numbers (dropout), many
/// small matrices (attention's batched products).
enum class Kernel {
  Softmax,
  SoftmaxGrad,
  LayerNorm,
  LayerNormGrad,
  Dropout,
  BatchedMatmul,
};
constexpr size_t kKernelCount = 6;

/// The kernel's name in cluster files ("softmax", "layer_norm_grad", ...).
llvm::StringRef kernelName(Kernel kernel);

/// A kernel's measured time: per row (a softmax's or LayerNorm's line, a
/// batched product's matrix) and per element, in nanoseconds.
struct KernelRate {
  double rowNs = 0, elementNs = 0;
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
  /// Measured kernel rates (`cleave calibrate`; zero: the roofline alone).
  std::array<KernelRate, kKernelCount> kernelRates{};
  Link intraNode, interNode;
  /// Fractions of peak reached in practice: matrix products, memory-bound
  /// ops, links.
  double computeEfficiency = 1, memoryEfficiency = 1, networkEfficiency = 1;
  /// Where the numbers come from (shown in `cleave plan`'s header).
  std::string source;

  int64_t memoryBytes() const {
    return static_cast<int64_t>(memoryGiB * 1024 * 1024 * 1024);
  }
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
