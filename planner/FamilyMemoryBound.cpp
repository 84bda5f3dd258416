//===- FamilyMemoryBound.cpp - rejecting a layout family at once ----------===//

#include "planner/FamilyMemoryBound.h"

#include "planner/LayerRolledStep.h"

#include "planner/RolledStep.h"

#include "llvm/Support/FormatVariadic.h"

#include "llvm/ADT/STLExtras.h"

#include <map>

namespace cleave::planner {

using namespace mlir::cleave;

namespace {

/// Scratch of one strategy taken for another's is trusted to this share:
/// their memory plans agree to the byte on the skeletons measured
/// (test/planner/family-bound.test), the margin is for what they may not.
constexpr double kSharedScratchMargin = 0.05;

/// The micro-batches in flight beyond the first are counted this much
/// short: the rolled estimate's memory tolerance (planner/Planner.cpp).
constexpr double kRolledStashMargin = 0.15;

/// Whether the strategy differs from the others of its mesh and tensor
/// split only in what it holds: data parallelism and ZeRO-1/2, alone or
/// inside Megatron's tensor split.
bool splitsOnlyState(Strategy strategy) {
  return strategy != Strategy::None && zeroStage(strategy) < 3;
}

/// The least memory of any of `members`, from the prediction `least` of
/// one micro-batch of the family's smallest size (1 / `most` of a
/// data-parallel rank's batch): a member of m micro-batches keeps
/// microbatchesInFlight of them, m / most times as big, so at least min
/// over m of in-flight x most / m of `least`'s stashed activations on each
/// stage (1F1B: min(most, p - s); without stages one, the least the
/// unrolled order may keep). Those beyond the first are counted short by
/// the rolled estimate's tolerance.
struct LeastMemory {
  /// Scratch with the stage's own workspaces (kernels' and collectives':
  /// a stage that sends tensors or reduces more holds more than the
  /// others) and inputs: the most of any stage, the least of any stage
  /// without its collectives' buffers (what another strategy of the mesh
  /// shares), and the most any stage needs with its parameters and state
  /// (each rank allocates its own stage's scratch).
  double scratch = 0, leastStageScratch = 0, needed = 0;
};

LeastMemory leastMemory(const Prediction &least,
                        const std::vector<Candidate *> &members, int64_t most) {
  LeastMemory memory;
  int64_t stages = static_cast<int64_t>(least.stageMemory.size());
  for (int64_t s = 0; s < stages; ++s) {
    double inFlight = double(most);
    for (const Candidate *member : members) {
      const PlanLayout &layout = member->layout;
      inFlight = std::min(
          inFlight, microbatchesInFlight(layout.schedule, stages, s,
                                         layout.microbatches,
                                         layout.virtualStages,
                                         /*overlapping=*/false) *
                        double(most) / double(layout.microbatches));
    }
    const StageMemory &held = least.stageMemory[s];
    double stashed = s < int64_t(least.stageShares.size())
                         ? least.stageShares[s].stashedBytes
                         : 0;
    double scratch =
        held.gradients + held.activations +
        std::max(0.0, inFlight - 1) * stashed * (1 - kRolledStashMargin) +
        held.workspace + held.inputs + held.blasPacking + held.libraries;
    memory.scratch = std::max(memory.scratch, scratch);
    // The collectives' buffers are the strategy's own (ZeRO reduces by
    // reduce-scatter, data parallelism by all-reduce): not shared.
    double shared = scratch - held.collectiveBuffers;
    memory.leastStageScratch =
        s == 0 ? shared : std::min(memory.leastStageScratch, shared);
    memory.needed = std::max(memory.needed,
                             held.parameters + held.optimizerState + scratch);
  }
  return memory;
}

std::string familyKey(const PlanLayout &layout) {
  return layout.meshText() + "|" + strategyName(layout.strategy).str() + "|" +
         layout.pipelineAxis;
}

} // namespace

FamilyMemoryBounds::FamilyMemoryBounds(
    const SearchOptions &options, std::vector<Candidate> &candidates,
    std::function<double(const PlanLayout &)> heldBytes,
    const Candidate *exempt)
    : options(options), heldBytes(std::move(heldBytes)) {
  if (options.given || !options.hints.empty() || !this->heldBytes)
    return;
  for (Candidate &candidate : candidates) {
    if (!candidate.rejected.empty())
      continue;
    Family &family = families[familyKey(candidate.layout)];
    family.members.push_back(&candidate);
    family.mostMicrobatches =
        std::max(family.mostMicrobatches, candidate.layout.microbatches);
  }
  if (exempt)
    families.erase(familyKey(exempt->layout));
}

const FamilyMemoryBounds::Family *
FamilyMemoryBounds::familyOf(const Candidate &candidate) const {
  auto it = families.find(familyKey(candidate.layout));
  if (it == families.end() || it->second.bounded ||
      !llvm::is_contained(it->second.members, &candidate))
    return nullptr;
  return &it->second;
}

// A family's least-memory layout: one micro-batch (of the family's
// smallest size), full recomputation.
std::pair<PlanLayout, std::string>
FamilyMemoryBounds::leastOf(const Family &family) const {
  PlanLayout least = family.members.front()->layout;
  least.microbatches = 1;
  least.virtualStages = 1;
  least.recompute = "full";
  if (!least.pipelineAxis.empty())
    least.schedule = PipelineSchedule::OneFOneB;
  // Megatron's tensor split and the intra-op ILP's keep other scratch
  // than plain data parallelism on a mesh.
  const char *split = least.intraOp                ? "ilp"
                      : isMegatron(least.strategy) ? "megatron"
                                                   : "dp";
  std::string shareKey = least.meshText() + "|" + least.pipelineAxis + "|" +
                         std::to_string(family.mostMicrobatches) + "|" + split;
  return {least, shareKey};
}

std::optional<std::pair<PlanLayout, int64_t>>
FamilyMemoryBounds::pending(const Candidate &candidate) const {
  const Family *family = familyOf(candidate);
  if (!family)
    return std::nullopt;
  auto [least, shareKey] = leastOf(*family);
  if (splitsOnlyState(least.strategy) && sharedScratch.count(shareKey))
    return std::nullopt;
  return std::make_pair(least,
                        options.globalBatch / family->mostMicrobatches);
}

double
FamilyMemoryBounds::fullRecomputeEstimate(const Candidate &candidate) const {
  auto it = families.find(familyKey(candidate.layout));
  if (it == families.end() || !it->second.bounded)
    return 0;
  const Family &family = it->second;
  return family.persistent + family.scratch * double(family.mostMicrobatches) /
                                 double(candidate.layout.microbatches);
}

void FamilyMemoryBounds::bound(const Candidate &candidate,
                               const PredictAtBatch &predict) {
  if (!familyOf(candidate))
    return;
  Family &family = families[familyKey(candidate.layout)];
  family.bounded = true;
  auto [least, shareKey] = leastOf(family);
  int64_t most = family.mostMicrobatches;
  double needed = 0;
  std::string how;
  auto shared = sharedScratch.find(shareKey);
  if (splitsOnlyState(least.strategy) && shared != sharedScratch.end()) {
    family.scratch = shared->second;
    family.persistent = heldBytes(least);
    needed = shared->second * (1 - kSharedScratchMargin) + heldBytes(least);
    how = "(from another strategy's scratch on this mesh; not partitioned)";
  } else {
    std::optional<Prediction> p = predict(least, options.globalBatch / most);
    if (!p)
      return;
    LeastMemory memory = leastMemory(*p, family.members, most);
    // Another strategy's parameters and state may peak on another stage:
    // it shares the least of this one's stages.
    if (splitsOnlyState(least.strategy))
      sharedScratch[shareKey] = memory.leastStageScratch;
    family.scratch = memory.scratch;
    family.persistent = p->persistentBytes;
    needed = memory.needed;
    how = p->layerTemplateStages
              ? "(only that layout predicted, from fewer of the model's layers)"
              : "(only that layout partitioned)";
  }
  // A prediction from fewer layers rejects only beyond its tolerance.
  double slack = options.rollLayers ? 1 - kLayerRolledMemoryTolerance : 1;
  if (needed * slack <= options.cluster.memoryBytes())
    return;
  int64_t samples = options.globalBatch / most / least.axisSize("dp");
  for (Candidate *member : family.members)
    if (member->rejected.empty())
      member->rejected = llvm::formatv(
          "does not fit: even one micro-batch of {0} samples per "
          "data-parallel rank (the smallest of its mesh and strategy) with "
          "full recomputation needs at least {1} per rank, the device has "
          "{2} {3}",
          samples, formatBytes(static_cast<int64_t>(needed)),
          formatBytes(options.cluster.memoryBytes()), how);
}

} // namespace cleave::planner
