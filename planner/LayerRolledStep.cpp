//===- LayerRolledStep.cpp - a deep model's layout from a few layers ------===//

#include "planner/LayerRolledStep.h"

#include "runtime/CollectiveBuffers.h"

#include "planner/RolledStep.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace cleave::planner {

using namespace mlir::cleave;

namespace {

/// The stages of the templates of one and two layers per stage: the
/// first, a middle one and the last.
int64_t templateStages(int64_t stages) { return std::min<int64_t>(stages, 3); }

/// After how many stages the cuts of `stages` stages over `layers`
/// layers fall at the same place within a layer again.
int64_t cutPeriod(int64_t stages, int64_t layers) {
  return stages / std::gcd(stages, layers);
}

/// The stages of a template holding the same share of `layers` per stage
/// as each of `stages` stages does, when these hold fewer than two layers
/// each: the fewest (at most kMostShareStages) whose middle stages hold
/// every place a cut falls within a layer, and so every kind of middle
/// stage; 0 otherwise.
constexpr int64_t kMostShareStages = 16;
int64_t shareStages(int64_t stages, int64_t layers) {
  if (stages < 3 || layers >= 2 * stages)
    return 0;
  int64_t period = cutPeriod(stages, layers);
  int64_t q =
      period * ((std::max<int64_t>(3, period + 2) + period - 1) / period);
  return q <= std::min(stages, kMostShareStages) ? q : 0;
}

/// Which template stage stands for each full stage: the first and the
/// last stage for theirs; for a middle stage's time, the middle stages in
/// turn (their cuts fall at the places within a layer the full stages'
/// do, in the same proportions, though the ends' share of the work may
/// shift which stage is which), and for its memory the middle stage that
/// holds the most (where a stage ends up in the schedule decides how many
/// micro-batches it keeps).
struct StageMap {
  int64_t stages = 1, templateStages = 1, period = 1, largest = 1;
  StageMap(int64_t stages, const Prediction &t, int64_t period)
      : stages(stages),
        templateStages(static_cast<int64_t>(t.stageShares.size())),
        period(period) {
    auto held = [&](int64_t k) {
      const StageMemory &m = t.stageMemory[k];
      return m.parameters + m.optimizerState + m.gradients + m.activations;
    };
    for (int64_t k = 2; k + 1 < templateStages; ++k)
      if (held(k) > held(largest))
        largest = k;
  }
  int64_t of(int64_t s, bool memory = false) const {
    if (s == 0)
      return 0;
    if (s == stages - 1)
      return templateStages - 1;
    return memory ? largest : (s - 1) % period + 1;
  }
};

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
/// same coordinates, the pipeline axis' that of its stage's template
/// stage (`stageOut`: the rank's stage).
int64_t templateRank(const PlanLayout &layout, const StageMap &map,
                     int64_t rank, int64_t *stageOut) {
  int64_t result = 0, stride = 1, fullStride = 1;
  for (auto it = layout.mesh.rbegin(); it != layout.mesh.rend(); ++it) {
    int64_t coordinate = rank / fullStride % it->second;
    int64_t size = it->second;
    if (it->first == layout.pipelineAxis) {
      *stageOut = coordinate;
      coordinate = map.of(coordinate);
      size = map.templateStages;
    }
    result += coordinate * stride;
    stride *= size;
    fullStride *= it->second;
  }
  return result;
}

} // namespace

std::vector<LayerTemplate>
layerTemplates(const PlanLayout &layout,
               const std::vector<std::string> &startNames,
               int64_t totalLayers) {
  int64_t stages =
      layout.pipelineAxis.empty() ? 1 : layout.axisSize(layout.pipelineAxis);
  auto withStages = [&](int64_t count) {
    PlanLayout t = layout;
    t.pipelineCuts.clear();
    if (stages > 1) {
      for (auto &[axis, size] : t.mesh)
        if (axis == layout.pipelineAxis)
          size = count;
      t.virtualStages = 1;
      if (layout.schedule == PipelineSchedule::Interleaved)
        t.schedule = PipelineSchedule::OneFOneB;
    }
    return t;
  };
  if (int64_t q = shareStages(stages, totalLayers))
    return {LayerTemplate{withStages(q), totalLayers * q / stages}};
  std::vector<LayerTemplate> templates;
  int64_t kept = templateStages(stages);
  for (int64_t perStage = 1; perStage <= 2; ++perStage) {
    LayerTemplate t{withStages(kept), kept * perStage};
    for (int64_t s = 1; stages > 1 && s < kept; ++s)
      t.layout.pipelineCuts.push_back(startNames[s * perStage]);
    templates.push_back(std::move(t));
  }
  return templates;
}

Prediction rollLayers(const PlanLayout &layout,
                      llvm::ArrayRef<LayerTemplate> templates,
                      llvm::ArrayRef<Prediction> predicted,
                      int64_t totalLayers) {
  // With one template (the same share of layers per stage), every stage is
  // its template stage: a quantity rolled from one value to itself.
  const Prediction &one = predicted.front(), &two = predicted.back();
  Prediction p = one;
  p.estimated = true;
  p.schedule.clear();
  p.collectives.clear();
  p.tensors.clear();
  int64_t stages =
      layout.pipelineAxis.empty() ? 1 : layout.axisSize(layout.pipelineAxis);
  int64_t kept = static_cast<int64_t>(one.stageShares.size());
  StageMap map(stages, one,
               templates.size() == 1 ? cutPeriod(stages, totalLayers) : 1);
  PipelineSchedule templateSchedule = templates.front().layout.schedule;
  p.layerTemplateStages = kept;
  p.modelLayers = totalLayers;
  p.layerTemplateLayers.clear();
  for (const LayerTemplate &t : templates)
    p.layerTemplateLayers.push_back(t.layers);

  // Each stage's layers: a cut by work (compute time) as the compiler's.
  std::vector<Affine> work;
  for (int64_t s = 0; s < stages; ++s) {
    int64_t k = map.of(s);
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
  p.maxStageComputeMs = 0;
  for (int64_t s = 0; s < stages; ++s) {
    int64_t k = map.of(s), km = map.of(s, /*memory=*/true);
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
    const StageMemory &ma = one.stageMemory[km], &mb = two.stageMemory[km];
    StageMemory &memory = p.stageMemory[s];
    memory.parameters = rollBytes(ma.parameters, mb.parameters, n);
    memory.optimizerState = rollBytes(ma.optimizerState, mb.optimizerState, n);
    memory.gradients = rollBytes(ma.gradients, mb.gradients, n);
    memory.activations = rollBytes(ma.activations, mb.activations, n);
    // Kernels' workspaces are as large as the largest call's. The
    // collectives' staging buffers, one per op, grow with the layers, and
    // so do their workspaces as long as a gradient bucket grows with them,
    // up to the two slots a reduce step receives into.
    memory.collectiveStaging =
        rollBytes(ma.collectiveStaging, mb.collectiveStaging, n);
    int64_t wa = ma.collectiveBuffers - ma.collectiveStaging,
            wb = mb.collectiveBuffers - mb.collectiveStaging;
    memory.collectiveBuffers =
        std::min(std::max(wa, rollBytes(wa, wb, n)),
                 std::max({wa, wb, 2 * ::cleave::rt::kReducePieceBytes})) +
        memory.collectiveStaging;
    memory.workspace = std::max(ma.workspace - ma.collectiveBuffers,
                                mb.workspace - mb.collectiveBuffers) +
                       memory.collectiveBuffers;
    // The model's inputs are the same at any depth.
    memory.inputs = mb.inputs;
    memory.graphInputs = mb.graphInputs;
    // So are its products' shapes, and OpenBLAS's packing of them.
    memory.blasPacking = std::max(ma.blasPacking, mb.blasPacking);
    memory.libraries = mb.libraries;
    // The micro-batches the schedule keeps in flight on this stage, beyond
    // those on its template stage (1F1B: p - s of them), each hold the
    // activations one stashes (RolledStep.h).
    double inFlight =
        microbatchesInFlight(layout.schedule, stages, s, layout.microbatches,
                             layout.virtualStages, share.microbatchesOverlap);
    double templateInFlight =
        microbatchesInFlight(templateSchedule, kept, km, layout.microbatches, 1,
                             share.microbatchesOverlap);
    int64_t stashed = rollBytes(one.stageShares[km].stashedBytes,
                                two.stageShares[km].stashedBytes, n);
    memory.activations += static_cast<int64_t>(
        std::max(0.0, inFlight - templateInFlight) * stashed);
    p.maxStageComputeMs = std::max(p.maxStageComputeMs, share.computeMs);
  }
  p.setMemoryFromStages();

  timeStages(p, layout.microbatches, layout.virtualStages);

  // Each rank sends what its template rank sends with its stage's layers.
  p.commBytesPerRank = 0;
  int64_t ranks = layout.ranks();
  bool perRank = !one.bytesSent.empty() && !two.bytesSent.empty();
  p.bytesSent.assign(perRank ? ranks : 0, {});
  p.microbatchBytesSent.assign(perRank ? ranks : 0, {});
  for (int64_t rank = 0; perRank && rank < ranks; ++rank) {
    int64_t stage = 0;
    int64_t t = templateRank(layout, map, rank, &stage);
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
      p.microbatchBytesSent[rank] =
          rollKinds(one.microbatchBytesSent[t], two.microbatchBytesSent[t]);
    int64_t sum = 0;
    for (int64_t bytes : p.bytesSent[rank])
      sum += bytes;
    p.commBytesPerRank = std::max(p.commBytesPerRank, sum);
  }

  // Ops: grown with the layers from those of the templates.
  double times = double(totalLayers) / double(templates.front().layers);
  auto rollOps = [&](int64_t a, int64_t b) {
    return static_cast<int64_t>(
        templates.size() == 1 ? a * times : roll(double(a), double(b), times));
  };
  p.ops = rollOps(one.ops, two.ops);
  p.microbatchOps = rollOps(one.microbatchOps, two.microbatchOps);
  return p;
}

std::string fewerLayersNote(const Prediction &p) {
  if (p.layerTemplateLayers.empty())
    return "";
  std::string note = " on " + std::to_string(p.layerTemplateLayers.front());
  if (p.layerTemplateLayers.size() > 1)
    note += " and " + std::to_string(p.layerTemplateLayers.back());
  note +=
      " of the model's " + std::to_string(p.modelLayers) + " identical layers";
  if (p.layerTemplateLayers.size() == 1)
    note += " over " + std::to_string(p.layerTemplateStages) + " stages";
  return note;
}

} // namespace cleave::planner
