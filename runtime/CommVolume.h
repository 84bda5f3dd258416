//===- CommVolume.h - bytes each rank sends per collective ------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++, header-only and free of MPI, so that
// the compiler can predict a program's communication volume. Each function
// gives exactly the bytes one rank of a group hands to MPI sends in the
// corresponding collective of Collectives.h; the runtime counts the real
// send sizes (commCounters) and the collectives test checks that the two
// agree.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMMVOLUME_H
#define CLEAVE_RUNTIME_COMMVOLUME_H

#include <cstdint>

namespace cleave::rt {

/// The first element of chunk `chunk` when a ring all-reduce cuts `count`
/// elements into `groupSize` chunks. The boundaries round down, so chunks
/// differ by at most one element and some are empty when count < groupSize.
inline int64_t ringChunkBegin(int64_t count, int groupSize, int chunk) {
  return count * chunk / groupSize;
}

inline int64_t ringChunkSize(int64_t count, int groupSize, int chunk) {
  return ringChunkBegin(count, groupSize, chunk + 1) -
         ringChunkBegin(count, groupSize, chunk);
}

/// All-reduces of at most this many bytes over a power-of-two group use
/// recursive doubling (log2 g exchanges of the whole buffer), which beats
/// the ring's 2 (g - 1) dependent steps on latency. The buffer goes in
/// pieces of kEagerPieceBytes, each under Open MPI's shared-memory eager
/// limit (4 KiB with the header), so that no piece waits for a rendezvous
/// round trip.
constexpr int64_t kSmallAllReduceBytes = 4096;
constexpr int64_t kEagerPieceBytes = 2048;

inline bool usesRecursiveDoubling(int64_t bytes, int groupSize) {
  return bytes <= kSmallAllReduceBytes && (groupSize & (groupSize - 1)) == 0;
}

/// Ring all-reduce: the reduce-scatter phase sends every chunk but
/// (rank + 1) % g, the all-gather phase every chunk but (rank + 2) % g.
/// (NCCL's ring, on the cuda target, moves the same volume.)
inline int64_t ringAllReduceBytesSent(int64_t count, int64_t elementBytes,
                                      int groupSize, int groupRank) {
  if (groupSize <= 1)
    return 0;
  int g = groupSize;
  return (2 * count - ringChunkSize(count, g, (groupRank + 1) % g) -
          ringChunkSize(count, g, (groupRank + 2) % g)) *
         elementBytes;
}

/// What the cpu runtime's all-reduce sends: the ring's volume, except that
/// small ones (usesRecursiveDoubling) send the whole buffer log2 g times.
inline int64_t allReduceBytesSent(int64_t count, int64_t elementBytes,
                                  int groupSize, int groupRank) {
  if (groupSize > 1 && usesRecursiveDoubling(count * elementBytes, groupSize)) {
    int64_t rounds = 0;
    for (int mask = 1; mask < groupSize; mask <<= 1)
      ++rounds;
    return rounds * count * elementBytes;
  }
  return ringAllReduceBytesSent(count, elementBytes, groupSize, groupRank);
}

/// A gradient bucket's tensors of at least this many bytes are all-reduced
/// each where it lies (CollectiveKernels.cpp); runs of smaller ones are
/// copied into one buffer first, whose all-reduce costs one latency for
/// the run. Packing every tensor cost two copies of the whole bucket and a
/// buffer too large for the cache: ResNet-18's 22 gradients (16.9 MB) on 2
/// ranks, 9.0 ms packed, 6.6 as one buffer already packed, 4.5 tensor by
/// tensor (2026-11-28, one thread per rank).
constexpr int64_t kSoloAllReduceBytes = int64_t{256} << 10;

/// Calls f(first, end) for each all-reduce the cpu runtime makes of a
/// bucket of `numTensors` tensors of `counts` elements: tensors [first,
/// end), one of at least kSoloAllReduceBytes or a maximal run of smaller
/// ones, in order. (The cuda target's NCCL group sums every tensor in
/// place, whatever its size.)
template <typename F>
void forEachBucketSegment(const int64_t *counts, int numTensors,
                          int64_t elementBytes, F f) {
  auto small = [&](int i) {
    return counts[i] * elementBytes < kSoloAllReduceBytes;
  };
  for (int first = 0; first < numTensors;) {
    int end = first + 1;
    if (small(first))
      while (end < numTensors && small(end))
        ++end;
    f(first, end);
    first = end;
  }
}

/// What the cpu runtime's all-reduce of a bucket sends: its segments'
/// all-reduces (forEachBucketSegment).
inline int64_t bucketAllReduceBytesSent(const int64_t *counts, int numTensors,
                                        int64_t elementBytes, int groupSize,
                                        int groupRank) {
  int64_t bytes = 0;
  forEachBucketSegment(
      counts, numTensors, elementBytes, [&](int first, int end) {
        int64_t count = 0;
        for (int i = first; i < end; ++i)
          count += counts[i];
        bytes += allReduceBytesSent(count, elementBytes, groupSize, groupRank);
      });
  return bytes;
}

/// Ring all-gather: g - 1 steps, one block each.
inline int64_t allGatherBytesSent(int64_t bytesPerRank, int groupSize,
                                  int groupRank) {
  return (groupSize - 1) * bytesPerRank;
}

/// Ring reduce-scatter: g - 1 steps, one partial block each.
inline int64_t reduceScatterBytesSent(int64_t countPerRank,
                                      int64_t elementBytes, int groupSize,
                                      int groupRank) {
  return (groupSize - 1) * countPerRank * elementBytes;
}

/// Chain broadcast from the root around the ring: every rank but the last
/// one of the chain, the root's left neighbour, forwards the data once.
inline int64_t broadcastBytesSent(int64_t bytes, int rootGroupRank,
                                  int groupSize, int groupRank) {
  if (groupSize <= 1 ||
      (groupRank - rootGroupRank + groupSize) % groupSize == groupSize - 1)
    return 0;
  return bytes;
}

/// Pairwise all-to-all: one block to each other rank.
inline int64_t allToAllBytesSent(int64_t bytesPerRank, int groupSize,
                                 int groupRank) {
  return (groupSize - 1) * bytesPerRank;
}

/// A send to another rank of the group; sending to oneself is a local copy
/// and no send at all (`sendTo` -1) sends nothing.
inline int64_t sendRecvBytesSent(int64_t bytes, int sendTo, int groupSize,
                                 int groupRank) {
  return sendTo >= 0 && sendTo != groupRank ? bytes : 0;
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COMMVOLUME_H
