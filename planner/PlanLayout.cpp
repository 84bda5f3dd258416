//===- PlanLayout.cpp - a plan as cleave compile flags ---------------------===//
//
// The vocabulary of a plan: its mesh, flags, the words that describe each
// axis, and its stable key. See Planner.h.
//
//===----------------------------------------------------------------------===//

#include "planner/Planner.h"

#include "llvm/ADT/StringExtras.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace cleave::planner {

using namespace mlir::cleave;

std::string formatBytes(int64_t bytes) {
  double value = static_cast<double>(bytes);
  if (value >= 1024.0 * 1024 * 1024)
    return llvm::formatv("{0:f2} GiB", value / (1024.0 * 1024 * 1024)).str();
  if (value >= 1024.0 * 1024)
    return llvm::formatv("{0:f2} MiB", value / (1024.0 * 1024)).str();
  if (value >= 1024.0)
    return llvm::formatv("{0:f1} KiB", value / 1024.0).str();
  return llvm::formatv("{0} B", bytes).str();
}

namespace {
/// A bucket size in MiB as a flag's value: "1", "0.5".
std::string bucketText(double mb) {
  if (mb == std::floor(mb))
    return std::to_string(static_cast<int64_t>(mb));
  return llvm::formatv("{0}", mb).str();
}
} // namespace

std::string PlanLayout::meshText() const {
  std::string text;
  for (auto &[name, size] : mesh)
    text += (text.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return text;
}

int64_t PlanLayout::ranks() const {
  int64_t ranks = 1;
  for (auto &axis : mesh)
    ranks *= axis.second;
  return ranks;
}

int64_t PlanLayout::axisSize(llvm::StringRef name) const {
  for (auto &[axis, size] : mesh)
    if (axis == name)
      return size;
  return 1;
}

bool PlanLayout::crossesNodes(llvm::StringRef axis,
                              int64_t devicesPerNode) const {
  int64_t span = 1;
  for (auto it = mesh.rbegin(); it != mesh.rend(); ++it) {
    span *= it->second;
    if (it->first == axis)
      return span > devicesPerNode;
  }
  return false;
}

std::vector<std::string> PlanLayout::flags() const {
  std::vector<std::string> flags;
  if (!mesh.empty())
    flags.insert(flags.end(), {"--mesh", meshText()});
  if (strategy != Strategy::None)
    flags.insert(flags.end(), {"--strategy", strategyName(strategy).str()});
  if (!pipelineAxis.empty())
    flags.insert(flags.end(), {"--pipeline", pipelineAxis});
  if (schedule != PipelineSchedule::GPipe)
    flags.insert(flags.end(),
                 {"--pipeline-schedule", pipelineScheduleName(schedule).str()});
  if (virtualStages > 1)
    flags.insert(flags.end(),
                 {"--virtual-stages", std::to_string(virtualStages)});
  if (!pipelineCuts.empty())
    flags.insert(flags.end(), {"--pipeline-cuts", llvm::join(pipelineCuts, ",")});
  if (pipelineLinkBalance && !pipelineAxis.empty())
    flags.insert(
        flags.end(),
        {"--pipeline-link-balance",
         llvm::formatv("{0}", llvm::format("%g", *pipelineLinkBalance)).str()});
  if (microbatches > 1)
    flags.insert(flags.end(), {"--microbatches", std::to_string(microbatches)});
  if (recompute != "none")
    flags.insert(flags.end(), {"--recompute", recompute});
  if (intraOp)
    for (const ShardingHint &hint : intraOp->hints)
      flags.insert(flags.end(), {"--shard", formatShardingHint(hint)});
  if (bucketMb > 0)
    flags.insert(flags.end(), {"--bucket-mb", bucketText(bucketMb)});
  return flags;
}

std::string PlanLayout::strategyLabel() const {
  return intraOp ? "ilp" : strategyName(strategy).str();
}

std::string PlanLayout::describeAxis(llvm::StringRef axis) const {
  if (axis == pipelineAxis)
    switch (schedule) {
    case PipelineSchedule::GPipe:
      return "pipeline stages (GPipe)";
    case PipelineSchedule::OneFOneB:
      return "pipeline stages (1F1B)";
    case PipelineSchedule::Interleaved:
      return "pipeline stages (interleaved 1F1B, " +
             std::to_string(virtualStages) + " chunks per stage)";
    }
  if (axis == "tp" && isMegatron(strategy))
    return "tensor parallel (Megatron)";
  if (axis == "tp" && intraOp)
    return llvm::formatv("tensor parallel (intra-op ILP: {0} of {1} "
                         "parameters and states split{2})",
                         intraOp->splitTensors, intraOp->tensors,
                         intraOp->optimal
                             ? std::string()
                             : llvm::formatv("; CBC stopped at its node "
                                             "limit, at most {0:f1}% above "
                                             "the best split",
                                             100 * intraOp->gap)
                                   .str());
  if (axis == "dp")
    switch (zeroStage(strategy)) {
    case 1:
      return "data parallel, ZeRO-1 (optimizer state split)";
    case 2:
      return "data parallel, ZeRO-2 (+ gradients reduce-scattered)";
    case 3:
      return "data parallel, ZeRO-3 (+ parameters split)";
    default:
      return "data parallel";
    }
  return "as the hints say";
}

std::string PlanLayout::summary() const {
  std::string text = mesh.empty() ? "(one rank)" : meshText();
  if (strategy != Strategy::None || intraOp)
    text += " " + strategyLabel();
  if (schedule != PipelineSchedule::GPipe)
    text += " " + pipelineScheduleName(schedule).str();
  if (virtualStages > 1)
    text += " v=" + std::to_string(virtualStages);
  if (microbatches > 1)
    text += " mb=" + std::to_string(microbatches);
  if (recompute != "none")
    text += " recompute=" + recompute;
  if (bucketMb > 0)
    text += " bucket=" + bucketText(bucketMb) + "MB";
  return text;
}

std::string PlanLayout::key() const {
  return meshText() + "|" + strategyName(strategy).str() + "|" + pipelineAxis +
         "|" + pipelineScheduleName(schedule).str() + "|" +
         std::to_string(virtualStages) + "|" + std::to_string(microbatches) +
         "|" + recompute + (intraOp ? "|ilp" : "") +
         (bucketMb > 0 ? "|bucket=" + bucketText(bucketMb) : "") +
         (pipelineCuts.empty() ? ""
                               : "|cuts=" + llvm::join(pipelineCuts, ",")) +
         (pipelineLinkBalance
              ? llvm::formatv("|link={0}",
                              llvm::format("%g", *pipelineLinkBalance))
                    .str()
              : "") +
         (cutMicrobatches ? "|cut-mb=" + std::to_string(cutMicrobatches) : "");
}

} // namespace cleave::planner
