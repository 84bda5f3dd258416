//===- CostModel.cpp - predicted step time, memory and traffic ------------===//

#include "planner/CostModel.h"
#include "planner/CpuWorkspace.h"

#include "planner/FusedUpdates.h"
#include "planner/InputMemory.h"
#include "planner/OpCost.h"

#include "codegen/CollectiveBuffers.h"
#include "codegen/Emitter.h"
#include "codegen/FusionPlan.h"
#include "codegen/MemoryPlan.h"
#include "codegen/StepPhases.h"
#include "codegen/TargetTraits.h"
#include "dialects/cleave/CleaveOps.h"
#include "passes/Pipelines.h"
#include "runtime/CommVolume.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace cleave::planner {

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// What the cache holds as a stage's ops run, by reuse distance: a value
/// read again after less than the cache's size of other traffic is still
/// there; one produced long before (an activation the backward pass reads)
/// comes from memory. A value the step has not touched yet (a parameter,
/// an input) is there when the whole step's traffic fits the cache.
struct CacheState {
  /// The stage's traffic so far and in all, in bytes.
  double traffic = 0, stepTraffic = 0;
  /// Each value's traffic clock when last read or written.
  llvm::DenseMap<Value, double> touched;
  /// Weights whose live taps a convolution pass has cropped into the copy
  /// the program keeps for the step (StepTimer::refreshedCrops).
  llvm::DenseSet<Value> cropped;
};

/// The micro-batch `op` works for, -1 when it runs once a step: its own
/// (StepPhases::microbatchOf), or for a stage hand-over, which the stage
/// split adds after the micro-batches are copied, that of the value it
/// carries.
int64_t microbatchOfOp(Operation *op) {
  int64_t microbatch = StepPhases::microbatchOf(op);
  if (microbatch < 0 && isa<SendRecvOp>(op) && op->getNumOperands())
    if (Operation *def = op->getOperand(0).getDefiningOp())
      return microbatchOfOp(def);
  return microbatch;
}

/// Calls `fn` with each stage `op` runs on (runsOnStage's answer for every
/// stage, found once): a send_recv's two, an op's own stage, or every
/// stage for an op without one. Without stages (`pipelineAxis` -1), 0.
template <typename Fn>
void forEachStage(Operation *op, int64_t stages, int64_t pipelineAxis, Fn fn) {
  if (pipelineAxis < 0)
    return fn(int64_t(0));
  if (auto transfer = dyn_cast<SendRecvOp>(op)) {
    int64_t from = transfer.getSource(), to = transfer.getDest();
    for (int64_t s : {from, to})
      if (s >= 0 && s < stages && (s == from || to != from))
        fn(s);
    return;
  }
  if (auto attr = op->getAttrOfType<IntegerAttr>(CleaveDialect::kStageAttrName)) {
    if (attr.getInt() >= 0 && attr.getInt() < stages)
      fn(attr.getInt());
    return;
  }
  for (int64_t s = 0; s < stages; ++s)
    fn(s);
}

/// The bytes each stage's ops read and write (one entry when `pipelineAxis`
/// is -1), for CacheState::stepTraffic: one pass over the step.
std::vector<double> stagesTraffic(func::FuncOp step, int64_t stages,
                                  int64_t pipelineAxis,
                                  const llvm::DenseSet<Operation *> &views) {
  std::vector<double> bytes(stages, 0);
  for (Operation &op : step.getBody().front()) {
    if (isCollective(&op) || views.contains(&op))
      continue;
    // (A convolution's bytes are the same on either runtime.)
    double opBytes = costOf(&op, ConvRuntime::Cuda).bytes;
    forEachStage(&op, stages, pipelineAxis,
                 [&](int64_t s) { bytes[s] += opBytes; });
  }
  return bytes;
}

/// Times ops and collectives of one rank on `cluster`.
class StepTimer {
public:
  StepTimer(const Cluster &cluster, MeshAttr mesh, bool ringOnly,
            Precision precision)
      : cluster(cluster), mesh(mesh), ringOnly(ringOnly),
        bf16(precision == Precision::Bf16), byteScale(bf16 ? 0.5 : 1.0) {}

  /// Ops the program runs inside a later op's fused loop: no call of
  /// their own.
  llvm::DenseSet<Operation *> fusedAway;
  /// Ops the program runs as views of their input (a micro-batch's rows
  /// of a step input: MemoryPlan::rowsOfInput): no call, no bytes.
  llvm::DenseSet<Operation *> views;
  /// The ops of updates the program fuses, with the share of their own
  /// cost they take and whether the call is theirs (FusedUpdates.h).
  llvm::DenseMap<Operation *, FusedUpdate> fusedUpdates;
  /// Weights whose live taps the program keeps in a copy (runtime
  /// CroppedWeight, codegen BackwardFusion): from one step to the next,
  /// so that every convolution pass reads the copy alone, or for the step,
  /// cropped by its first pass.
  llvm::DenseSet<Value> keptCrops, refreshedCrops;

  /// Seconds of a compute op: its roofline time (or a measured kernel's,
  /// when longer) and the cost of an op.
  /// With caches, its bytes are read from a cache or from memory as
  /// `cache` says (and `cache` moves on).
  double opSeconds(const OpCost &cost, Operation *op, CacheState &cache) const {
    // A fused update's arithmetic is done in the call that applies it; its
    // memory traffic and measured-kernel time shrink to its share.
    FusedUpdate fused = fusedUpdates.lookup_or(op, FusedUpdate());
    double share = fused.share;
    if (cost.free || views.contains(op))
      return 0;
    double overhead =
        fusedAway.contains(op) || !fused.call ? 0 : cluster.opOverheadUs * 1e-6;
    double peak = cluster.peakTflopsFp32;
    if (cost.matrix && bf16)
      peak = cluster.peakTflopsBf16;
    else if (cost.matrix && op->getNumResults())
      if (auto type = dyn_cast<ShapedType>(op->getResult(0).getType());
          type &&
          (type.getElementType().isBF16() || type.getElementType().isF16()))
        peak = cluster.peakTflopsBf16;
    double efficiency =
        cost.matrix ? cluster.matrixEfficiency(cost.m, cost.n, cost.k)
                    : cluster.computeEfficiency;
    double flops = cost.flops;
    applyDirectConvRate(cost, cluster, flops, efficiency);
    double compute = cost.im2col
                         ? im2colConvSeconds(*cost.im2col, cluster, peak * 1e12)
                         : flops / (peak * 1e12 * efficiency);
    double bytes = cost.bytes * byteScale;
    // Each operand comes from the smallest cache holding both what passed
    // through since it was last touched (its reuse distance; the whole
    // step's traffic when not yet touched) and the op's own bytes; the
    // rest of the op's bytes (its results) from the smallest holding those.
    // Inside a fused loop a value passes in a register: an op fused into
    // a later one's loop writes no result, its reader reads none.
    double seconds = 0, operandBytes = 0, registerBytes = 0;
    for (Value operand : op->getOperands()) {
      auto type = dyn_cast<ShapedType>(operand.getType());
      Operation *def = operand.getDefiningOp();
      if (!type || !type.hasStaticShape() || isa_and_nonnull<ConstantOp>(def))
        continue;
      double operandSize = tensorBytes(type) * byteScale;
      if (cost.liveTaps < 1 && readsCopiedTaps(op, operand, cache)) {
        bytes -= operandSize * (1 - cost.liveTaps);
        operandSize *= cost.liveTaps;
      }
      if (def && fusedAway.contains(def)) {
        registerBytes += operandSize;
        continue;
      }
      auto it = cache.touched.find(operand);
      double distance = it == cache.touched.end()
                            ? cache.stepTraffic
                            : cache.traffic - it->second;
      operandBytes += operandSize;
      seconds += operandSize / bandwidthHolding(std::max(distance, bytes));
    }
    double resultBytes = fusedAway.contains(op)
                             ? 0
                             : std::max(0.0, bytes - operandBytes -
                                                 registerBytes);
    seconds += resultBytes / bandwidthHolding(bytes);
    bytes = share * (operandBytes + resultBytes);
    seconds *= share;
    for (Value operand : op->getOperands())
      cache.touched[operand] = cache.traffic;
    cache.traffic += bytes;
    for (Value result : op->getResults())
      cache.touched[result] = cache.traffic;
    double memory = seconds / cluster.memoryEfficiency;
    // Measured kernels: their rows and elements at the calibrated rates.
    double kernel = 0;
    if (cost.kernel) {
      const KernelRate &rate =
          cluster.kernelRates[static_cast<size_t>(*cost.kernel)];
      kernel = share *
               (cost.kernelRows * rate.rowNs +
                cost.kernelElements * rate.elementNs) *
               1e-9;
    }
    return overhead + std::max({compute, memory, kernel});
  }

  /// Whether convolution pass `op` reads `weight`'s live taps from the
  /// program's copy of them (its other taps read only padding): always for
  /// a copy kept between steps, after the step's first pass for one the
  /// first pass crops (and `cache` notes that it did).
  bool readsCopiedTaps(Operation *op, Value weight, CacheState &cache) const {
    bool passReadsWeight = false;
    if (auto conv = dyn_cast<ConvOp>(op))
      passReadsWeight = conv.getWeight() == weight;
    else if (auto grad = dyn_cast<ConvGradInputOp>(op))
      passReadsWeight = grad.getWeight() == weight;
    if (!passReadsWeight)
      return false;
    if (keptCrops.contains(weight))
      return true;
    return refreshedCrops.contains(weight) &&
           !cache.cropped.insert(weight).second;
  }

  /// Bytes per second of the smallest cache level holding `bytes` (the
  /// L2 cache, the last-level cache), or of memory.
  double bandwidthHolding(double bytes) const {
    double gbs = cluster.memoryBandwidthGBs;
    if (cluster.cacheMiB > 0 && bytes <= cluster.cacheMiB * 1024 * 1024)
      gbs = cluster.cacheBandwidthGBs;
    else if (cluster.llcMiB > 0 && bytes <= cluster.llcMiB * 1024 * 1024)
      gbs = cluster.llcBandwidthGBs;
    return gbs * 1e9;
  }

  /// Whose convolutions the target runs.
  ConvRuntime convRuntime() const { return convRuntimeOf(cluster); }

  /// The share of a started all-reduce's time the rank's compute hides.
  double commOverlap() const { return cluster.commOverlap; }

  /// The buffers, in fp32 bytes, of the all-reduces the runtime makes of
  /// a bucket: on the cpu target one per segment (forEachBucketSegment),
  /// each with whether its tensors are packed into it; on the cuda target
  /// (ring only) the whole bucket, summed where its tensors are.
  SmallVector<std::pair<double, bool>> bucketSegments(AllReduceOp op) const {
    SmallVector<int64_t> counts;
    for (Value input : op.getInputs())
      counts.push_back(cast<ShapedType>(input.getType()).getNumElements());
    auto type = cast<ShapedType>(op.getInputs()[0].getType());
    int64_t bytes = std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
    SmallVector<std::pair<double, bool>> segments;
    if (ringOnly) {
      double total = 0;
      for (int64_t count : counts)
        total += double(count) * bytes;
      segments.push_back({total, false});
      return segments;
    }
    ::cleave::rt::forEachBucketSegment(
        counts.data(), static_cast<int>(counts.size()), bytes,
        [&](int first, int end) {
          double total = 0;
          for (int i = first; i < end; ++i)
            total += double(counts[i]) * bytes;
          segments.push_back({total, end - first > 1});
        });
    return segments;
  }

  /// Seconds the step's own thread spends copying a gradient bucket's
  /// packed runs of small tensors into one buffer each before their
  /// all-reduces start, and as long again copying the sums back out after
  /// the wait (runtime/CollectiveKernels.cpp, startAllReduceBucket): a copy
  /// reads and writes the run's bytes. Zero for other collectives and
  /// tensors summed in place.
  double bucketCopySeconds(Operation *op) const {
    auto allReduce = dyn_cast<AllReduceOp>(op);
    if (!allReduce || axisGroupSize(op) <= 1)
      return 0;
    double bytes = 0;
    for (auto [buffer, packed] : bucketSegments(allReduce))
      if (packed)
        bytes += buffer * byteScale;
    if (bytes == 0)
      return 0;
    return 2 * bytes / bandwidthHolding(2 * bytes) / cluster.memoryEfficiency;
  }

  /// Ranks in the group of the mesh axes `op` names.
  int64_t axisGroupSize(Operation *op) const {
    int64_t group = 1;
    if (auto attr = op->getAttrOfType<ArrayAttr>("axes"))
      for (auto axis : attr.getAsRange<StringAttr>())
        group *= mesh.getAxisSizes()[mesh.getAxisIndex(axis.getValue())];
    return group;
  }

  /// Seconds of a collective sending `bytes` (of the fp32 program) from
  /// the rank at `coords`.
  double collectiveSeconds(Operation *op, int64_t fp32Bytes,
                           ArrayRef<int64_t> coords) {
    double bytes = fp32Bytes * byteScale;
    SmallVector<StringRef> axes;
    if (auto transfer = dyn_cast<SendRecvOp>(op))
      axes.push_back(transfer.getAxis());
    else if (auto attr = op->getAttrOfType<ArrayAttr>("axes"))
      for (auto axis : attr.getAsRange<StringAttr>())
        axes.push_back(axis.getValue());
    int64_t group = 1;
    for (StringRef axis : axes)
      group *= mesh.getAxisSizes()[mesh.getAxisIndex(axis)];
    if (group <= 1 && !isa<SendRecvOp>(op))
      return 0;
    const Link &link =
        crossesNodes(axes, coords) ? cluster.interNode : cluster.intraNode;
    int64_t steps = group - 1;
    // The buffer of the collectives `cleave calibrate` times on the
    // runtime's own code (Link::collectives): the tensors an all-reduce
    // sums, a reduce-scatter's input, an all-gather's output.
    std::optional<MeasuredCollective> measured;
    double buffer = 0;
    if (isa<SendRecvOp>(op))
      steps = bytes ? 1 : 0;
    else if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
      // Each segment's all-reduce, its share of the bytes sent.
      SmallVector<std::pair<double, bool>> segments = bucketSegments(allReduce);
      double total = 0;
      for (auto [segment, packed] : segments)
        total += segment;
      double seconds = 0;
      for (auto [segment, packed] : segments) {
        int64_t segmentSteps = 2 * (group - 1);
        if (!ringOnly && ::cleave::rt::usesRecursiveDoubling(
                             static_cast<int64_t>(segment * byteScale),
                             static_cast<int>(group))) {
          segmentSteps = 0;
          for (int64_t mask = 1; mask < group; mask <<= 1)
            ++segmentSteps;
        }
        seconds += cluster.collectiveSeconds(
            link, MeasuredCollective::AllReduce, segment * byteScale,
            total > 0 ? bytes * segment / total : 0, group, segmentSteps);
      }
      return seconds;
    } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
      measured = MeasuredCollective::ReduceScatter;
      buffer = tensorBytes(scatter.getInput().getType()) * byteScale;
    } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
      measured = MeasuredCollective::AllGather;
      buffer = tensorBytes(gather.getResult().getType()) * byteScale;
    }
    // A hand-over runs on the communication thread: handed to it, and
    // the waiting thread woken at its end. (A measured all-reduce's time
    // holds its own hand-off.)
    double handOff = isa<SendRecvOp>(op) ? cluster.handOffUs * 1e-6 : 0;
    return handOff + innerDimCopySeconds(op, buffer) +
           cluster.collectiveSeconds(link, measured, buffer, bytes, group,
                                     steps);
  }

  /// Along a dimension with others before it, the runtimes pack a
  /// reduce-scatter's input rank-major first and unpack an all-gather's
  /// output after (runtime/CollectiveKernels.cpp, CudaCollectives.cu): a
  /// copy of the whole `buffer` the collectives `cleave calibrate` times
  /// do not make.
  double innerDimCopySeconds(Operation *op, double buffer) const {
    ShapedType type;
    int64_t dim = 0;
    if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
      type = cast<ShapedType>(scatter.getInput().getType());
      dim = scatter.getDim();
    } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
      type = cast<ShapedType>(gather.getResult().getType());
      dim = gather.getDim();
    } else {
      return 0;
    }
    int64_t outer = 1;
    for (int64_t d = 0; d < dim && d < type.getRank(); ++d)
      outer *= type.getDimSize(d);
    if (outer <= 1 || buffer <= 0)
      return 0;
    return 2 * buffer / bandwidthHolding(2 * buffer) / cluster.memoryEfficiency;
  }

private:
  /// Whether the group over `axes` holding `coords` spans several nodes:
  /// ranks are the mesh coordinates row-major, a node the next
  /// devicesPerNode of them.
  bool crossesNodes(ArrayRef<StringRef> axes, ArrayRef<int64_t> coords) {
    SmallVector<int64_t> indices;
    for (StringRef axis : axes)
      indices.push_back(mesh.getAxisIndex(axis));
    llvm::DenseSet<int64_t> nodes;
    SmallVector<int64_t> at(coords);
    for (int64_t a : indices)
      at[a] = 0;
    // Every member's rank, odometer-style over the group's axes.
    while (true) {
      int64_t rank = 0;
      for (auto [a, size] : llvm::enumerate(mesh.getAxisSizes()))
        rank = rank * size + at[a];
      nodes.insert(rank / cluster.devicesPerNode);
      if (nodes.size() > 1)
        return true;
      int64_t i = static_cast<int64_t>(indices.size()) - 1;
      for (; i >= 0; --i) {
        int64_t a = indices[i];
        if (++at[a] < mesh.getAxisSizes()[a])
          break;
        at[a] = 0;
      }
      if (i < 0)
        return false;
    }
  }

  const Cluster &cluster;
  MeshAttr mesh;
  bool ringOnly;
  /// Predicting bf16: matrix products at its peak, 2-byte elements.
  bool bf16;

public:
  /// Bytes of the bf16 program per byte of the fp32 one.
  const double byteScale;
};

struct StageTime {
  double total = 0, compute = 0, flops = 0;
  /// What the ops of micro-batches took (StageShare).
  double microbatchBusy = 0, microbatchCompute = 0, microbatchFlops = 0;
  /// The hand-overs to and from other stages (send_recv) the stage takes
  /// part in, as its clock runs them (a receiver's hand-off only), those
  /// it sends, and each for micro-batches' (StageShare).
  double handOver = 0, sentHandOver = 0;
  double microbatchHandOver = 0, microbatchSentHandOver = 0;
};

/// One stage's clocks as the emitted program runs its step: compute in
/// program order, collectives on a communication stream. The emitter
/// starts every all-reduce and waits for it before the first op that
/// reads a result; the other collectives complete in place. A bucket of
/// several tensors is copied on the compute stream before its all-reduce
/// starts and after its wait (StepTimer::bucketCopySeconds). While a
/// started all-reduce and compute run together, each takes 1 - overlap
/// (Cluster::commOverlap) of their common time longer: compute hides all
/// of the all-reduce at overlap 1, none at 0 (they take turns).
struct StreamClock {
  double now = 0, commFree = 0;
  /// The share of a started all-reduce's time compute hides.
  double overlap = 1;
  /// The ends of the all-reduces started, in start order (the stream runs
  /// them in turn), the copy after each one's wait, and the first not
  /// known to have ended.
  SmallVector<double> ends, copies;
  size_t firstRunning = 0;
  /// The last all-reduce an op waits for (an index into `ends`: waiting
  /// for one waits for those started before it), the copies out of the
  /// buckets it waits for, and the all-reduces nothing waits for.
  llvm::DenseMap<Operation *, size_t> waitFor;
  llvm::DenseMap<Operation *, double> copyAt;
  SmallVector<size_t> unwaited;

  /// Before `op` runs: the wait for the all-reduces it reads, and their
  /// buckets' copies out.
  void reach(Operation *op) {
    if (auto it = waitFor.find(op); it != waitFor.end())
      now = std::max(now, ends[it->second]);
    if (auto it = copyAt.find(op); it != copyAt.end())
      now += it->second;
  }
  /// Runs `seconds` of compute, longer while all-reduces run (`overlap`).
  void compute(double seconds) {
    if (overlap < 1) {
      while (firstRunning < ends.size() && ends[firstRunning] <= now)
        ++firstRunning;
      // The stream runs from now until its last all-reduce ends.
      if (firstRunning < ends.size()) {
        double common = std::min(seconds, ends.back() - now);
        double extra = (1 - overlap) * common;
        for (size_t i = firstRunning; i < ends.size(); ++i)
          ends[i] += extra;
        commFree = std::max(commFree, ends.back());
        now += extra;
      }
    }
    now += seconds;
  }
  /// Runs the collective `op` for `seconds` after `copySeconds` of copying
  /// on the compute stream (and as long again after its wait); returns
  /// when it starts.
  double runCollective(Operation *op, double seconds, double copySeconds) {
    compute(copySeconds);
    double start = std::max(now, commFree);
    commFree = start + seconds;
    if (!isa<AllReduceOp>(op)) {
      now = commFree;
      return start;
    }
    ends.push_back(commFree);
    copies.push_back(copySeconds);
    if (Operation *user = firstUser(op)) {
      waitFor[user] = ends.size() - 1;
      copyAt[user] += copySeconds;
    } else {
      unwaited.push_back(ends.size() - 1);
    }
    return start;
  }
  /// When the stage's step ends: its compute, and the all-reduces nothing
  /// waits for (and their copies out).
  double finish() const {
    double end = std::max(now, commFree);
    for (size_t i : unwaited)
      end = std::max(end, ends[i] + copies[i]);
    return end;
  }
};

/// The step of the rank at the mesh origin of every pipeline stage (one
/// entry without stages): per stage a compute stream and a communication
/// stream in program order, all stages in one pass over the ops.
std::vector<StageTime> timeStages(func::FuncOp step, StepTimer &timer,
                                  MeshAttr mesh, int64_t stages,
                                  int64_t pipelineAxis, bool ringOnly,
                                  ArrayRef<double> stepTraffic) {
  struct Clock : StreamClock {
    CacheState cache;
    SmallVector<int64_t> coords;
  };
  std::vector<Clock> clocks(stages);
  for (int64_t s = 0; s < stages; ++s) {
    clocks[s].overlap = timer.commOverlap();
    clocks[s].cache.stepTraffic = stepTraffic[s];
    clocks[s].coords.assign(mesh ? mesh.getAxisSizes().size() : 0, 0);
    if (pipelineAxis >= 0)
      clocks[s].coords[pipelineAxis] = s;
  }
  std::vector<StageTime> times(stages);
  for (Operation &op : step.getBody().front()) {
    bool collective = isCollective(&op);
    bool ofMicrobatch = microbatchOfOp(&op) >= 0;
    std::optional<OpCost> cost;
    forEachStage(&op, stages, pipelineAxis, [&](int64_t s) {
      Clock &clock = clocks[s];
      int64_t stage = pipelineAxis >= 0 ? s : -1;
      double before = clock.now;
      clock.reach(&op);
      if (collective) {
        int kind = -1;
        int64_t bytes =
            bytesSentBy(&op, mesh, clock.coords, stage, ringOnly, kind);
        double seconds = timer.collectiveSeconds(&op, bytes, clock.coords);
        clock.runCollective(&op, seconds, timer.bucketCopySeconds(&op));
        if (ofMicrobatch)
          times[s].microbatchBusy += clock.now - before;
        if (auto transfer = dyn_cast<SendRecvOp>(op);
            transfer && transfer.getSource() != transfer.getDest()) {
          bool sends = transfer.getSource() == s;
          times[s].handOver += seconds;
          times[s].sentHandOver += sends ? seconds : 0;
          if (ofMicrobatch) {
            times[s].microbatchHandOver += seconds;
            times[s].microbatchSentHandOver += sends ? seconds : 0;
          }
        }
        return;
      }
      if (!cost)
        cost = costOf(&op, timer.convRuntime());
      double seconds = timer.opSeconds(*cost, &op, clock.cache);
      clock.compute(seconds);
      times[s].compute += seconds;
      times[s].flops += cost->flops;
      if (ofMicrobatch) {
        times[s].microbatchBusy += clock.now - before;
        times[s].microbatchCompute += seconds;
        times[s].microbatchFlops += cost->flops;
      }
    });
  }
  for (int64_t s = 0; s < stages; ++s)
    times[s].total = clocks[s].finish();
  return times;
}

/// The predicted timeline and collectives of every stage (at the mesh
/// origin of the other axes): each stage's clock advances through its
/// ops in program order as timeStage's does; a send_recv starts once both
/// its stages have reached it and ends on both at once.
void simulateSchedule(func::FuncOp step, StepTimer &timer, MeshAttr mesh,
                      int64_t stages, int64_t pipelineAxis, bool ringOnly,
                      ArrayRef<double> traffic, const StepPhases &phases,
                      bool nodeTimes, Prediction &p) {
  struct Clock : StreamClock {
    /// The open compute slice (index in p.schedule, -1: none) and its key.
    int64_t open = -1;
    CacheState cache;
  };
  std::vector<Clock> clocks(stages);
  for (int64_t s = 0; s < stages; ++s) {
    clocks[s].overlap = timer.commOverlap();
    clocks[s].cache.stepTraffic = traffic[s];
  }
  auto coordsOf = [&](int64_t s) {
    SmallVector<int64_t> coords(mesh ? mesh.getAxisSizes().size() : 0, 0);
    if (pipelineAxis >= 0)
      coords[pipelineAxis] = s;
    return coords;
  };
  auto stageArg = [&](int64_t s) { return pipelineAxis >= 0 ? s : -1; };
  std::map<std::tuple<int64_t, std::string, std::string>, CollectiveGroup>
      groups;
  // Each node's time per stage, named as the program's trace names it.
  std::map<std::pair<int64_t, std::string>, NodeTime> nodes;
  auto addToNode = [&](int64_t s, Operation *op, double seconds) {
    if (!nodeTimes)
      return;
    std::string name = traceNodeName(op);
    NodeTime &node = nodes[{s, name}];
    node.stage = s;
    node.name = name;
    ++node.ops;
    node.ms += seconds * 1e3;
  };
  auto record = [&](int64_t s, Operation *op, int64_t bytes, double start,
                    double seconds) {
    addToNode(s, op, seconds);
    std::string axes;
    if (auto transfer = dyn_cast<SendRecvOp>(op))
      axes = transfer.getAxis().str();
    else if (auto attr = op->getAttrOfType<ArrayAttr>("axes"))
      for (auto axis : attr.getAsRange<StringAttr>())
        axes += (axes.empty() ? "" : ",") + axis.getValue().str();
    std::string kind = op->getName().stripDialect().str();
    CollectiveGroup &g = groups[{s, kind, axes}];
    g.stage = s, g.kind = kind, g.axes = axes;
    ++g.count;
    g.bytes += bytes;
    g.ms += seconds * 1e3;
    if (seconds > 0)
      p.schedule.push_back({s, -1, kind, start * 1e3, (start + seconds) * 1e3});
  };
  Block &body = step.getBody().front();

  for (Operation &op : body) {
    if (isa<ConstantOp, func::ReturnOp>(op))
      continue;
    if (auto transfer = dyn_cast<SendRecvOp>(op); transfer && stages > 1) {
      int64_t from = transfer.getSource(), to = transfer.getDest();
      if (from < 0 || to < 0 || from >= stages || to >= stages)
        continue;
      SmallVector<int64_t> coords = coordsOf(from);
      int kind = -1;
      int64_t bytes = bytesSentBy(&op, mesh, coords, from, ringOnly, kind);
      double seconds = timer.collectiveSeconds(&op, bytes, coords);
      double start = std::max(clocks[from].now, clocks[to].now);
      for (int64_t s : {from, to}) {
        clocks[s].now = start + seconds;
        clocks[s].open = -1;
      }
      record(from, &op, bytes, start, seconds);
      record(to, &op, 0, start, seconds);
      continue;
    }
    forEachStage(&op, stages, pipelineAxis, [&](int64_t s) {
      Clock &clock = clocks[s];
      clock.reach(&op);
      if (isCollective(&op)) {
        SmallVector<int64_t> coords = coordsOf(s);
        int kind = -1;
        int64_t bytes =
            bytesSentBy(&op, mesh, coords, stageArg(s), ringOnly, kind);
        double seconds = timer.collectiveSeconds(&op, bytes, coords);
        record(s, &op, bytes,
               clock.runCollective(&op, seconds, timer.bucketCopySeconds(&op)),
               seconds);
        return;
      }
      double seconds =
          timer.opSeconds(costOf(&op, timer.convRuntime()), &op, clock.cache);
      int64_t microbatch = StepPhases::microbatchOf(&op);
      const char *phase = stepPhaseName(phases.phaseOf(&op));
      if (clock.open < 0 || p.schedule[clock.open].microbatch != microbatch ||
          p.schedule[clock.open].kind != phase ||
          p.schedule[clock.open].endMs < clock.now * 1e3) {
        p.schedule.push_back(
            {s, microbatch, phase, clock.now * 1e3, clock.now * 1e3});
        clock.open = static_cast<int64_t>(p.schedule.size()) - 1;
      }
      clock.compute(seconds);
      p.schedule[clock.open].endMs = clock.now * 1e3;
      addToNode(s, &op, seconds);
    });
  }
  // Empty spans (free ops only) say nothing.
  llvm::erase_if(p.schedule, [](const ScheduleSlice &slice) {
    return slice.endMs <= slice.startMs;
  });
  for (auto &[key, group] : groups)
    p.collectives.push_back(group);
  for (auto &[key, node] : nodes)
    p.nodeTimes.push_back(node);
  llvm::stable_sort(p.nodeTimes, [](const NodeTime &a, const NodeTime &b) {
    return std::tie(a.stage, b.ms) < std::tie(b.stage, a.ms);
  });
}

/// predictBytesSent's numbers, walking the program once: each rank's sum
/// over the collectives (bytesSentBy) of its stage; in `ofMicrobatches`,
/// the part of micro-batches' collectives. What a rank sends in a
/// collective depends only on its stage and its index in the collective's
/// group, and collectives alike (a repeated layer's) send alike: so each
/// kind of collective of a stage is evaluated once per group index (at a
/// rank of that index), counted, and each rank reads its index's total
/// (a 1024-rank mesh would otherwise evaluate every collective per rank).
std::vector<BytesByKind>
bytesSentPerRank(func::FuncOp step, MeshAttr mesh, int64_t pipelineAxis,
                 bool ringOnly, std::vector<BytesByKind> &ofMicrobatches) {
  ArrayRef<int64_t> sizes = mesh.getAxisSizes();
  int64_t stages = pipelineAxis >= 0 ? sizes[pipelineAxis] : 1;
  // A collective's kind: its op, inherent attributes (axes, dims, roots,
  // stages) and types; with how many of it the stage has, by whether it is
  // a micro-batch's.
  using Signature = std::vector<const void *>;
  struct Count {
    Operation *op = nullptr;
    int64_t all = 0, ofMicrobatch = 0;
  };
  std::vector<std::map<Signature, Count>> counts(stages);
  for (Operation &op : step.getBody().front()) {
    if (!isCollective(&op))
      continue;
    Attribute inherent = op.getPropertiesAsAttribute();
    Signature signature{op.getName().getAsOpaquePointer(),
                        inherent ? inherent.getAsOpaquePointer()
                                 : op.getAttrDictionary().getAsOpaquePointer()};
    for (Type type : op.getOperandTypes())
      signature.push_back(type.getAsOpaquePointer());
    for (Type type : op.getResultTypes())
      signature.push_back(type.getAsOpaquePointer());
    bool ofMicrobatch = microbatchOfOp(&op) >= 0;
    forEachStage(&op, stages, pipelineAxis, [&](int64_t s) {
      Count &count = counts[s][signature];
      count.op = count.op ? count.op : &op;
      ++count.all;
      count.ofMicrobatch += ofMicrobatch;
    });
  }
  // Per stage and group (its axes, major to minor): the bytes a rank of
  // each group index sends.
  struct GroupTotals {
    SmallVector<int64_t> axes;
    std::vector<BytesByKind> all, ofMicrobatches;
  };
  std::vector<std::map<SmallVector<int64_t>, GroupTotals>> totals(stages);
  for (int64_t s = 0; s < stages; ++s)
    for (auto &[signature, count] : counts[s]) {
      SmallVector<int64_t> axes;
      if (auto names = count.op->getAttrOfType<ArrayAttr>("axes"))
        for (auto name : names.getAsRange<StringAttr>())
          axes.push_back(mesh.getAxisIndex(name.getValue()));
      int64_t size = 1;
      for (int64_t a : axes)
        size *= sizes[a];
      GroupTotals &group = totals[s][axes];
      group.axes = axes;
      group.all.resize(size, BytesByKind{});
      group.ofMicrobatches.resize(size, BytesByKind{});
      SmallVector<int64_t> coords(sizes.size(), 0);
      if (pipelineAxis >= 0)
        coords[pipelineAxis] = s;
      for (int64_t index = 0; index < size; ++index) {
        for (int64_t i = axes.size() - 1, rest = index; i >= 0; --i) {
          coords[axes[i]] = rest % sizes[axes[i]];
          rest /= sizes[axes[i]];
        }
        int kind = -1;
        int64_t sent = bytesSentBy(count.op, mesh, coords,
                                   pipelineAxis >= 0 ? s : -1, ringOnly, kind);
        if (kind < 0)
          continue;
        group.all[index][kind] += sent * count.all;
        group.ofMicrobatches[index][kind] += sent * count.ofMicrobatch;
      }
    }
  std::vector<BytesByKind> bytes(mesh.getNumRanks(), BytesByKind{});
  ofMicrobatches.assign(mesh.getNumRanks(), BytesByKind{});
  SmallVector<int64_t> coords(sizes.size());
  for (int64_t rank = 0; rank < mesh.getNumRanks(); ++rank) {
    for (int64_t a = coords.size() - 1, rest = rank; a >= 0; --a) {
      coords[a] = rest % sizes[a];
      rest /= sizes[a];
    }
    int64_t stage = pipelineAxis >= 0 ? coords[pipelineAxis] : 0;
    for (auto &[axes, group] : totals[stage]) {
      int64_t index = 0;
      for (int64_t a : axes)
        index = index * sizes[a] + coords[a];
      for (size_t kind = 0; kind < bytes[rank].size(); ++kind) {
        bytes[rank][kind] += group.all[index][kind];
        ofMicrobatches[rank][kind] += group.ofMicrobatches[index][kind];
      }
    }
  }
  return bytes;
}

/// Per stage, what micro-batches hold (StageShare): the bytes micro-batch
/// 0's forward ops produce there that its backward ops read or that it
/// sends to the next stage (a received activation counts on the receiving
/// stage), and the bytes the
/// micro-batches' ops hand to the ops run once a step (the accumulated
/// gradients). A step without micro-batches is one micro-batch: what its
/// forward pass keeps for its backward pass.
void microbatchMemory(func::FuncOp step, const StepPhases &phases,
                      int64_t stages, int64_t pipelineAxis,
                      std::vector<StageShare> &shares) {
  // Each op's micro-batch, looked up once (its users ask again).
  llvm::DenseMap<Operation *, int64_t> microbatchOf;
  bool whole = true;
  for (Operation &op : step.getBody().front()) {
    int64_t microbatch = microbatchOfOp(&op);
    microbatchOf[&op] = microbatch;
    whole &= microbatch < 0;
  }
  auto addTo = [&](Operation *op, int64_t bytes, int64_t StageShare::*field) {
    if (auto transfer = dyn_cast<SendRecvOp>(op);
        transfer && pipelineAxis >= 0) {
      if (transfer.getDest() >= 0 && transfer.getDest() < stages)
        shares[transfer.getDest()].*field += bytes;
      return;
    }
    forEachStage(op, stages, pipelineAxis,
                 [&](int64_t s) { shares[s].*field += bytes; });
  };
  for (Operation &op : step.getBody().front()) {
    int64_t microbatch = whole ? 0 : microbatchOf.lookup(&op);
    if (microbatch < 0)
      continue;
    // A received activation (a transfer of a forward op's result) is held
    // on the receiving stage as the forward ops' results are.
    auto transfer = dyn_cast<SendRecvOp>(op);
    Operation *sent =
        transfer ? transfer->getOperand(0).getDefiningOp() : nullptr;
    bool forward =
        microbatch == 0 &&
        (phases.phaseOf(transfer && sent ? sent : &op) == StepPhase::Forward);
    int64_t stashed = 0, handed = 0;
    for (Value result : op.getResults()) {
      bool toBackward = false, toStep = false;
      for (Operation *user : result.getUsers()) {
        // A value sent to the next stage is held until its send is waited
        // for, after the stage's later forward passes: the memory plan keeps
        // it with each micro-batch in flight, as what the backward pass
        // reads.
        toBackward |= forward && (phases.phaseOf(user) == StepPhase::Backward ||
                                  isa<SendRecvOp>(user));
        toStep |= !whole && !isa<func::ReturnOp>(user) &&
                  microbatchOf.lookup(user) < 0;
      }
      int64_t bytes = tensorBytes(result.getType());
      stashed += toBackward ? bytes : 0;
      handed += toStep ? bytes : 0;
    }
    if (stashed)
      addTo(&op, stashed, &StageShare::stashedBytes);
    if (handed)
      addTo(&op, handed, &StageShare::handedOnBytes);
  }
  // Per stage, whether micro-batch 1 starts its forward pass before
  // micro-batch 0 ends its backward pass: whether most of what micro-batch
  // 1 keeps for its backward pass is made before micro-batch 0's last
  // backward op (ops of the data alone, such as a loss's count, run before
  // every pass in gradient accumulation's order and keep little).
  std::vector<int64_t> lastBackwardOf0(stages, -1);
  int64_t position = 0;
  for (Operation &op : step.getBody().front()) {
    ++position;
    if (microbatchOf.lookup(&op) == 0 &&
        phases.phaseOf(&op) == StepPhase::Backward)
      forEachStage(&op, stages, pipelineAxis,
                   [&](int64_t s) { lastBackwardOf0[s] = position; });
  }
  std::vector<double> stashedEarly(stages, 0), stashedOf1(stages, 0);
  position = 0;
  for (Operation &op : step.getBody().front()) {
    ++position;
    if (microbatchOf.lookup(&op) != 1 ||
        phases.phaseOf(&op) != StepPhase::Forward)
      continue;
    int64_t bytes = 0;
    for (Value result : op.getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return phases.phaseOf(user) == StepPhase::Backward;
          }))
        bytes += tensorBytes(result.getType());
    forEachStage(&op, stages, pipelineAxis, [&](int64_t s) {
      stashedOf1[s] += bytes;
      if (position < lastBackwardOf0[s])
        stashedEarly[s] += bytes;
    });
  }
  for (int64_t s = 0; s < stages; ++s)
    shares[s].microbatchesOverlap =
        stashedOf1[s] > 0 && stashedEarly[s] > 0.5 * stashedOf1[s];
}

/// The fp32 program's memory and traffic in Megatron-LM's mixed
/// precision (predictStep): scratch, gradients, workspace and bytes sent
/// halve; each parameter element's 4 bytes become a 2-byte copy and a
/// 4-byte fp32 master, held with the optimizer state and split as it is
/// (a parameter's state tensors are named after it, "w.exp_avg": ZeRO-1
/// and 2 split the master with them, as in the ZeRO paper), or as the
/// parameter when it has no state.
void toMixedPrecision(Prediction &p) {
  llvm::StringMap<const HeldTensor *> firstState;
  for (const HeldTensor &tensor : p.tensors)
    if (tensor.role == "state")
      firstState.try_emplace(
          llvm::StringRef(tensor.name).rsplit('.').first, &tensor);
  for (const HeldTensor &tensor : p.tensors) {
    if (tensor.role != "parameter")
      continue;
    const HeldTensor *state = firstState.lookup(tensor.name);
    int64_t master = state ? state->bytes : tensor.bytes;
    for (auto [s, memory] : llvm::enumerate(p.stageMemory))
      if (tensor.stage < 0 || tensor.stage == static_cast<int64_t>(s))
        memory.optimizerState += master;
  }
  for (StageMemory &memory : p.stageMemory) {
    memory.parameters /= 2;
    memory.gradients /= 2;
    memory.activations /= 2;
    memory.workspace /= 2;
    memory.collectiveBuffers /= 2;
    memory.collectiveStaging /= 2;
  }
  p.setMemoryFromStages();
  for (HeldTensor &tensor : p.tensors)
    if (tensor.role == "parameter")
      tensor.bytes /= 2;
  for (auto *sent : {&p.bytesSent, &p.microbatchBytesSent})
    for (BytesByKind &kinds : *sent)
      for (int64_t &bytes : kinds)
        bytes /= 2;
  for (StageShare &share : p.stageShares) {
    share.stashedBytes /= 2;
    share.handedOnBytes /= 2;
  }
  p.commBytesPerRank /= 2;
}

} // namespace

llvm::StringRef precisionName(Precision precision) {
  return precision == Precision::Bf16 ? "bf16" : "fp32";
}

std::optional<Precision> parsePrecision(llvm::StringRef name) {
  if (name == "fp32")
    return Precision::Fp32;
  if (name == "bf16")
    return Precision::Bf16;
  return std::nullopt;
}

llvm::Expected<Prediction> predictStep(func::FuncOp step,
                                       const Cluster &cluster,
                                       int64_t microbatches,
                                       int64_t virtualStages, Target target,
                                       Precision precision, bool nodeTimes) {
  Prediction p;
  bool ringOnly = target == Target::Cuda;
  MeshAttr mesh = getModuleMesh(step);
  auto module = step->getParentOfType<ModuleOp>();
  int64_t stages = 1, pipelineAxis = -1;
  if (auto axis =
          module->getAttrOfType<StringAttr>(CleaveDialect::kPipelineAttrName);
      axis && mesh) {
    pipelineAxis = mesh.getAxisIndex(axis.getValue());
    stages = mesh.getAxisSizes()[pipelineAxis];
  }

  // Memory: what the program's --print-memory reports, for the rank that
  // holds the most: the emitter's memory plan of each stage (planned here
  // as the emitter plans it, without writing the program's source).
  // The fusion the emitter plans, which the step's time mirrors too: the
  // transposes the cpu target's strided products read or write through
  // make no call of their own.
  FusionPlan fusion = planFusion(step, [](Operation *op) {
    return !codegen::elementwiseBody(op).empty();
  });
  if (codegen::TargetTraits::of(target).stridedMatmuls)
    planStridedMatmuls(step, fusion);
  if (codegen::TargetTraits::of(target).fusedBackwardSgd)
    planLiveTapUpdates(step, fusion);
  std::vector<int64_t> stageArenaBytes, stageGradientBytes;
  std::vector<CollectiveBufferBytes> stageCollectiveBytes;
  llvm::DenseSet<Operation *> views;
  llvm::DenseMap<Operation *, FusedUpdate> fusedUpdates;
  llvm::DenseSet<Value> keptCrops, refreshedCrops;
  // Layers whose backward GEMMs the cpu runtime runs on its skinny kernels.
  SkinnyBackwardPairs skinnyBackward;
  {
    FusionPlan memoryFusion = fusion;
    if (codegen::TargetTraits::of(target).asyncHandOvers)
      planUncopiedSends(step, memoryFusion);
    for (auto [s, plan] :
         llvm::enumerate(planMemoryOfStages(step, memoryFusion, stages))) {
      stageArenaBytes.push_back(plan.arenaBytes);
      stageGradientBytes.push_back(plan.gradientBytesAtPeak);
      stageCollectiveBytes.push_back(
          target == Target::Cpu
              ? collectiveBufferBytes(step, plan, memoryFusion,
                                      stages > 1 ? int64_t(s) : -1)
              : CollectiveBufferBytes{});
      for (const auto &entry : plan.rowsOfInput)
        if (Operation *slice = entry.first.getDefiningOp())
          views.insert(slice);
      // As the emitter pairs updates with the calls that apply them, and
      // keeps copies of weights' live taps.
      std::optional<BackwardFusion> backward;
      if (codegen::TargetTraits::of(target).fusedBackwardSgd) {
        backward =
            planBackwardFusion(step.getBody().front(), plan, memoryFusion,
                               stages > 1 ? int64_t(s) : -1);
        keptCrops.insert(backward->croppedWeights.begin(),
                         backward->croppedWeights.end());
        refreshedCrops.insert(backward->refreshedWeights.begin(),
                              backward->refreshedWeights.end());
        for (auto [gemm, sgd] : backward->updateWithInputGradient)
          if (runsSkinnyBackward(cast<GemmOp>(gemm))) {
            skinnyBackward[gemm] = sgd.getGrad().getDefiningOp();
          }
      }
      for (auto [op, fused] : planner::fusedUpdates(
               plan, memoryFusion, backward ? &*backward : nullptr))
        fusedUpdates[op] = fused;
    }
  }

  // Parameters and state by stage and kind, and the tensors behind them.
  p.stageMemory.assign(stages, StageMemory{});
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto param =
        step.getArgAttrOfType<StringAttr>(i, CleaveDialect::kParamAttrName);
    auto state =
        step.getArgAttrOfType<StringAttr>(i, CleaveDialect::kStateAttrName);
    if (!param && !state)
      continue;
    int64_t bytes = tensorBytes(arg.getType());
    auto at =
        step.getArgAttrOfType<IntegerAttr>(i, CleaveDialect::kStageAttrName);
    for (int64_t s = 0; s < stages; ++s)
      if (!at || stages == 1 || at.getInt() == s)
        (param ? p.stageMemory[s].parameters
               : p.stageMemory[s].optimizerState) += bytes;
    HeldTensor tensor;
    tensor.name = (param ? param : state).getValue().str();
    tensor.role = param ? "parameter" : "state";
    tensor.stage = at && stages > 1 ? at.getInt() : -1;
    tensor.bytes = bytes;
    llvm::append_range(tensor.shape,
                       cast<RankedTensorType>(arg.getType()).getShape());
    if (auto sharding = step.getArgAttrOfType<ShardingAttr>(
            i, CleaveDialect::kShardingAttrName);
        sharding && mesh && !sharding.isFullyReplicated()) {
      tensor.sharding = sharding.formatDims();
    }
    p.tensors.push_back(std::move(tensor));
  }
  for (int64_t s = 0; s < stages; ++s) {
    p.stageMemory[s].gradients = stageGradientBytes[s];
    p.stageMemory[s].activations = stageArenaBytes[s] - stageGradientBytes[s];
  }
  // Kernels' and collectives' memory beside the plan: the cuda target's
  // scratch region (one bound for every stage), the cpu target's oneDNN
  // workspaces and collective buffers (each stage its own ops').
  for (auto [memory, inputs] :
       llvm::zip(p.stageMemory, stageInputBytes(step, stages, target))) {
    memory.inputs = inputs.total;
    memory.graphInputs = inputs.graphInputs;
  }
  if (target == Target::Cuda) {
    int64_t scratch = kernelScratchBytes(step);
    for (StageMemory &memory : p.stageMemory)
      memory.workspace = scratch;
  } else {
    int threads = static_cast<int>(cluster.threads);
    std::vector<int64_t> workspaces =
        cpuKernelWorkspaceBytes(step, fusion, skinnyBackward, stages, threads);
    std::vector<int64_t> packing = cpuBlasPackingBytes(
        step, fusion, skinnyBackward, stages, threads, cluster.blasBlocking);
    // The libraries' own memory: MPI's on every rank of a run of more
    // than one, oneDNN's for each primitive a stage creates.
    int64_t ranks = 1;
    if (mesh)
      for (int64_t size : mesh.getAxisSizes())
        ranks *= size;
    std::vector<int64_t> primitives =
        cluster.oneDnnPrimitiveBytes > 0
            ? cpuOneDnnPrimitives(step, stages, threads)
            : std::vector<int64_t>(p.stageMemory.size(), 0);
    for (auto [memory, kernels, collectives, blas, made] :
         llvm::zip(p.stageMemory, workspaces, stageCollectiveBytes, packing,
                   primitives)) {
      memory.collectiveBuffers = collectives.total();
      memory.collectiveStaging = collectives.staging;
      memory.workspace = kernels + collectives.total();
      memory.blasPacking = blas;
      memory.libraries = (ranks > 1 ? cluster.commLibraryBytes : 0) +
                         made * cluster.oneDnnPrimitiveBytes;
    }
  }
  p.setMemoryFromStages();
  if (mesh) {
    p.bytesSent = bytesSentPerRank(step, mesh, pipelineAxis, ringOnly,
                                   p.microbatchBytesSent);
    for (const BytesByKind &kinds : p.bytesSent) {
      int64_t sum = 0;
      for (int64_t bytes : kinds)
        sum += bytes;
      p.commBytesPerRank = std::max(p.commBytesPerRank, sum);
    }
  }

  StepPhases phases(step);
  for (Operation &op : step.getBody().front()) {
    ++p.ops;
    p.microbatchOps += microbatchOfOp(&op) >= 0;
  }
  p.stageShares.assign(stages, StageShare{});
  microbatchMemory(step, phases, stages, pipelineAxis, p.stageShares);

  if (precision == Precision::Bf16)
    toMixedPrecision(p);

  // Time: the slowest stage of the rank at the mesh's origin (the other
  // coordinates run the same ops on blocks of the same size).
  StepTimer timer(cluster, mesh, ringOnly, precision);
  timer.fusedAway = std::move(fusion.fusedAway);
  timer.views = std::move(views);
  timer.fusedUpdates = std::move(fusedUpdates);
  timer.keptCrops = std::move(keptCrops);
  timer.refreshedCrops = std::move(refreshedCrops);
  std::vector<double> traffic =
      stagesTraffic(step, stages, pipelineAxis, timer.views);
  for (double &bytes : traffic)
    bytes *= timer.byteScale;
  std::vector<StageTime> times = timeStages(step, timer, mesh, stages,
                                            pipelineAxis, ringOnly, traffic);
  for (auto [s, time] : llvm::enumerate(times)) {
    p.maxStageComputeMs = std::max(p.maxStageComputeMs, time.compute * 1e3);
    StageShare &share = p.stageShares[s];
    share.busyMs = time.total * 1e3;
    share.computeMs = time.compute * 1e3;
    share.flops = time.flops;
    share.microbatchBusyMs = time.microbatchBusy * 1e3;
    share.microbatchComputeMs = time.microbatchCompute * 1e3;
    share.microbatchFlops = time.microbatchFlops;
    share.handOverMs = time.handOver * 1e3;
    share.sentHandOverMs = time.sentHandOver * 1e3;
    share.microbatchHandOverMs = time.microbatchHandOver * 1e3;
    share.microbatchSentHandOverMs = time.microbatchSentHandOver * 1e3;
  }
  // The stage whose busy time, with the others' fill and drain, makes the
  // step; its compute and exposed communication, the rest waiting.
  size_t critical = 0;
  p.stepMs = pipelineStepMs(p.stageShares, microbatches, virtualStages,
                            &critical);
  const StageTime &slowest = times[critical];
  double busy = slowest.total * 1e3;
  p.computeMs = slowest.compute * 1e3;
  p.exposedCommMs = busy - p.computeMs;
  p.bubbleMs = p.stepMs - busy;
  p.bubbleFraction = p.stepMs > 0 ? p.bubbleMs / p.stepMs : 0;
  p.flopsPerRank = slowest.flops;
  simulateSchedule(step, timer, mesh, stages, pipelineAxis, ringOnly, traffic,
                   phases, nodeTimes, p);
  if (precision == Precision::Bf16)
    for (CollectiveGroup &group : p.collectives)
      group.bytes /= 2;
  return p;
}

llvm::Error checkEmits(func::FuncOp step, Target target) {
  EmitOptions options;
  options.target = target;
  options.modelName = "model";
  if (failed(emitProgram(step, options)))
    return llvm::make_error<DiagnosedError>();
  return llvm::Error::success();
}

double pipelineStepMs(ArrayRef<StageShare> stages, int64_t microbatches,
                      int64_t virtualStages, size_t *critical) {
  if (critical)
    *critical = 0;
  if (stages.empty())
    return 0;
  if (stages.size() == 1)
    return stages[0].busyMs;
  // Every stage's work without its hand-overs, and every hand-over once,
  // whole (as its sender runs it).
  double work = 0, handOvers = 0;
  for (const StageShare &stage : stages) {
    work += stage.busyMs - stage.handOverMs;
    handOvers += stage.sentHandOverMs;
  }
  double chunks = double(microbatches * virtualStages);
  double step = -1, slowest = -1;
  for (auto [k, stage] : llvm::enumerate(stages)) {
    // Stage k busy throughout; the other stages' work and the hand-overs
    // not in k's busy time, 1/(mV) of them, fill and drain around it.
    double others = (work - (stage.busyMs - stage.handOverMs)) +
                    (handOvers - stage.handOverMs);
    double candidate = stage.busyMs + std::max(0.0, others) / chunks;
    // Without micro-batches every k gives the same sum: the busiest.
    bool tie = std::abs(candidate - step) <= 1e-9 * std::max(candidate, step);
    if (candidate > step && !tie) {
      step = candidate;
      slowest = stage.busyMs;
      if (critical)
        *critical = k;
    } else if (tie && stage.busyMs > slowest) {
      slowest = stage.busyMs;
      if (critical)
        *critical = k;
    }
  }
  return step;
}

double pipelineBubble(int64_t stages, int64_t microbatches,
                      int64_t virtualStages) {
  if (stages <= 1)
    return 0.0;
  return double(stages - 1) /
         double(microbatches * virtualStages + stages - 1);
}

void Prediction::setMemoryFromStages() {
  persistentBytes = scratchBytes = peakBytesPerRank = peakStage = 0;
  workspaceBytes = collectiveBufferBytes = inputBytes = blasPackingBytes =
      libraryBytes = neededBytesPerRank = 0;
  for (auto [s, memory] : llvm::enumerate(stageMemory)) {
    inputBytes = std::max(inputBytes, memory.inputs);
    blasPackingBytes = std::max(blasPackingBytes, memory.blasPacking);
    libraryBytes = std::max(libraryBytes, memory.libraries);
    neededBytesPerRank = std::max(neededBytesPerRank, memory.total());
    if (memory.workspace > workspaceBytes) {
      workspaceBytes = memory.workspace;
      collectiveBufferBytes = memory.collectiveBuffers;
    }
    int64_t persistent = memory.parameters + memory.optimizerState;
    int64_t scratch = memory.gradients + memory.activations;
    persistentBytes = std::max(persistentBytes, persistent);
    scratchBytes = std::max(scratchBytes, scratch);
    if (persistent + scratch > peakBytesPerRank) {
      peakBytesPerRank = persistent + scratch;
      peakStage = static_cast<int64_t>(s);
    }
  }
}

} // namespace cleave::planner
