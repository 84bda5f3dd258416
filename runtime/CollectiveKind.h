//===- CollectiveKind.h - the kinds of collectives --------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR, no MPI). The kinds whose
// bytes the runtime counts (commCounters, a program's --print-comm) and the
// compiler predicts (passes/CommunicationPlan.h, `cleave compile
// --print-comm`): one list for both, so that the two reports line up.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVEKIND_H
#define CLEAVE_RUNTIME_COLLECTIVEKIND_H

namespace cleave::rt {

enum class CollectiveKind : int {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  SendRecv
};
constexpr int kNumCollectiveKinds = 6;

/// The ops' snake_case names ("all_reduce", ...), by kind.
constexpr const char *kCollectiveKindNames[kNumCollectiveKinds] = {
    "all_reduce", "all_gather", "reduce_scatter",
    "all_to_all", "broadcast",  "send_recv"};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVEKIND_H
