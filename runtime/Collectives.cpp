//===- Collectives.cpp - ring collectives on a communication thread -------===//
//
// Part of the Cleave runtime: plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//

#include "runtime/Collectives.h"
#include "runtime/CommVolume.h"
#include "runtime/MeshDetail.h"
#include "runtime/Trace.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <sched.h>
#include <thread>
#include <vector>

namespace cleave::rt {
namespace {

/// The received half of a reduce step arrives in pieces, two in flight:
/// each piece is added while it is still in cache, and the next one is on
/// its way meanwhile. Measured with bench/allreduce_bench.cpp on 2 ranks
/// (bench/README.md): 1 MiB pieces are best up to 4 MiB halves (256 KiB
/// and 512 KiB ones lose a quarter of the bandwidth at a 4 MiB all-reduce);
/// for larger halves, whose sums no longer stay in the last-level cache,
/// 256 KiB pieces are best (1.0-1.4x MPI at 16 MiB, where 1 MiB and 512 KiB
/// pieces give 0.8x).
constexpr int64_t kReducePieceBytes = 1 << 20;
constexpr int64_t kLargeReducePieceBytes = 256 << 10;
constexpr int64_t kLargeReduceStepBytes = 4 << 20;
int64_t reducePieceBytes(int64_t stepBytes) {
  return stepBytes > kLargeReduceStepBytes ? kLargeReducePieceBytes
                                           : kReducePieceBytes;
}
/// A broadcast chain forwards each piece of this size as soon as it has it.
constexpr int64_t kChainPieceBytes = 1 << 20;
/// MPI counts are ints: longer messages go as several.
constexpr int64_t kMaxMessageBytes = 1 << 30;

//===----------------------------------------------------------------------===//
// Waiting, under a watchdog
//===----------------------------------------------------------------------===//

/// --collective-timeout, in seconds (0: none). Atomic: the driver sets it
/// while the communication thread may read it.
std::atomic<int64_t> timeoutSeconds{kDefaultCollectiveTimeoutSeconds};

/// The collective running now, for the watchdog's message. Collectives run
/// one at a time, so one record serves both threads; only the thread
/// running the collective touches it.
struct CurrentCollective {
  const char *name = "?";
  AxisGroup group = {{}, 0};
  /// Over MPI_COMM_WORLD rather than a group of the mesh.
  bool world = false;
  /// Collectives started by this process so far, this one included.
  int64_t number = 0;
};
CurrentCollective current;

void beginCollective(const char *name, AxisGroup group, bool world = false) {
  current.name = name;
  current.group = group;
  current.world = world;
  ++current.number;
}

/// How a wait polls: spinning first, as MPI_Waitall does, so that short
/// waits keep MPI's latency; then yielding the core (ranks may outnumber
/// cores); then short sleeps, so that ranks waiting long for a straggler
/// (rank 0 writing a checkpoint, say) leave the cores to it. A sleep
/// delays a late message by at most kMaxSleep.
using Clock = std::chrono::steady_clock;
constexpr auto kSpinTime = std::chrono::milliseconds(1);
constexpr auto kYieldTime = std::chrono::milliseconds(20);
constexpr auto kFirstSleep = std::chrono::microseconds(20);
constexpr auto kMaxSleep = std::chrono::microseconds(250);
constexpr auto kFrozenGap = std::chrono::seconds(1);
constexpr int64_t kCenturySeconds = int64_t(100) * 365 * 24 * 3600;

[[noreturn]] void abortStalledJob(int64_t seconds) {
  std::fprintf(
      stderr,
      "%s: error: rank %d: %s over %s made no progress for %lld s "
      "(collective #%lld of this run); another rank has stopped or "
      "is stuck; aborting the job (--collective-timeout)\n",
      detail::meshProgramName(), worldRank(), current.name,
      current.world ? "all ranks" : detail::groupName(current.group).c_str(),
      static_cast<long long>(seconds), static_cast<long long>(current.number));
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

/// MPI_Waitall, but aborting the job when the requests stay incomplete for
/// the collective timeout: every blocking wait of the collectives goes
/// through here.
void waitFor(int count, MPI_Request *requests) {
  int done = 0;
  MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
  if (done)
    return;
  int64_t limit = timeoutSeconds.load(std::memory_order_relaxed);
  Clock::time_point start = Clock::now();
  // Limits beyond a century (which would overflow the clock) wait forever.
  Clock::time_point deadline = limit > 0 && limit < kCenturySeconds
                                   ? start + std::chrono::seconds(limit)
                                   : Clock::time_point::max();
  auto sleep = kFirstSleep;
  Clock::time_point last = start;
  for (;;) {
    MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
    if (done)
      return;
    Clock::time_point now = Clock::now();
    // A gap between two polls is time this process did not run (stopped,
    // or starved by the host): its peers are not to blame for it.
    if (now - last > kFrozenGap && deadline != Clock::time_point::max())
      deadline += now - last;
    last = now;
    if (now - start < kSpinTime)
      continue;
    if (now >= deadline)
      abortStalledJob(limit);
    if (now - start < kYieldTime) {
      sched_yield();
      continue;
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min<decltype(sleep)>(2 * sleep, kMaxSleep);
  }
}

//===----------------------------------------------------------------------===//
// Running collectives one at a time, in start order
//===----------------------------------------------------------------------===//

/// Collectives waiting for the communication thread, run first in, first
/// out. Heap-allocated and never destroyed while the thread lives, so that a
/// program exiting without finalizeMesh does not destroy a mutex in use.
struct CommQueue {
  std::mutex mutex;
  /// Signals the thread: a task was queued, or it is time to stop.
  std::condition_variable workQueued;
  /// Signals the waiters: a task completed.
  std::condition_variable workDone;
  std::deque<std::function<void()>> tasks;
  /// Tasks queued and completed so far; a queued task's handle is its
  /// number.
  int64_t queued = 0;
  int64_t completed = 0;
  /// Whether a task runs, on either thread: MPI sees one caller at a time.
  bool running = false;
  bool stopping = false;
  std::thread thread;
};

/// Non-null between startCommThread and stopCommThread. Without a mesh
/// there is no thread and collectives run on the caller's.
CommQueue *commQueue = nullptr;

/// Written by whichever thread runs the collectives, one at a time; read
/// after waiting for them (which orders the accesses through the queue's
/// mutex).
CommCounters counters;

void commThreadMain(CommQueue &queue) {
  std::unique_lock<std::mutex> lock(queue.mutex);
  for (;;) {
    // Sleeps while idle: ranks may outnumber cores.
    queue.workQueued.wait(lock, [&] {
      return queue.stopping || (!queue.tasks.empty() && !queue.running);
    });
    if (queue.tasks.empty())
      return;
    std::function<void()> task = std::move(queue.tasks.front());
    queue.tasks.pop_front();
    queue.running = true;
    lock.unlock();
    task();
    lock.lock();
    queue.running = false;
    ++queue.completed;
    queue.workDone.notify_all();
  }
}

/// Queues `task` on the communication thread, or runs it at once without
/// one (handle 0, already complete).
CollectiveHandle submit(std::function<void()> task) {
  if (!commQueue) {
    task();
    return 0;
  }
  std::function<void()> traced = traceCommunication(std::move(task));
  std::lock_guard<std::mutex> lock(commQueue->mutex);
  commQueue->tasks.push_back(std::move(traced));
  commQueue->workQueued.notify_one();
  return ++commQueue->queued;
}

/// Runs a blocking collective. With nothing queued or running it runs on
/// the calling thread: handing it to the communication thread and waking
/// up again would add two thread switches, some 20 us, to every small
/// collective (bench/README.md).
/// (A template, so that the common path allocates no std::function.)
template <typename Task> void runBlocking(Task task) {
  if (!commQueue) {
    task();
    return;
  }
  std::unique_lock<std::mutex> lock(commQueue->mutex);
  if (!commQueue->tasks.empty() || commQueue->running) {
    lock.unlock();
    waitCollective(submit(std::move(task)));
    return;
  }
  commQueue->running = true;
  lock.unlock();
  task();
  lock.lock();
  commQueue->running = false;
  // A task queued meanwhile (from another thread) waited for `running` to
  // clear. Otherwise the thread sleeps on: waking it for nothing would cost
  // a context switch per collective.
  if (!commQueue->tasks.empty())
    commQueue->workQueued.notify_one();
}

void waitAll() {
  if (!commQueue)
    return;
  std::unique_lock<std::mutex> lock(commQueue->mutex);
  commQueue->workDone.wait(
      lock, [] { return commQueue->completed == commQueue->queued; });
}

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
  counters.bytesSent[static_cast<int>(kind)] += bytes;
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
/// piece-sized slots, alternately.
void reduceStep(const Group &group, const void *send, int64_t sendCount,
                void *dst, const void *own, int64_t count, DType type,
                CollectiveKind kind) {
  static std::vector<char> slots(2 * kReducePieceBytes);
  int64_t elementBytes = dtypeSize(type);
  int64_t pieceBytes = reducePieceBytes(count * elementBytes);
  int64_t pieceCount = pieceBytes / elementBytes;
  int64_t numPieces = (count + pieceCount - 1) / pieceCount;
  auto pieceSize = [&](int64_t piece) {
    return std::min(pieceCount, count - piece * pieceCount);
  };
  auto slot = [&](int64_t piece) {
    return slots.data() + piece % 2 * pieceBytes;
  };
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

/// Counts a collective and makes it the watchdog's current one.
void countCall(CollectiveKind kind, AxisGroup axes) {
  ++counters.calls[static_cast<int>(kind)];
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
    static char incoming[kSmallAllReduceBytes];
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
      counters.bytesSent[static_cast<int>(CollectiveKind::AllReduce)] += total;
      waitFor(numRequests, requests);
      add(bytes, bytes, incoming, count, type);
    }
    return;
  }
  auto chunk = [&](int c) {
    return bytes + ringChunkBegin(count, g, c) * elementBytes;
  };
  auto chunkCount = [&](int c) { return ringChunkSize(count, g, c); };
  for (int step = 0; step < g - 1; ++step) {
    int send = group.wrap(group.rank - step);
    int recv = group.wrap(group.rank - step - 1);
    reduceStep(group, chunk(send), chunkCount(send), chunk(recv), chunk(recv),
               chunkCount(recv), type, CollectiveKind::AllReduce);
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
  // Two partial sums: the one being sent and the one being received.
  static std::vector<char> partials;
  if (static_cast<int64_t>(partials.size()) < 2 * blockBytes)
    partials.resize(2 * blockBytes);
  const char *send = blocks + group.wrap(group.rank - 1) * blockBytes;
  for (int step = 0; step < g - 1; ++step) {
    char *dst = step == g - 2 ? static_cast<char *>(out)
                              : partials.data() + step % 2 * blockBytes;
    const char *own = blocks + group.wrap(group.rank - step - 2) * blockBytes;
    reduceStep(group, send, countPerRank, dst, own, countPerRank, type,
               CollectiveKind::ReduceScatter);
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

void runSendRecv(const void *in, void *out, int64_t bytes, int sendTo,
                 int recvFrom, AxisGroup axes) {
  countCall(CollectiveKind::SendRecv, axes);
  Group group(axes);
  assert(sendTo >= kNoPeer && sendTo < group.size && recvFrom >= kNoPeer &&
         recvFrom < group.size && "peer outside the group");
  assert((sendTo == group.rank) == (recvFrom == group.rank) &&
         "a rank sends to itself exactly when it receives from itself");
  if (sendTo == group.rank) {
    copyBytes(out, in, bytes);
    return;
  }
  std::vector<MPI_Request> requests;
  if (recvFrom != kNoPeer)
    postRecvs(group, recvFrom, out, bytes, kMaxMessageBytes, requests);
  if (sendTo != kNoPeer)
    postSends(group, sendTo, in, bytes, kMaxMessageBytes,
              CollectiveKind::SendRecv, requests);
  waitRequests(requests);
}

} // namespace

//===----------------------------------------------------------------------===//
// The public functions
//===----------------------------------------------------------------------===//

const char *collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::SendRecv:
    return "send_recv";
  }
  return "?";
}

CollectiveHandle startAllReduceSum(void *data, int64_t count, DType type,
                                   AxisGroup group) {
  return submit([=] { runAllReduce(data, count, type, group); });
}

CollectiveHandle startSendRecv(const void *in, void *out, int64_t bytes,
                               int sendTo, int recvFrom, AxisGroup group) {
  return submit(
      [=] { runSendRecv(in, out, bytes, sendTo, recvFrom, group); });
}

bool collectiveDone(CollectiveHandle handle) {
  if (!commQueue)
    return true;
  std::lock_guard<std::mutex> lock(commQueue->mutex);
  return commQueue->completed >= handle;
}

void waitCollective(CollectiveHandle handle) {
  if (!commQueue)
    return;
  std::unique_lock<std::mutex> lock(commQueue->mutex);
  commQueue->workDone.wait(lock,
                           [&] { return commQueue->completed >= handle; });
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
  runBlocking([=] { runSendRecv(in, out, bytes, sendTo, recvFrom, group); });
}

const CommCounters &commCounters() {
  waitAll();
  return counters;
}

void recordCollective(CollectiveKind kind, int64_t bytesSent) {
  ++counters.calls[static_cast<int>(kind)];
  counters.bytesSent[static_cast<int>(kind)] += bytesSent;
}

void resetCommCounters() {
  waitAll();
  counters = CommCounters();
}

void setCollectiveTimeout(int64_t seconds) {
  timeoutSeconds.store(seconds, std::memory_order_relaxed);
}

int64_t collectiveTimeout() {
  return timeoutSeconds.load(std::memory_order_relaxed);
}

namespace detail {

void startCommThread() {
  assert(!commQueue && "the communication thread runs already");
  commQueue = new CommQueue;
  commQueue->thread = std::thread(commThreadMain, std::ref(*commQueue));
}

void finalBarrier() {
  runBlocking([] {
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    beginCollective("barrier", AxisGroup{{}, 0}, /*world=*/true);
    waitFor(1, &request);
  });
}

void stopCommThread() {
  assert(commQueue && "no communication thread");
  {
    std::lock_guard<std::mutex> lock(commQueue->mutex);
    commQueue->stopping = true;
    commQueue->workQueued.notify_one();
  }
  commQueue->thread.join();
  delete commQueue;
  commQueue = nullptr;
}

} // namespace detail
} // namespace cleave::rt
