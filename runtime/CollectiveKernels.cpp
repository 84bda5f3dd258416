//===- CollectiveKernels.cpp - collectives on tensor dimensions -----------===//

#include "runtime/CollectiveKernels.h"

#include "runtime/Collectives.h"
#include "runtime/CommVolume.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

namespace cleave::rt {

namespace {

/// A bucket in flight: its last all-reduce (waiting for it waits for the
/// ones started before it too), where its tensors go back to, and the
/// staging its packed runs were summed in.
struct PendingBucket {
  CollectiveHandle handle;
  std::vector<void *> outputs;
  std::vector<int64_t> counts;
  int64_t elementBytes;
  char *staging = nullptr;
};
std::map<int64_t, PendingBucket> pendingBuckets;
int64_t nextBucket = 0;
/// Sends in flight.
std::vector<CollectiveHandle> pendingSends;
/// Staging for callers that pass none (tests, the calibration probe).
CollectiveBuffer sharedStaging;
/// The caller's workspace (CollectiveBuffers.h) of allGatherDim and
/// reduceScatterDim.
CollectiveBuffer callerWorkspace;

/// Calls f(data, count) for each all-reduce of the bucket
/// (forEachBucketSegment): a tensor in its output buffer (the memory plan
/// usually makes that the gradient's own), a run copied into `staging` one
/// tensor after another.
template <typename AllReduce>
void forEachBucketAllReduce(const void *const *inputs, void *const *outputs,
                            const int64_t *counts, int numTensors,
                            int64_t elementBytes, char *staging,
                            AllReduce allReduce) {
  forEachBucketSegment(
      counts, numTensors, elementBytes, [&](int first, int end) {
        if (end - first == 1) {
          if (outputs[first] != inputs[first])
            std::memcpy(outputs[first], inputs[first],
                        counts[first] * elementBytes);
          allReduce(outputs[first], counts[first]);
          return;
        }
        int64_t count = 0;
        char *run = staging;
        for (int i = first; i < end; count += counts[i++])
          std::memcpy(staging + count * elementBytes, inputs[i],
                      counts[i] * elementBytes);
        staging += count * elementBytes;
        allReduce(run, count);
      });
}

/// forEachBucketAllReduce's inverse: the packed runs' sums into the
/// outputs.
void unpackBucket(const char *staging, void *const *outputs,
                  const int64_t *counts, int numTensors, int64_t elementBytes) {
  forEachBucketSegment(
      counts, numTensors, elementBytes, [&](int first, int end) {
        if (end - first == 1)
          return;
        for (int i = first; i < end; ++i) {
          std::memcpy(outputs[i], staging, counts[i] * elementBytes);
          staging += counts[i] * elementBytes;
        }
      });
}

/// The staging a bucket's packed runs need, from `staging` (the op's own)
/// or the shared one.
char *bucketStaging(const int64_t *counts, int numTensors, int64_t elementBytes,
                    CollectiveBuffer *staging) {
  return (staging ? *staging : sharedStaging)
      .data(bucketStagingBytes(counts, numTensors, elementBytes));
}

} // namespace

int64_t startAllReduceBucket(const void *const *inputs, void *const *outputs,
                             const int64_t *counts, int numTensors, DType type,
                             AxisGroup group, CollectiveBuffer *staging) {
  PendingBucket pending;
  pending.elementBytes = dtypeSize(type);
  pending.outputs.assign(outputs, outputs + numTensors);
  pending.counts.assign(counts, counts + numTensors);
  pending.staging =
      bucketStaging(counts, numTensors, pending.elementBytes, staging);
  forEachBucketAllReduce(
      inputs, outputs, counts, numTensors, pending.elementBytes,
      pending.staging, [&](void *data, int64_t count) {
        pending.handle = startAllReduceSum(data, count, type, group);
      });
  int64_t id = nextBucket++;
  pendingBuckets.emplace(id, std::move(pending));
  return id;
}

void finishAllReduceBucket(int64_t bucket) {
  auto it = pendingBuckets.find(bucket);
  PendingBucket &pending = it->second;
  waitCollective(pending.handle);
  if (pending.staging)
    unpackBucket(pending.staging, pending.outputs.data(), pending.counts.data(),
                 static_cast<int>(pending.counts.size()), pending.elementBytes);
  pendingBuckets.erase(it);
}

void allReduceBucket(const void *const *inputs, void *const *outputs,
                     const int64_t *counts, int numTensors, DType type,
                     AxisGroup group, CollectiveBuffer *staging) {
  int64_t elementBytes = dtypeSize(type);
  char *packed = bucketStaging(counts, numTensors, elementBytes, staging);
  forEachBucketAllReduce(inputs, outputs, counts, numTensors, elementBytes,
                         packed, [&](void *data, int64_t count) {
                           allReduceSum(data, count, type, group);
                         });
  unpackBucket(packed, outputs, counts, numTensors, elementBytes);
}

/// Forgets finished sends.
static void reapSends() {
  pendingSends.erase(
      std::remove_if(pendingSends.begin(), pendingSends.end(), collectiveDone),
      pendingSends.end());
}

void sendAsyncUncopied(const void *in, int64_t bytes, int sendTo,
                       AxisGroup group) {
  reapSends();
  pendingSends.push_back(
      startSendRecv(in, nullptr, bytes, sendTo, kNoPeer, group));
}

void sendAsync(const void *in, int64_t bytes, int sendTo, AxisGroup group,
               CollectiveBuffer &staging) {
  reapSends();
  char *copy = staging.data(bytes);
  if (bytes > 0)
    std::memcpy(copy, in, bytes);
  pendingSends.push_back(
      startSendRecv(copy, nullptr, bytes, sendTo, kNoPeer, group));
}

void finishSends() {
  if (pendingSends.empty())
    return;
  // A handle's wait waits for every collective started before it too.
  waitCollective(pendingSends.back());
  pendingSends.clear();
}

int64_t startReceive(void *out, int64_t bytes, int recvFrom,
                     AxisGroup group) {
  PendingBucket pending;
  pending.elementBytes = 1;
  pending.handle =
      startSendRecv(nullptr, out, bytes, kNoPeer, recvFrom, group);
  int64_t id = nextBucket++;
  pendingBuckets.emplace(id, std::move(pending));
  return id;
}

namespace {

/// A tensor seen as [outer, n, inner] around dimension `dim`.
struct Around {
  int64_t outer, n, inner;
  Around(const Shape &shape, int dim)
      : outer(shape.product(0, dim)), n(shape[dim]),
        inner(shape.product(dim + 1, shape.rank)) {}
};

} // namespace

void allGatherDim(const void *in, const Shape &inShape, int dim,
                  int64_t elementBytes, void *out, AxisGroup group) {
  int g = groupSize(group);
  Around a(inShape, dim);
  int64_t blockBytes = inShape.numElements() * elementBytes;
  if (a.outer == 1) {
    allGather(in, out, blockBytes, group);
    return;
  }
  // Blocks arrive rank-major; interleave them along `dim`.
  char *blocks = callerWorkspace.data(blockBytes * g);
  allGather(in, blocks, blockBytes, group);
  int64_t rowBytes = a.n * a.inner * elementBytes;
  for (int r = 0; r < g; ++r)
    for (int64_t o = 0; o < a.outer; ++o)
      std::memcpy(static_cast<char *>(out) + (o * g + r) * rowBytes,
                  blocks + r * blockBytes + o * rowBytes, rowBytes);
}

void reduceScatterDim(const void *in, const Shape &inShape, int dim,
                      DType type, void *out, AxisGroup group) {
  int g = groupSize(group);
  int64_t size = dtypeSize(type);
  Around a(inShape, dim);
  int64_t localN = a.n / g;
  int64_t perRank = a.outer * localN * a.inner;
  if (a.outer == 1) {
    reduceScatterSum(in, out, perRank, type, group);
    return;
  }
  // Make each rank's block contiguous, rank-major.
  char *blocks = callerWorkspace.data(perRank * g * size);
  int64_t rowBytes = localN * a.inner * size;
  for (int r = 0; r < g; ++r)
    for (int64_t o = 0; o < a.outer; ++o)
      std::memcpy(blocks + (r * a.outer + o) * rowBytes,
                  static_cast<const char *>(in) + (o * g + r) * rowBytes,
                  rowBytes);
  reduceScatterSum(blocks, out, perRank, type, group);
}

void allSliceDim(const void *in, const Shape &inShape, int dim,
                 int64_t elementBytes, void *out, AxisGroup group) {
  int g = groupSize(group), r = groupRank(group);
  Around a(inShape, dim);
  int64_t rowBytes = a.n / g * a.inner * elementBytes;
  for (int64_t o = 0; o < a.outer; ++o)
    std::memcpy(static_cast<char *>(out) + o * rowBytes,
                static_cast<const char *>(in) + (o * g + r) * rowBytes,
                rowBytes);
}

void writeAxisIndex(int64_t *out, AxisGroup group) { *out = groupRank(group); }

} // namespace cleave::rt
