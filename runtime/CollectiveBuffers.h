//===- CollectiveBuffers.h - memory the cpu collectives hold ----*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++, header-only and free of MPI, so
// that the compiler and the planner size what the cpu target's collectives
// hold beside the memory plan exactly as the runtime allocates it
// (codegen/CollectiveBuffers.h), as CommVolume.h does for the bytes sent.
// A rank holds three kinds, each for the whole run:
//
//  - the collective workspace: the two slots a ring reduce step receives
//    into and reduce-scatter's partial sums; collectives run one at a time,
//    so one region serves all, as large as the largest one's need;
//  - the caller's workspace: the rank-major blocks allGatherDim and
//    reduceScatterDim rearrange a tensor through, on the step's thread
//    (while a started collective may still use the first region);
//  - one staging buffer per collective op of the program that needs one: a
//    bucket's runs of small gradients packed together, a pipeline send's
//    copy of its tensor (a CollectiveBuffer global of the program).
//
// Every region is mapped untouched and written whole by its largest user,
// so what a rank holds is also what its resident set counts.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVEBUFFERS_H
#define CLEAVE_RUNTIME_COLLECTIVEBUFFERS_H

#include "runtime/CommVolume.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>

namespace cleave::rt {

//===----------------------------------------------------------------------===//
// Sizes
//===----------------------------------------------------------------------===//

/// The received half of a ring reduce step arrives in pieces, two in
/// flight (Collectives.cpp, reduceStep): each piece is added while it is
/// still in cache, and the next one is on its way meanwhile. Measured with
/// bench/allreduce_bench.cpp on 2 ranks (bench/README.md): 1 MiB pieces are
/// best up to 4 MiB halves (256 KiB and 512 KiB ones lose a quarter of the
/// bandwidth at a 4 MiB all-reduce); for larger halves, whose sums no
/// longer stay in the last-level cache, 256 KiB pieces are best (1.0-1.4x
/// MPI at 16 MiB, where 1 MiB and 512 KiB pieces give 0.8x).
constexpr int64_t kReducePieceBytes = 1 << 20;
constexpr int64_t kLargeReducePieceBytes = 256 << 10;
constexpr int64_t kLargeReduceStepBytes = 4 << 20;
inline int64_t reducePieceBytes(int64_t stepBytes) {
  return stepBytes > kLargeReduceStepBytes ? kLargeReducePieceBytes
                                           : kReducePieceBytes;
}

/// The slots a reduce step receiving `bytes` writes: two pieces at most.
/// Steps of at most kSmallAllReduceBytes receive onto the stack.
inline int64_t reduceStepSlotBytes(int64_t bytes) {
  if (bytes <= kSmallAllReduceBytes)
    return 0;
  return std::min(bytes, 2 * reducePieceBytes(bytes));
}

/// The collective workspace a ring all-reduce of `count` elements over a
/// group of `groupSize` needs on the rank receiving the largest slots (a
/// rank receives every chunk but its own; this is the most over all
/// chunks). Recursive doubling receives onto the stack.
inline int64_t allReduceWorkspaceBytes(int64_t count, int64_t elementBytes,
                                       int groupSize) {
  if (groupSize <= 1 || count == 0 ||
      usesRecursiveDoubling(count * elementBytes, groupSize))
    return 0;
  int64_t most = 0;
  for (int c = 0; c < groupSize; ++c)
    most =
        std::max(most, reduceStepSlotBytes(ringChunkSize(count, groupSize, c) *
                                           elementBytes));
  return most;
}

/// Reduce-scatter's partial sums: one per step but the last, two at most
/// (the one sent and the one received).
inline int64_t reduceScatterPartialBytes(int64_t blockBytes, int groupSize) {
  return blockBytes * std::clamp(groupSize - 2, 0, 2);
}

/// The collective workspace a ring reduce-scatter of `countPerRank`
/// elements a rank needs: its partial sums, then the slots.
inline int64_t reduceScatterWorkspaceBytes(int64_t countPerRank,
                                           int64_t elementBytes,
                                           int groupSize) {
  if (groupSize <= 1)
    return 0;
  int64_t blockBytes = countPerRank * elementBytes;
  return reduceScatterPartialBytes(blockBytes, groupSize) +
         reduceStepSlotBytes(blockBytes);
}

/// The staging buffer of an all-reduce bucket: its runs of small tensors
/// packed one after another (forEachBucketSegment); tensors of their own
/// are summed in place.
inline int64_t bucketStagingBytes(const int64_t *counts, int numTensors,
                                  int64_t elementBytes) {
  int64_t bytes = 0;
  forEachBucketSegment(counts, numTensors, elementBytes,
                       [&](int first, int end) {
                         if (end - first > 1)
                           for (int i = first; i < end; ++i)
                             bytes += counts[i] * elementBytes;
                       });
  return bytes;
}

//===----------------------------------------------------------------------===//
// The buffers
//===----------------------------------------------------------------------===//

namespace detail {
/// Bytes the collective buffers of this process hold.
inline std::atomic<int64_t> collectiveBufferBytes{0};
} // namespace detail

/// What the collective buffers hold (--print-memory-peak).
inline int64_t collectiveBufferBytes() {
  return detail::collectiveBufferBytes.load();
}

/// A region that only grows, to the largest size asked of it, mapped
/// untouched (a larger one replaces it: its contents are not kept), and
/// counted in collectiveBufferBytes.
class CollectiveBuffer {
public:
  CollectiveBuffer() = default;
  CollectiveBuffer(const CollectiveBuffer &) = delete;
  CollectiveBuffer &operator=(const CollectiveBuffer &) = delete;
  ~CollectiveBuffer() { release(); }

  /// At least `bytes`; null when bytes is 0 and nothing was asked before.
  char *data(int64_t bytes) {
    if (bytes <= size)
      return base;
    release();
    void *mapped =
        mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) {
      std::fprintf(stderr,
                   "error: cannot map %lld bytes for a collective's buffers "
                   "(out of memory)\n",
                   static_cast<long long>(bytes));
      std::abort();
    }
    base = static_cast<char *>(mapped);
    size = bytes;
    detail::collectiveBufferBytes += size;
    return base;
  }
  int64_t bytes() const { return size; }

private:
  void release() {
    if (!base)
      return;
    munmap(base, static_cast<size_t>(size));
    detail::collectiveBufferBytes -= size;
    base = nullptr;
    size = 0;
  }
  char *base = nullptr;
  int64_t size = 0;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVEBUFFERS_H
