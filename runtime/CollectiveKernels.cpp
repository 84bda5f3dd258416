//===- CollectiveKernels.cpp - collectives on tensor dimensions -----------===//

#include "runtime/CollectiveKernels.h"

#include "runtime/Collectives.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

namespace cleave::rt {

namespace {

/// A bucket in flight: where its tensors go back to, and the packed copy
/// of a bucket of several tensors (empty for one tensor, which is summed in
/// its output buffer).
struct PendingBucket {
  CollectiveHandle handle;
  std::vector<char> staging;
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

} // namespace

int64_t startAllReduceBucket(const void *const *inputs, void *const *outputs,
                             const int64_t *counts, int numTensors, DType type,
                             AxisGroup group) {
  PendingBucket pending;
  pending.elementBytes = dtypeSize(type);
  pending.outputs.assign(outputs, outputs + numTensors);
  pending.counts.assign(counts, counts + numTensors);
  if (numTensors == 1) {
    // The memory plan usually gives the sum the gradient's own buffer.
    if (outputs[0] != inputs[0])
      std::memcpy(outputs[0], inputs[0], counts[0] * pending.elementBytes);
    pending.handle = startAllReduceSum(outputs[0], counts[0], type, group);
  } else {
    pending.staging =
        packBucket(inputs, counts, numTensors, pending.elementBytes);
    pending.handle =
        startAllReduceSum(pending.staging.data(),
                          pending.staging.size() / pending.elementBytes, type,
                          group);
  }
  int64_t id = nextBucket++;
  pendingBuckets.emplace(id, std::move(pending));
  return id;
}

void finishAllReduceBucket(int64_t bucket) {
  auto it = pendingBuckets.find(bucket);
  PendingBucket &pending = it->second;
  waitCollective(pending.handle);
  if (!pending.staging.empty())
    unpackBucket(std::move(pending.staging), pending.outputs.data(),
                 pending.counts.data(), pending.outputs.size(),
                 pending.elementBytes);
  pendingBuckets.erase(it);
}

void allReduceBucket(const void *const *inputs, void *const *outputs,
                     const int64_t *counts, int numTensors, DType type,
                     AxisGroup group) {
  int64_t elementBytes = dtypeSize(type);
  if (numTensors == 1) {
    if (outputs[0] != inputs[0])
      std::memcpy(outputs[0], inputs[0], counts[0] * elementBytes);
    allReduceSum(outputs[0], counts[0], type, group);
    return;
  }
  std::vector<char> staging =
      packBucket(inputs, counts, numTensors, elementBytes);
  allReduceSum(staging.data(), staging.size() / elementBytes, type, group);
  unpackBucket(std::move(staging), outputs, counts, numTensors, elementBytes);
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
