//===- LayerRolledStep.cpp - a deep model's layout from a few layers ------===//

#include "planner/LayerRolledStep.h"

#include "planner/RolledStep.h"

#include <algorithm>
#include <functional>

namespace cleave::planner {

using namespace mlir::cleave;

namespace {

/// The stages of the templates: the first, a middle one and the last.
int64_t templateStages(int64_t stages) { return std::min<int64_t>(stages, 3); }

/// Which template stage stands for stage `s` of `stages`.
int64_t kindOf(int64_t s, int64_t stages) {
  if (s == 0)
    return 0;
  if (s == stages - 1)
    return templateStages(stages) - 1;
  return 1;
}

/// One layer's worth and the rest of a quantity, from its value with one
/// and two layers: value(n) = fixed + n x slope.
struct Affine {
  double fixed = 0, slope = 0;
  Affine(double one, double two) : fixed(2 * one - two), slope(two - one) {}
  double at(double layers) const {
    return std::max(0.0, fixed + layers * slope);
  }
};

/// The layers each of `stages` stages holds when a cut by work gives
/// every stage the same work (a stage holding at least none), where stage
/// s's work with n layers is work[s].at(n).
std::vector<double> fluidCut(const std::vector<Affine> &work, double layers) {
  auto held = [&](double level, std::vector<double> *shares) {
    double sum = 0;
    for (const Affine &w : work) {
      double n = w.slope > 0 ? std::max(0.0, (level - w.fixed) / w.slope)
                             : layers / work.size();
      if (shares)
        shares->push_back(n);
      sum += n;
    }
    return sum;
  };
  double low = 0, high = 1;
  while (held(high, nullptr) < layers && high < 1e300)
    high *= 2;
  for (int i = 0; i < 200 && high - low > 1e-12 * high; ++i) {
    double mid = (low + high) / 2;
    (held(mid, nullptr) < layers ? low : high) = mid;
  }
  std::vector<double> shares;
  held(high, &shares);
  // Exactly the model's layers (the bisection stops near the level).
  double sum = 0;
  for (double n : shares)
    sum += n;
  for (double &n : shares)
    n *= sum > 0 ? layers / sum : 0;
  return shares;
}

/// The rank of the template mesh standing for `rank` of the full one: the
/// same coordinates, the pipeline axis' that of the template stage kind.
int64_t templateRank(const PlanLayout &layout, int64_t rank,
                     int64_t *stageOut) {
  int64_t stages = layout.pipelineAxis.empty()
                       ? 1
                       : layout.axisSize(layout.pipelineAxis);
  int64_t result = 0, stride = 1, fullStride = 1;
  int64_t stage = 0;
  for (auto it = layout.mesh.rbegin(); it != layout.mesh.rend(); ++it) {
    int64_t coordinate = rank / fullStride % it->second;
    int64_t size = it->second;
    if (it->first == layout.pipelineAxis) {
      stage = coordinate;
      coordinate = kindOf(coordinate, stages);
      size = templateStages(stages);
    }
    result += coordinate * stride;
    stride *= size;
    fullStride *= it->second;
  }
  *stageOut = stage;
  return result;
}

} // namespace

std::array<LayerTemplate, 2>
layerTemplates(const PlanLayout &layout,
               const std::vector<std::string> &startNames) {
  std::array<LayerTemplate, 2> templates;
  int64_t stages = layout.pipelineAxis.empty()
                       ? 1
                       : layout.axisSize(layout.pipelineAxis);
  int64_t kept = templateStages(stages);
  for (int64_t perStage = 1; perStage <= 2; ++perStage) {
    LayerTemplate &t = templates[perStage - 1];
    t.layout = layout;
    t.layers = kept * perStage;
    t.layout.pipelineCuts.clear();
    if (stages > 1) {
      for (auto &[axis, size] : t.layout.mesh)
        if (axis == layout.pipelineAxis)
          size = kept;
      t.layout.virtualStages = 1;
      if (layout.schedule == PipelineSchedule::Interleaved)
        t.layout.schedule = PipelineSchedule::OneFOneB;
      for (int64_t s = 1; s < kept; ++s)
        t.layout.pipelineCuts.push_back(startNames[s * perStage]);
    }
  }
  return templates;
}

Prediction rollLayers(const PlanLayout &layout, const Prediction &one,
                      const Prediction &two, int64_t totalLayers) {
  Prediction p = one;
  p.estimated = true;
  p.schedule.clear();
  p.collectives.clear();
  p.tensors.clear();
  int64_t stages = layout.pipelineAxis.empty()
                       ? 1
                       : layout.axisSize(layout.pipelineAxis);
  int64_t kept = templateStages(stages);
  PipelineSchedule templateSchedule =
      layout.schedule == PipelineSchedule::Interleaved
          ? PipelineSchedule::OneFOneB
          : layout.schedule;
  p.layerTemplateStages = kept;
  p.modelLayers = totalLayers;

  // Each stage's layers: a cut by work (compute time) as the compiler's.
  std::vector<Affine> work;
  for (int64_t s = 0; s < stages; ++s) {
    int64_t k = kindOf(s, stages);
    work.emplace_back(one.stageShares[k].computeMs,
                      two.stageShares[k].computeMs);
  }
  std::vector<double> layers = fluidCut(work, double(totalLayers));

  auto roll = [](double a, double b, double n) { return Affine(a, b).at(n); };
  auto rollBytes = [&](int64_t a, int64_t b, double n) {
    return static_cast<int64_t>(roll(double(a), double(b), n));
  };
  p.stageShares.assign(stages, StageShare{});
  p.stageMemory.assign(stages, StageMemory{});
  p.persistentBytes = 0;
  p.scratchBytes = 0;
  p.maxStageComputeMs = 0;
  for (int64_t s = 0; s < stages; ++s) {
    int64_t k = kindOf(s, stages);
    double n = layers[s];
    const StageShare &a = one.stageShares[k], &b = two.stageShares[k];
    StageShare &share = p.stageShares[s];
    share.busyMs = roll(a.busyMs, b.busyMs, n);
    share.computeMs = roll(a.computeMs, b.computeMs, n);
    share.flops = roll(a.flops, b.flops, n);
    share.microbatchBusyMs = roll(a.microbatchBusyMs, b.microbatchBusyMs, n);
    share.microbatchComputeMs =
        roll(a.microbatchComputeMs, b.microbatchComputeMs, n);
    share.microbatchFlops = roll(a.microbatchFlops, b.microbatchFlops, n);
    // A stage hands over the same activations however many layers it
    // holds.
    share.handOverMs = b.handOverMs;
    share.sentHandOverMs = b.sentHandOverMs;
    share.microbatchHandOverMs = b.microbatchHandOverMs;
    share.microbatchSentHandOverMs = b.microbatchSentHandOverMs;
    share.stashedBytes = rollBytes(a.stashedBytes, b.stashedBytes, n);
    share.handedOnBytes = rollBytes(a.handedOnBytes, b.handedOnBytes, n);
    share.microbatchesOverlap = b.microbatchesOverlap;
    const StageMemory &ma = one.stageMemory[k], &mb = two.stageMemory[k];
    StageMemory &memory = p.stageMemory[s];
    memory.parameters = rollBytes(ma.parameters, mb.parameters, n);
    memory.optimizerState = rollBytes(ma.optimizerState, mb.optimizerState, n);
    memory.gradients = rollBytes(ma.gradients, mb.gradients, n);
    memory.activations = rollBytes(ma.activations, mb.activations, n);
    memory.workspace = std::max(ma.workspace, mb.workspace);
    // The micro-batches the schedule keeps in flight on this stage, beyond
    // those on its template stage (1F1B: p - s of them), each hold the
    // activations one stashes (RolledStep.h).
    double inFlight = microbatchesInFlight(
        layout.schedule, stages, s, layout.microbatches, layout.virtualStages,
        share.microbatchesOverlap);
    double templateInFlight = microbatchesInFlight(
        templateSchedule, kept, k, layout.microbatches, 1,
        share.microbatchesOverlap);
    memory.activations += static_cast<int64_t>(
        std::max(0.0, inFlight - templateInFlight) * share.stashedBytes);
    p.persistentBytes =
        std::max(p.persistentBytes, memory.parameters + memory.optimizerState);
    p.scratchBytes =
        std::max(p.scratchBytes, memory.gradients + memory.activations);
    p.maxStageComputeMs = std::max(p.maxStageComputeMs, share.computeMs);
  }
  p.workspaceBytes = std::max(one.workspaceBytes, two.workspaceBytes);
  p.peakBytesPerRank = p.persistentBytes + p.scratchBytes;

  size_t critical = 0;
  p.stepMs = pipelineStepMs(p.stageShares, layout.microbatches,
                            layout.virtualStages, &critical);
  const StageShare &slowest = p.stageShares[critical];
  p.computeMs = slowest.computeMs;
  p.exposedCommMs = slowest.busyMs - slowest.computeMs;
  p.bubbleMs = p.stepMs - slowest.busyMs;
  p.bubbleFraction = p.stepMs > 0 ? p.bubbleMs / p.stepMs : 0;
  p.flopsPerRank = slowest.flops;

  // Each rank sends what its template rank sends with its stage's layers.
  p.commBytesPerRank = 0;
  int64_t ranks = layout.ranks();
  bool perRank = !one.bytesSent.empty() && !two.bytesSent.empty();
  p.bytesSent.assign(perRank ? ranks : 0, {});
  p.microbatchBytesSent.assign(perRank ? ranks : 0, {});
  for (int64_t rank = 0; perRank && rank < ranks; ++rank) {
    int64_t stage = 0;
    int64_t t = templateRank(layout, rank, &stage);
    if (t >= static_cast<int64_t>(one.bytesSent.size()) ||
        t >= static_cast<int64_t>(two.bytesSent.size()))
      continue;
    auto rollKinds = [&](const mlir::cleave::BytesByKind &a,
                         const mlir::cleave::BytesByKind &b) {
      mlir::cleave::BytesByKind kinds = a;
      for (size_t kind = 0; kind < kinds.size() && kind < b.size(); ++kind)
        kinds[kind] = rollBytes(a[kind], b[kind], layers[stage]);
      return kinds;
    };
    p.bytesSent[rank] = rollKinds(one.bytesSent[t], two.bytesSent[t]);
    if (t < static_cast<int64_t>(one.microbatchBytesSent.size()) &&
        t < static_cast<int64_t>(two.microbatchBytesSent.size()))
      p.microbatchBytesSent[rank] = rollKinds(one.microbatchBytesSent[t],
                                              two.microbatchBytesSent[t]);
    int64_t sum = 0;
    for (int64_t bytes : p.bytesSent[rank])
      sum += bytes;
    p.commBytesPerRank = std::max(p.commBytesPerRank, sum);
  }

  // Ops: the templates hold `kept` and 2 x `kept` layers.
  auto rollOps = [&](int64_t a, int64_t b) {
    return static_cast<int64_t>(
        roll(double(a), double(b), double(totalLayers) / double(kept)));
  };
  p.ops = rollOps(one.ops, two.ops);
  p.microbatchOps = rollOps(one.microbatchOps, two.microbatchOps);
  return p;
}

} // namespace cleave::planner
