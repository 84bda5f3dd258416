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

/// A packed run of a bucket's tensors (forEachBucketSegment): tensors
/// [first, end), copied one after another into `staging`.
struct PackedSegment {
  int first, end;
  std::vector<char> staging;
};

/// A bucket in flight: its last all-reduce (waiting for it waits for the
/// ones started before it too), where its tensors go back to, and its
/// packed runs.
struct PendingBucket {
  CollectiveHandle handle;
  std::vector<PackedSegment> packed;
  std::vector<void *> outputs;
  std::vector<int64_t> counts;
  int64_t elementBytes;
};
std::map<int64_t, PendingBucket> pendingBuckets;
int64_t nextBucket = 0;
/// Staging buffers of finished buckets, kept for the next step's: a fresh
/// allocation of a large bucket costs a page fault per 4 KiB every step.
std::vector<std::vector<char>> spareStagings;
/// Sends in flight with the copies they read.
std::vector<std::pair<CollectiveHandle, std::vector<char>>> pendingSends;

/// A staging buffer of `bytes`, a spare one if there is.
std::vector<char> stagingOf(size_t bytes) {
  auto spare = std::find_if(
      spareStagings.begin(), spareStagings.end(),
      [&](const std::vector<char> &b) { return b.size() == bytes; });
  if (spare == spareStagings.end())
    return std::vector<char>(bytes);
  std::vector<char> staging = std::move(*spare);
  spareStagings.erase(spare);
  return staging;
}

/// Copies a bucket's tensors into one staging buffer, one after another.
std::vector<char> packBucket(const void *const *inputs, const int64_t *counts,
                             int numTensors, int64_t elementBytes) {
  int64_t total = 0;
  for (int i = 0; i < numTensors; ++i)
    total += counts[i];
  std::vector<char> staging = stagingOf(total * elementBytes);
  for (int64_t i = 0, offset = 0; i < numTensors; offset += counts[i++])
    std::memcpy(staging.data() + offset * elementBytes, inputs[i],
                counts[i] * elementBytes);
  return staging;
}

/// packBucket's inverse, into the outputs; the staging serves again.
void unpackBucket(std::vector<char> staging, void *const *outputs,
                  const int64_t *counts, size_t numTensors,
                  int64_t elementBytes) {
  for (size_t i = 0, offset = 0; i < numTensors; offset += counts[i++])
    std::memcpy(outputs[i], staging.data() + offset * elementBytes,
                counts[i] * elementBytes);
  spareStagings.push_back(std::move(staging));
}

/// Runs `allReduce(data, count)` on each segment of the bucket
/// (forEachBucketSegment): a tensor in its output buffer (the memory plan
/// usually makes that the gradient's own), a run packed into a staging
/// buffer handed to `packed`, which unpacks it when the sum is in.
template <typename AllReduce, typename Packed>
void forEachBucketAllReduce(const void *const *inputs, void *const *outputs,
                            const int64_t *counts, int numTensors,
                            int64_t elementBytes, AllReduce allReduce,
                            Packed packed) {
  forEachBucketSegment(
      counts, numTensors, elementBytes, [&](int first, int end) {
        if (end - first == 1) {
          if (outputs[first] != inputs[first])
            std::memcpy(outputs[first], inputs[first],
                        counts[first] * elementBytes);
          allReduce(outputs[first], counts[first]);
          return;
        }
        PackedSegment segment{first, end,
                              packBucket(inputs + first, counts + first,
                                         end - first, elementBytes)};
        allReduce(segment.staging.data(),
                  static_cast<int64_t>(segment.staging.size()) / elementBytes);
        packed(std::move(segment));
      });
}

} // namespace

int64_t startAllReduceBucket(const void *const *inputs, void *const *outputs,
                             const int64_t *counts, int numTensors, DType type,
                             AxisGroup group) {
  PendingBucket pending;
  pending.elementBytes = dtypeSize(type);
  pending.outputs.assign(outputs, outputs + numTensors);
  pending.counts.assign(counts, counts + numTensors);
  // A moved staging vector keeps its storage, which the started
  // all-reduce reads.
  forEachBucketAllReduce(
      inputs, outputs, counts, numTensors, pending.elementBytes,
      [&](void *data, int64_t count) {
        pending.handle = startAllReduceSum(data, count, type, group);
      },
      [&](PackedSegment segment) {
        pending.packed.push_back(std::move(segment));
      });
  int64_t id = nextBucket++;
  pendingBuckets.emplace(id, std::move(pending));
  return id;
}

void finishAllReduceBucket(int64_t bucket) {
  auto it = pendingBuckets.find(bucket);
  PendingBucket &pending = it->second;
  waitCollective(pending.handle);
  for (PackedSegment &segment : pending.packed)
    unpackBucket(std::move(segment.staging),
                 pending.outputs.data() + segment.first,
                 pending.counts.data() + segment.first,
                 segment.end - segment.first, pending.elementBytes);
  pendingBuckets.erase(it);
}

void allReduceBucket(const void *const *inputs, void *const *outputs,
                     const int64_t *counts, int numTensors, DType type,
                     AxisGroup group) {
  int64_t elementBytes = dtypeSize(type);
  forEachBucketAllReduce(
      inputs, outputs, counts, numTensors, elementBytes,
      [&](void *data, int64_t count) {
        allReduceSum(data, count, type, group);
      },
      [&](PackedSegment segment) {
        unpackBucket(std::move(segment.staging), outputs + segment.first,
                     counts + segment.first, segment.end - segment.first,
                     elementBytes);
      });
}

/// Forgets finished sends; their copies serve again.
static void reapSends() {
  for (auto it = pendingSends.begin(); it != pendingSends.end();)
    if (collectiveDone(it->first)) {
      if (!it->second.empty())
        spareStagings.push_back(std::move(it->second));
      it = pendingSends.erase(it);
    } else {
      ++it;
    }
}

void sendAsyncUncopied(const void *in, int64_t bytes, int sendTo,
                       AxisGroup group) {
  reapSends();
  pendingSends.emplace_back(
      startSendRecv(in, nullptr, bytes, sendTo, kNoPeer, group),
      std::vector<char>());
}

void sendAsync(const void *in, int64_t bytes, int sendTo, AxisGroup group) {
  reapSends();
  std::vector<char> staging = stagingOf(bytes);
  if (bytes > 0)
    std::memcpy(staging.data(), in, bytes);
  CollectiveHandle handle =
      startSendRecv(staging.data(), nullptr, bytes, sendTo, kNoPeer, group);
  pendingSends.emplace_back(handle, std::move(staging));
}

void finishSends() {
  if (pendingSends.empty())
    return;
  // A handle's wait waits for every collective started before it too.
  waitCollective(pendingSends.back().first);
  for (auto &[handle, staging] : pendingSends)
    if (!staging.empty())
      spareStagings.push_back(std::move(staging));
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
  std::vector<char> blocks(blockBytes * g);
  allGather(in, blocks.data(), blockBytes, group);
  int64_t rowBytes = a.n * a.inner * elementBytes;
  for (int r = 0; r < g; ++r)
    for (int64_t o = 0; o < a.outer; ++o)
      std::memcpy(static_cast<char *>(out) + (o * g + r) * rowBytes,
                  blocks.data() + r * blockBytes + o * rowBytes, rowBytes);
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
  std::vector<char> blocks(perRank * g * size);
  int64_t rowBytes = localN * a.inner * size;
  for (int r = 0; r < g; ++r)
    for (int64_t o = 0; o < a.outer; ++o)
      std::memcpy(blocks.data() + (r * a.outer + o) * rowBytes,
                  static_cast<const char *>(in) + (o * g + r) * rowBytes,
                  rowBytes);
  reduceScatterSum(blocks.data(), out, perRank, type, group);
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
