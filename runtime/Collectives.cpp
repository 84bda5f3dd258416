//===- Collectives.cpp - ring and pairwise collective algorithms ----------===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The algorithms over MPI
// point-to-point messages; CommThread.cpp runs them one at a time, on the
// communication thread or the caller's, under the watchdog.
//
//===----------------------------------------------------------------------===//

#include "runtime/Collectives.h"
#include "runtime/CollectiveBuffers.h"
#include "runtime/CommThread.h"
#include "runtime/CommVolume.h"
#include "runtime/MeshDetail.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <memory>
#include <vector>

namespace cleave::rt {
namespace {

using detail::beginCollective;
using detail::finishPostingBeside;
using detail::mpiCallMutex;
using detail::runBlocking;
using detail::runningCounters;
using detail::startPostingBeside;
using detail::submit;
using detail::submitWait;
using detail::waitFor;
using detail::WaitPolicy;

/// A broadcast chain forwards each piece of this size as soon as it has it.
constexpr int64_t kChainPieceBytes = 1 << 20;
/// MPI counts are ints: longer messages go as several.
constexpr int64_t kMaxMessageBytes = 1 << 30;

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

/// A group as the algorithms see it: its communicator (null for a group of
/// one), size and this rank's place in it.
struct Group {
  MPI_Comm comm = MPI_COMM_NULL;
  int size = 1;
  int rank = 0;

  explicit Group(AxisGroup axes)
      : size(groupSize(axes)), rank(groupRank(axes)) {
    if (size > 1)
      comm = detail::groupComm(axes);
  }
  int left() const { return (rank + size - 1) % size; }
  int right() const { return (rank + 1) % size; }
  /// A rank offset taken modulo the size, into [0, size).
  int wrap(int offsetRank) const { return (offsetRank % size + size) % size; }
};

/// memcpy, for buffers that may be null when empty.
void copyBytes(void *dst, const void *src, int64_t bytes) {
  if (bytes > 0)
    std::memcpy(dst, src, bytes);
}

/// Collectives run one at a time and the messages between two ranks of a
/// communicator match in the order they were sent, so one tag serves all.
constexpr int kTag = 0;

/// Posts the sends of `bytes` at `data` to `peer` as messages of at most
/// pieceBytes, and counts them. The receiver posts the same pieces.
void postSends(const Group &group, int peer, const void *data, int64_t bytes,
               int64_t pieceBytes, CollectiveKind kind,
               std::vector<MPI_Request> &requests) {
  runningCounters().bytesSent[static_cast<int>(kind)] += bytes;
  const char *at = static_cast<const char *>(data);
  for (int64_t offset = 0; offset < bytes; offset += pieceBytes) {
    requests.emplace_back();
    MPI_Isend(at + offset,
              static_cast<int>(std::min(pieceBytes, bytes - offset)), MPI_BYTE,
              peer, kTag, group.comm, &requests.back());
  }
}

void postRecvs(const Group &group, int peer, void *data, int64_t bytes,
               int64_t pieceBytes, std::vector<MPI_Request> &requests) {
  char *at = static_cast<char *>(data);
  for (int64_t offset = 0; offset < bytes; offset += pieceBytes) {
    requests.emplace_back();
    MPI_Irecv(at + offset,
              static_cast<int>(std::min(pieceBytes, bytes - offset)), MPI_BYTE,
              peer, kTag, group.comm, &requests.back());
  }
}

/// Waits for and clears `requests`. Makes no MPI call when there are none:
/// a trivial group's collective runs without MPI (even without a mesh).
void waitRequests(std::vector<MPI_Request> &requests) {
  if (requests.empty())
    return;
  waitFor(static_cast<int>(requests.size()), requests.data());
  requests.clear();
}

/// One copy step of a ring: sends to the right neighbour while receiving
/// from the left one.
void copyStep(const Group &group, const void *send, int64_t sendBytes,
              void *recv, int64_t recvBytes, CollectiveKind kind) {
  std::vector<MPI_Request> requests;
  postRecvs(group, group.left(), recv, recvBytes, kMaxMessageBytes, requests);
  postSends(group, group.right(), send, sendBytes, kMaxMessageBytes, kind,
            requests);
  waitRequests(requests);
}

//===----------------------------------------------------------------------===//
// Reduction
//===----------------------------------------------------------------------===//

template <typename T>
void addTyped(void *dst, const void *a, const void *b, int64_t count) {
  T *d = static_cast<T *>(dst);
  const T *x = static_cast<const T *>(a);
  const T *y = static_cast<const T *>(b);
  for (int64_t i = 0; i < count; ++i)
    d[i] = x[i] + y[i];
}

/// dst = a + b elementwise; dst may be a.
void add(void *dst, const void *a, const void *b, int64_t count, DType type) {
  switch (type) {
  case DType::F32:
    return addTyped<float>(dst, a, b, count);
  case DType::F64:
    return addTyped<double>(dst, a, b, count);
  case DType::I64:
    return addTyped<int64_t>(dst, a, b, count);
  case DType::I32:
    return addTyped<int32_t>(dst, a, b, count);
  case DType::Bool:
    break;
  }
  assert(false && "no sum of this element type");
}

/// One reduce step of a ring: sends sendCount elements at `send` to the
/// right neighbour while receiving `count` partial sums from the left one,
/// and stores dst = received + own. The received data lands in two
/// piece-sized slots, alternately: at `slots`, reduceStepSlotBytes of the
/// received bytes (CollectiveBuffers.h), or on the stack when that is 0.
void reduceStep(const Group &group, const void *send, int64_t sendCount,
                void *dst, const void *own, int64_t count, DType type,
                CollectiveKind kind, char *slots) {
  int64_t elementBytes = dtypeSize(type);
  alignas(64) char smallSlots[kSmallAllReduceBytes];
  if (reduceStepSlotBytes(count * elementBytes) == 0)
    slots = smallSlots;
  int64_t pieceBytes = reducePieceBytes(count * elementBytes);
  int64_t pieceCount = pieceBytes / elementBytes;
  int64_t numPieces = (count + pieceCount - 1) / pieceCount;
  auto pieceSize = [&](int64_t piece) {
    return std::min(pieceCount, count - piece * pieceCount);
  };
  auto slot = [&](int64_t piece) { return slots + piece % 2 * pieceBytes; };
  MPI_Request recvs[2];
  auto postRecv = [&](int64_t piece) {
    MPI_Irecv(slot(piece), static_cast<int>(pieceSize(piece) * elementBytes),
              MPI_BYTE, group.left(), kTag, group.comm, &recvs[piece % 2]);
  };

  std::vector<MPI_Request> sends;
  for (int64_t piece = 0; piece < std::min<int64_t>(2, numPieces); ++piece)
    postRecv(piece);
  postSends(group, group.right(), send, sendCount * elementBytes,
            pieceCount * elementBytes, kind, sends);
  for (int64_t piece = 0; piece < numPieces; ++piece) {
    waitFor(1, &recvs[piece % 2]);
    int64_t offset = piece * pieceCount * elementBytes;
    add(static_cast<char *>(dst) + offset,
        static_cast<const char *>(own) + offset, slot(piece), pieceSize(piece),
        type);
    if (piece + 2 < numPieces)
      postRecv(piece + 2);
  }
  waitRequests(sends);
}

//===----------------------------------------------------------------------===//
// The algorithms, run one at a time on either thread
//===----------------------------------------------------------------------===//

/// The collective workspace (CollectiveBuffers.h): collectives run one at a
/// time, on the communication thread or the caller's, never both at once.
CollectiveBuffer collectiveWorkspace;

/// Counts a collective and makes it the watchdog's current one.
void countCall(CollectiveKind kind, AxisGroup axes) {
  ++runningCounters().calls[static_cast<int>(kind)];
  beginCollective(collectiveKindName(kind), axes);
}

/// Reduce-scatter then all-gather around the ring, over chunk c =
/// [ringChunkBegin(c), ringChunkBegin(c + 1)). After the first phase rank r
/// holds the full sum of chunk r + 1, reduced once, which the second phase
/// copies: every rank ends with the same bits.
void runAllReduce(void *data, int64_t count, DType type, AxisGroup axes) {
  countCall(CollectiveKind::AllReduce, axes);
  Group group(axes);
  int g = group.size;
  if (g == 1)
    return;
  char *bytes = static_cast<char *>(data);
  int64_t elementBytes = dtypeSize(type);
  if (count == 0)
    return;
  if (usesRecursiveDoubling(count * elementBytes, g)) {
    // Exchange the whole buffer with the partner that differs in one bit,
    // then add. Both partners add the same two values (in swapped order,
    // which float addition does not notice), so all ranks end identical.
    constexpr int kMaxPieces = kSmallAllReduceBytes / kEagerPieceBytes + 1;
    alignas(64) char incoming[kSmallAllReduceBytes];
    int64_t total = count * elementBytes;
    for (int mask = 1; mask < g; mask <<= 1) {
      int peer = group.rank ^ mask;
      MPI_Request requests[2 * kMaxPieces];
      int numRequests = 0;
      for (int64_t offset = 0; offset < total; offset += kEagerPieceBytes)
        MPI_Irecv(incoming + offset,
                  static_cast<int>(std::min(kEagerPieceBytes, total - offset)),
                  MPI_BYTE, peer, kTag, group.comm, &requests[numRequests++]);
      for (int64_t offset = 0; offset < total; offset += kEagerPieceBytes)
        MPI_Isend(bytes + offset,
                  static_cast<int>(std::min(kEagerPieceBytes, total - offset)),
                  MPI_BYTE, peer, kTag, group.comm, &requests[numRequests++]);
      runningCounters()
          .bytesSent[static_cast<int>(CollectiveKind::AllReduce)] += total;
      waitFor(numRequests, requests);
      add(bytes, bytes, incoming, count, type);
    }
    return;
  }
  auto chunk = [&](int c) {
    return bytes + ringChunkBegin(count, g, c) * elementBytes;
  };
  auto chunkCount = [&](int c) { return ringChunkSize(count, g, c); };
  char *slots =
      collectiveWorkspace.data(allReduceWorkspaceBytes(count, elementBytes, g));
  for (int step = 0; step < g - 1; ++step) {
    int send = group.wrap(group.rank - step);
    int recv = group.wrap(group.rank - step - 1);
    reduceStep(group, chunk(send), chunkCount(send), chunk(recv), chunk(recv),
               chunkCount(recv), type, CollectiveKind::AllReduce, slots);
  }
  for (int step = 0; step < g - 1; ++step) {
    int send = group.wrap(group.rank + 1 - step);
    int recv = group.wrap(group.rank - step);
    copyStep(group, chunk(send), chunkCount(send) * elementBytes, chunk(recv),
             chunkCount(recv) * elementBytes, CollectiveKind::AllReduce);
  }
}

void runAllGather(const void *in, void *out, int64_t bytesPerRank,
                  AxisGroup axes) {
  countCall(CollectiveKind::AllGather, axes);
  Group group(axes);
  char *blocks = static_cast<char *>(out);
  copyBytes(blocks + group.rank * bytesPerRank, in, bytesPerRank);
  for (int step = 0; step < group.size - 1; ++step) {
    int send = group.wrap(group.rank - step);
    int recv = group.wrap(group.rank - step - 1);
    copyStep(group, blocks + send * bytesPerRank, bytesPerRank,
             blocks + recv * bytesPerRank, bytesPerRank,
             CollectiveKind::AllGather);
  }
}

/// At step s rank r passes on its partial sum of block r - s - 1 and adds
/// its own block r - s - 2 to the partial sum from the left; after g - 1
/// steps that block is r itself, complete.
void runReduceScatter(const void *in, void *out, int64_t countPerRank,
                      DType type, AxisGroup axes) {
  countCall(CollectiveKind::ReduceScatter, axes);
  Group group(axes);
  int g = group.size;
  int64_t blockBytes = countPerRank * dtypeSize(type);
  const char *blocks = static_cast<const char *>(in);
  if (g == 1) {
    copyBytes(out, in, blockBytes);
    return;
  }
  // Two partial sums at most, the one being sent and the one being
  // received (none on 2 ranks, whose one step sums into `out`), then the
  // slots.
  int64_t partialBytes = reduceScatterPartialBytes(blockBytes, g);
  char *partials = collectiveWorkspace.data(
      reduceScatterWorkspaceBytes(countPerRank, dtypeSize(type), g));
  const char *send = blocks + group.wrap(group.rank - 1) * blockBytes;
  for (int step = 0; step < g - 1; ++step) {
    char *dst = step == g - 2 ? static_cast<char *>(out)
                              : partials + step % 2 * blockBytes;
    const char *own = blocks + group.wrap(group.rank - step - 2) * blockBytes;
    reduceStep(group, send, countPerRank, dst, own, countPerRank, type,
               CollectiveKind::ReduceScatter, partials + partialBytes);
    send = dst;
  }
}

/// A chain from the root around the ring, in pieces, so that all links
/// carry data at once.
void runBroadcast(void *data, int64_t bytes, int root, AxisGroup axes) {
  countCall(CollectiveKind::Broadcast, axes);
  Group group(axes);
  if (group.size == 1)
    return;
  int position = group.wrap(group.rank - root);
  bool receives = position > 0;
  bool sends = position < group.size - 1;
  char *at = static_cast<char *>(data);
  std::vector<MPI_Request> recvs, forwards;
  if (receives)
    postRecvs(group, group.left(), data, bytes, kChainPieceBytes, recvs);
  for (int64_t offset = 0, piece = 0; offset < bytes;
       offset += kChainPieceBytes, ++piece) {
    if (receives)
      waitFor(1, &recvs[piece]);
    if (sends)
      postSends(group, group.right(), at + offset,
                std::min(kChainPieceBytes, bytes - offset), kChainPieceBytes,
                CollectiveKind::Broadcast, forwards);
  }
  waitRequests(forwards);
}

/// Every pair exchanges its blocks directly; all messages are posted at
/// once and MPI orders them.
void runAllToAll(const void *in, void *out, int64_t bytesPerRank,
                 AxisGroup axes) {
  countCall(CollectiveKind::AllToAll, axes);
  Group group(axes);
  const char *from = static_cast<const char *>(in);
  char *to = static_cast<char *>(out);
  copyBytes(to + group.rank * bytesPerRank, from + group.rank * bytesPerRank,
            bytesPerRank);
  std::vector<MPI_Request> requests;
  for (int shift = 1; shift < group.size; ++shift) {
    int source = group.wrap(group.rank - shift);
    int dest = group.wrap(group.rank + shift);
    postRecvs(group, source, to + source * bytesPerRank, bytesPerRank,
              kMaxMessageBytes, requests);
    postSends(group, dest, from + dest * bytesPerRank, bytesPerRank,
              kMaxMessageBytes, CollectiveKind::AllToAll, requests);
  }
  waitRequests(requests);
}

/// Posts a hand-over's receive and send (or copies, to itself) and returns
/// their requests.
std::vector<MPI_Request> postSendRecv(const void *in, void *out, int64_t bytes,
                                      int sendTo, int recvFrom,
                                      AxisGroup axes) {
  countCall(CollectiveKind::SendRecv, axes);
  Group group(axes);
  assert(sendTo >= kNoPeer && sendTo < group.size && recvFrom >= kNoPeer &&
         recvFrom < group.size && "peer outside the group");
  assert((sendTo == group.rank) == (recvFrom == group.rank) &&
         "a rank sends to itself exactly when it receives from itself");
  std::vector<MPI_Request> requests;
  if (sendTo == group.rank) {
    copyBytes(out, in, bytes);
    return requests;
  }
  if (recvFrom != kNoPeer)
    postRecvs(group, recvFrom, out, bytes, kMaxMessageBytes, requests);
  if (sendTo != kNoPeer)
    postSends(group, sendTo, in, bytes, kMaxMessageBytes,
              CollectiveKind::SendRecv, requests);
  return requests;
}

void waitForAll(std::vector<MPI_Request> &requests, WaitPolicy policy) {
  if (!requests.empty())
    waitFor(static_cast<int>(requests.size()), requests.data(), policy);
}

} // namespace

//===----------------------------------------------------------------------===//
// The public functions
//===----------------------------------------------------------------------===//

const char *collectiveKindName(CollectiveKind kind) {
  int index = static_cast<int>(kind);
  return index >= 0 && index < kNumCollectiveKinds ? kCollectiveKindNames[index]
                                                   : "?";
}

CollectiveHandle startAllReduceSum(void *data, int64_t count, DType type,
                                   AxisGroup group) {
  return submit([=] { runAllReduce(data, count, type, group); });
}

CollectiveHandle startSendRecv(const void *in, void *out, int64_t bytes,
                               int sendTo, int recvFrom, AxisGroup group) {
  // Started hand-overs wait patiently: the rank computes meanwhile. Where
  // everything queued or running has posted its messages (nothing, or
  // earlier hand-overs' waits), the messages are posted here, so that they
  // leave now: the communication thread, which shares the rank's core,
  // might only get to post them when the compute next waits, or after the
  // waits ahead of them (a 2-stage pipeline on 2 cores sent its first
  // micro-batch 80 us late, its peer stage idle). The communication thread
  // then only waits for them.
  if (startPostingBeside()) {
    auto requests = std::make_shared<std::vector<MPI_Request>>();
    {
      std::lock_guard<std::mutex> lock(mpiCallMutex());
      *requests = postSendRecv(in, out, bytes, sendTo, recvFrom, group);
    }
    finishPostingBeside();
    return submitWait(
        [requests] { waitForAll(*requests, WaitPolicy::Patient); });
  }
  return submit([=] {
    auto requests = postSendRecv(in, out, bytes, sendTo, recvFrom, group);
    waitForAll(requests, WaitPolicy::Patient);
  });
}

void allReduceSum(void *data, int64_t count, DType type, AxisGroup group) {
  runBlocking([=] { runAllReduce(data, count, type, group); });
}

void allGather(const void *in, void *out, int64_t bytesPerRank,
               AxisGroup group) {
  runBlocking([=] { runAllGather(in, out, bytesPerRank, group); });
}

void reduceScatterSum(const void *in, void *out, int64_t countPerRank,
                      DType type, AxisGroup group) {
  runBlocking([=] { runReduceScatter(in, out, countPerRank, type, group); });
}

void broadcast(void *data, int64_t bytes, int rootGroupRank, AxisGroup group) {
  runBlocking([=] { runBroadcast(data, bytes, rootGroupRank, group); });
}

void allToAll(const void *in, void *out, int64_t bytesPerRank,
              AxisGroup group) {
  runBlocking([=] { runAllToAll(in, out, bytesPerRank, group); });
}

void sendRecv(const void *in, void *out, int64_t bytes, int sendTo,
              int recvFrom, AxisGroup group) {
  runBlocking([=] {
    auto requests = postSendRecv(in, out, bytes, sendTo, recvFrom, group);
    waitForAll(requests, WaitPolicy::Prompt);
  });
}

} // namespace cleave::rt
