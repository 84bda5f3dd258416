//===- Collectives.h - collectives over the groups of the mesh --*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Ring and pairwise
// algorithms over MPI point-to-point messages, so that the bytes every rank
// sends are known exactly (CommVolume.h predicts them, commCounters counts
// them).
//
// Collectives run one at a time, in the order they were started: the
// asynchronous ones on a communication thread, the blocking ones on the
// calling thread when nothing is in flight (else they queue as well). Every
// rank of an SPMD program starts the same collectives in the same order, so
// the rings of all ranks match. A buffer handed to a collective belongs to
// it until the collective completes. Collectives are started from one
// thread.
//
// A collective whose messages make no progress for the collective timeout
// aborts the whole job (MPI_Abort), naming this rank and the collective: a
// rank that stopped or hangs must not hold the others forever (NCCL's
// watchdog and PyTorch's process-group timeout do the same).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_H
#define CLEAVE_RUNTIME_COLLECTIVES_H

#include "runtime/CollectiveKind.h"
#include "runtime/Mesh.h"
#include "runtime/Program.h"

#include <cstdint>

namespace cleave::rt {

/// The op's snake_case name ("all_reduce", ...).
const char *collectiveKindName(CollectiveKind kind);

// Reductions sum F32, F64, I64 and I32 elements. On a trivial group (no
// axes, or axes of size 1) every collective is a copy or nothing, and sends
// nothing. `in` and `out` buffers never overlap.

/// Sums `data` (count elements) over the group, in place. The result is
/// bitwise identical on every rank of the group.
void allReduceSum(void *data, int64_t count, DType type, AxisGroup group);
/// `out` (g * bytesPerRank bytes) receives the `in` block of every group
/// rank, in group-rank order.
void allGather(const void *in, void *out, int64_t bytesPerRank,
               AxisGroup group);
/// `in` holds g blocks of countPerRank elements; group rank r receives in
/// `out` the sum over the group of block r.
void reduceScatterSum(const void *in, void *out, int64_t countPerRank,
                      DType type, AxisGroup group);
/// Copies `data` of group rank rootGroupRank to every rank of the group.
void broadcast(void *data, int64_t bytes, int rootGroupRank, AxisGroup group);
/// Block j of `in` (bytesPerRank bytes each, g blocks) goes to group rank j,
/// and `out` block j comes from group rank j.
void allToAll(const void *in, void *out, int64_t bytesPerRank, AxisGroup group);
/// Sends `in` to group rank sendTo and receives `out` from group rank
/// recvFrom, as a shift or a pipeline hand-over does; either may be
/// kNoPeer. Every rank passes the same `bytes`.
constexpr int kNoPeer = -1;
void sendRecv(const void *in, void *out, int64_t bytes, int sendTo,
              int recvFrom, AxisGroup group);

/// Asynchronous all-reduce, for overlapping communication with compute: the
/// collective runs on the communication thread until waitCollective.
/// Waiting for a handle also waits for every collective started before it.
using CollectiveHandle = int64_t;
CollectiveHandle startAllReduceSum(void *data, int64_t count, DType type,
                                   AxisGroup group);
/// sendRecv on the communication thread; `in` is read and `out` written
/// until waitCollective.
CollectiveHandle startSendRecv(const void *in, void *out, int64_t bytes,
                               int sendTo, int recvFrom, AxisGroup group);
void waitCollective(CollectiveHandle handle);
/// Whether a started collective has finished (never blocks).
bool collectiveDone(CollectiveHandle handle);

/// How long, in seconds, a collective waits for its peers before it aborts
/// the job (--collective-timeout); 0 waits forever. Set before the
/// collectives it should apply to start.
constexpr int64_t kDefaultCollectiveTimeoutSeconds = 300;
void setCollectiveTimeout(int64_t seconds);
int64_t collectiveTimeout();

/// What this rank handed to MPI sends, per CollectiveKind. `calls` counts
/// every collective call, trivial groups included.
struct CommCounters {
  int64_t bytesSent[kNumCollectiveKinds];
  int64_t calls[kNumCollectiveKinds];
};
/// Waits for every started collective, then returns the counters.
const CommCounters &commCounters();
/// Counts one collective that another backend (NCCL, on the cuda target)
/// ran, with the bytes this rank sent in it.
void recordCollective(CollectiveKind kind, int64_t bytesSent);
/// Waits for every started collective, then zeroes the counters.
void resetCommCounters();

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_H
