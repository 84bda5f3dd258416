//===- CollectiveKernels.h - collectives on tensor dimensions ---*- C++ -*-===//
//
// Part of the Cleave runtime: what a partitioned step calls for the
// cleave.all_reduce / all_gather / reduce_scatter / all_slice ops. They
// move blocks along any dimension by rearranging around the contiguous
// collectives of runtime/Collectives.h.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVEKERNELS_H
#define CLEAVE_RUNTIME_COLLECTIVEKERNELS_H

#include "runtime/CollectiveBuffers.h"
#include "runtime/Mesh.h"
#include "runtime/Program.h"
#include "runtime/Shape.h"

namespace cleave::rt {

/// Sums `numTensors` tensors over `group`: tensor i is `inputs[i]`
/// (counts[i] elements) and its sum lands in `outputs[i]` (which may be
/// `inputs[i]`). The tensors travel as one bucket, on the communication
/// thread so that compute goes on meanwhile: large ones each in place,
/// runs of small ones packed together (forEachBucketSegment in
/// CommVolume.h), packed into `staging` (the op's own: a program keeps one
/// per op; null: one the runtime shares, for callers with one bucket in
/// flight at a time). The inputs may be read and the outputs are written
/// until finishAllReduceBucket, which the step calls before the first use
/// of an output.
int64_t startAllReduceBucket(const void *const *inputs, void *const *outputs,
                             const int64_t *counts, int numTensors, DType type,
                             AxisGroup group,
                             CollectiveBuffer *staging = nullptr);
void finishAllReduceBucket(int64_t bucket);

/// The same sum, on the calling thread and complete on return: for an
/// all-reduce whose sum the step reads at once, which a start would only
/// hand to the communication thread and wait for (a hand-off each way,
/// 30-60 us on a core the rank's threads share). Queued behind the
/// started collectives, as a blocking collective is.
void allReduceBucket(const void *const *inputs, void *const *outputs,
                     const int64_t *counts, int numTensors, DType type,
                     AxisGroup group, CollectiveBuffer *staging = nullptr);

/// Pipeline hand-overs that overlap compute. sendAsync copies `in` into
/// `staging` (the op's own; so the step may reuse its buffer at once, and
/// the copy is delivered by the step's finishSends) and sends the copy to
/// group rank `sendTo` on the communication thread. startReceive receives
/// `bytes` from group rank `recvFrom` into `out` there; the step calls
/// finishAllReduceBucket with its number (a started exchange, as a bucket
/// is) before the first use of `out`.
void sendAsync(const void *in, int64_t bytes, int sendTo, AxisGroup group,
               CollectiveBuffer &staging);
/// sendAsync of `in` itself, no copy: the step must not write `in` before
/// it waits for a collective started after this send (collectives complete
/// in start order) or calls finishSends.
void sendAsyncUncopied(const void *in, int64_t bytes, int sendTo,
                       AxisGroup group);
int64_t startReceive(void *out, int64_t bytes, int recvFrom, AxisGroup group);
/// Waits until every send started so far has been delivered: a stage that
/// sends calls it last in its step, so that the step's hand-overs end
/// within it (the communication thread waits for a send only patiently
/// while the step computes; runtime/CommThread.h).
void finishSends();

/// out = the concatenation along `dim` of the group's `in` blocks.
void allGatherDim(const void *in, const Shape &inShape, int dim,
                  int64_t elementBytes, void *out, AxisGroup group);

/// out = this rank's block along `dim` of the group's sum of `in`.
void reduceScatterDim(const void *in, const Shape &inShape, int dim,
                      DType type, void *out, AxisGroup group);

/// out = this rank's block along `dim` of `in` (no communication).
void allSliceDim(const void *in, const Shape &inShape, int dim,
                 int64_t elementBytes, void *out, AxisGroup group);

/// *out = this rank's index in `group` (cleave.axis_index).
void writeAxisIndex(int64_t *out, AxisGroup group);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVEKERNELS_H
