//===- PlanJson.cpp - `cleave plan --json`'s plans ------------------------===//

#include "tools/cleave/PlanJson.h"

namespace cleave::driver {

namespace {

/// What `cleave report` draws of a predicted plan.
void addDetails(const planner::Prediction &p, llvm::json::Object &plan) {
  llvm::json::Array memory, schedule, collectives, tensors;
  for (const planner::StageMemory &m : p.stageMemory)
    memory.push_back(
        llvm::json::Object{{"parameters", m.parameters},
                           {"gradients", m.gradients},
                           {"optimizer_state", m.optimizerState},
                           {"activations", m.activations},
                           {"workspace", m.workspace},
                           {"collective_buffers", m.collectiveBuffers},
                           {"inputs", m.inputs},
                           {"blas_packing", m.blasPacking},
                           {"libraries", m.libraries}});
  for (const planner::ScheduleSlice &s : p.schedule)
    schedule.push_back(llvm::json::Object{{"stage", s.stage},
                                          {"microbatch", s.microbatch},
                                          {"kind", s.kind},
                                          {"start_ms", s.startMs},
                                          {"end_ms", s.endMs}});
  for (const planner::CollectiveGroup &c : p.collectives)
    collectives.push_back(llvm::json::Object{{"stage", c.stage},
                                             {"kind", c.kind},
                                             {"axes", c.axes},
                                             {"count", c.count},
                                             {"bytes", c.bytes},
                                             {"ms", c.ms}});
  for (const planner::HeldTensor &t : p.tensors)
    tensors.push_back(llvm::json::Object{{"name", t.name},
                                         {"role", t.role},
                                         {"sharding", t.sharding},
                                         {"stage", t.stage},
                                         {"shape", llvm::json::Array(t.shape)},
                                         {"bytes", t.bytes}});
  plan["memory_by_stage"] = std::move(memory);
  plan["schedule"] = std::move(schedule);
  plan["collectives"] = std::move(collectives);
  plan["tensors"] = std::move(tensors);
  if (!p.nodeTimes.empty()) {
    llvm::json::Array nodes;
    for (const planner::NodeTime &n : p.nodeTimes)
      nodes.push_back(llvm::json::Object{
          {"stage", n.stage}, {"name", n.name}, {"ops", n.ops}, {"ms", n.ms}});
    plan["node_times"] = std::move(nodes);
  }
}

} // namespace

llvm::json::Object planJson(const planner::Candidate &c,
                            const std::vector<std::string> &flags, int64_t rank,
                            bool details) {
  llvm::json::Object mesh, axes;
  for (auto &[name, size] : c.layout.mesh) {
    mesh[name] = size;
    axes[name] = llvm::json::Object{
        {"role", c.layout.describeAxis(name)},
        {"link", c.interNode.count(name) && c.interNode.at(name)
                     ? "inter-node"
                     : "intra-node"}};
  }
  llvm::json::Object plan{
      {"mesh", std::move(mesh)},
      {"mesh_flag", c.layout.meshText()},
      {"axes", std::move(axes)},
      {"strategy", c.layout.strategyLabel()},
      {"pipeline_axis", c.layout.pipelineAxis},
      {"microbatches", c.layout.microbatches},
      {"flags", llvm::json::Array(flags)}};
  if (rank > 0)
    plan["rank"] = rank;
  if (!c.rejected.empty())
    plan["reason"] = c.rejected;
  if (const auto &ilp = c.layout.intraOp) {
    // The ILP's own estimate, beside the cost model's prediction below.
    llvm::json::Array hints;
    for (const mlir::cleave::ShardingHint &hint : ilp->hints)
      hints.push_back(mlir::cleave::formatShardingHint(hint));
    plan["ilp"] = llvm::json::Object{{"objective_ms", ilp->objectiveMs},
                                     {"compute_ms", ilp->computeMs},
                                     {"comm_ms", ilp->commMs},
                                     {"whole_ms", ilp->wholeMs},
                                     {"best_split_ms", ilp->bestSplitMs},
                                     {"tensors", ilp->tensors},
                                     {"split_tensors", ilp->splitTensors},
                                     {"hints", std::move(hints)},
                                     {"variables", ilp->variables},
                                     {"constraints", ilp->constraints},
                                     {"optimal", ilp->optimal},
                                     {"gap", ilp->gap},
                                     {"seconds", ilp->seconds}};
  }
  if (c.prediction) {
    const planner::Prediction &p = *c.prediction;
    llvm::json::Object bytesByKind;
    static const char *kinds[] = {"all_reduce", "all_gather", "reduce_scatter",
                                  "all_to_all", "broadcast",  "send_recv"};
    // The busiest rank's bytes by kind.
    size_t busiest = 0;
    int64_t most = -1;
    for (size_t r = 0; r < p.bytesSent.size(); ++r) {
      int64_t sum = 0;
      for (int64_t b : p.bytesSent[r])
        sum += b;
      if (sum > most)
        most = sum, busiest = r;
    }
    for (size_t k = 0; k < 6; ++k)
      bytesByKind[kinds[k]] =
          p.bytesSent.empty() ? int64_t{0} : p.bytesSent[busiest][k];
    plan["predicted"] = llvm::json::Object{
        {"estimated", p.estimated},
        {"from_layers",
         p.layerTemplateLayers.empty()
             ? llvm::json::Value(nullptr)
             : llvm::json::Value(llvm::json::Array(p.layerTemplateLayers))},
        {"step_ms", p.stepMs},
        {"compute_ms", p.computeMs},
        {"exposed_comm_ms", p.exposedCommMs},
        {"bubble_ms", p.bubbleMs},
        {"bubble_fraction", p.bubbleFraction},
        {"flops_per_rank", p.flopsPerRank},
        {"peak_bytes_per_rank", p.peakBytesPerRank},
        {"persistent_bytes_per_rank", p.persistentBytes},
        {"scratch_bytes_per_rank", p.scratchBytes},
        {"workspace_bytes_per_rank", p.workspaceBytes},
        {"collective_buffer_bytes_per_rank", p.collectiveBufferBytes},
        {"input_bytes_per_rank", p.inputBytes},
        {"blas_packing_bytes_per_rank", p.blasPackingBytes},
        {"library_bytes_per_rank", p.libraryBytes},
        {"needed_bytes_per_rank", p.neededBytesPerRank},
        {"comm_bytes_per_rank", p.commBytesPerRank},
        {"comm_bytes_by_kind", std::move(bytesByKind)}};
    if (details)
      addDetails(p, plan);
  }
  return plan;
}

} // namespace cleave::driver
