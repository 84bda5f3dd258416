//===- CollectiveBuffers.h - what the cpu collectives hold ------*- C++ -*-===//
//
// The memory the cpu runtime's collectives hold beside the memory plan
// (runtime/CollectiveBuffers.h), sized from a partitioned step as the
// runtime will allocate it: the emitter gives each op that needs one its
// staging buffer, and the planner adds what a rank holds to its peak.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_CODEGEN_COLLECTIVEBUFFERS_H
#define CLEAVE_CODEGEN_COLLECTIVEBUFFERS_H

#include "dialects/cleave/CleaveOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace mlir::cleave {

struct FusionPlan;
struct MemoryPlan;

/// The staging buffer the cpu runtime keeps for bucket `op`: its runs of
/// small tensors, packed.
int64_t collectiveStagingBytes(AllReduceOp op);

/// Whether the send `op` may read its tensor's own buffer: an arena buffer
/// that the memory plan of the op's sending stage keeps for it up to the
/// op where the send is certain to be complete (planUncopiedSends).
/// Tensors outside the arena (parameters, which updates overwrite in
/// place; rows of step inputs) are sent from a copy in a staging buffer.
bool sendsUncopied(SendRecvOp op, const MemoryPlan &plan,
                   const FusionPlan &fusion);

/// The collective buffers a rank holds: the two workspaces, each as large
/// as the largest need of any of its collectives, and the staging buffers
/// of its ops, one per bucket or copied send (which add up as the ops do).
struct CollectiveBufferBytes {
  int64_t workspaces = 0, staging = 0;
  int64_t total() const { return workspaces + staging; }
};

/// The collective buffers a rank of pipeline stage `stage` (-1: no
/// stages) holds running `func` on the cpu target. `plan` and `fusion` are
/// the emitter's for that stage.
CollectiveBufferBytes collectiveBufferBytes(func::FuncOp func,
                                            const MemoryPlan &plan,
                                            const FusionPlan &fusion,
                                            int64_t stage);

} // namespace mlir::cleave

#endif // CLEAVE_CODEGEN_COLLECTIVEBUFFERS_H
