//===- CommThread.cpp - collectives one at a time, under a watchdog -------===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The communication thread
// and its queue, which run the collectives one at a time in start order;
// the watchdog every wait goes through; the counts of what was sent.
//
//===----------------------------------------------------------------------===//

#include "runtime/CommThread.h"
#include "runtime/MeshDetail.h"
#include "runtime/Trace.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <sched.h>
#include <thread>

namespace cleave::rt {
namespace {

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

/// MPI sees one call at a time (MPI_THREAD_SERIALIZED). The thread running
/// the collectives makes the calls, except that a started hand-over may be
/// posted by the caller while the communication thread only waits for
/// earlier hand-overs (startPostingBeside): the two then hold this mutex
/// for each call, and the caller for its collective's record (`current`).
std::mutex mpiCalls;

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
/// A patient wait's poll interval while the rank computes; a thread that
/// starts waiting for a collective cuts it short.
constexpr auto kPatientPoll = std::chrono::microseconds(200);

/// Threads of this rank blocked in waitCollective (the compute thread
/// waiting for a started collective): a patient wait is then prompt.
/// Written under patienceMutex, which callerArrived signals.
std::atomic<int> callersWaiting{0};
std::mutex patienceMutex;
std::condition_variable callerArrived;

/// Marks the calling thread as waiting for started collectives while it
/// lives.
struct CallerWaiting {
  CallerWaiting() {
    {
      std::lock_guard<std::mutex> lock(patienceMutex);
      callersWaiting.fetch_add(1, std::memory_order_relaxed);
    }
    callerArrived.notify_all();
  }
  ~CallerWaiting() { callersWaiting.fetch_sub(1, std::memory_order_relaxed); }
};
constexpr int64_t kCenturySeconds = int64_t(100) * 365 * 24 * 3600;

[[noreturn]] void abortStalledJob(int64_t seconds) {
  std::lock_guard<std::mutex> lock(mpiCalls);
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
  struct Task {
    std::function<void()> run;
    /// Whether it posts messages (all but the waits of posted hand-overs).
    bool posts;
  };
  std::deque<Task> tasks;
  /// Tasks queued and completed so far; a queued task's handle is its
  /// number.
  int64_t queued = 0;
  int64_t completed = 0;
  /// Whether a task runs, on either thread: MPI sees one caller at a time.
  bool running = false;
  /// Tasks queued or running that post messages, and a hand-over being
  /// posted beside them: while none, the caller may post one.
  int64_t posting = 0;
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
    CommQueue::Task task = std::move(queue.tasks.front());
    queue.tasks.pop_front();
    queue.running = true;
    lock.unlock();
    task.run();
    lock.lock();
    queue.running = false;
    queue.posting -= task.posts;
    ++queue.completed;
    queue.workDone.notify_all();
  }
}

void waitAll() {
  if (!commQueue)
    return;
  std::unique_lock<std::mutex> lock(commQueue->mutex);
  if (commQueue->completed == commQueue->queued)
    return;
  CallerWaiting waiting;
  commQueue->workDone.wait(
      lock, [] { return commQueue->completed == commQueue->queued; });
}

} // namespace

namespace detail {

void beginCollective(const char *name, AxisGroup group, bool world) {
  current.name = name;
  current.group = group;
  current.world = world;
  ++current.number;
}

void waitFor(int count, MPI_Request *requests, WaitPolicy policy) {
  int done = 0;
  auto test = [&] {
    std::lock_guard<std::mutex> lock(mpiCalls);
    MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
  };
  test();
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
    test();
    if (done)
      return;
    Clock::time_point now = Clock::now();
    // A gap between two polls is time this process did not run (stopped,
    // or starved by the host): its peers are not to blame for it.
    if (now - last > kFrozenGap && deadline != Clock::time_point::max())
      deadline += now - last;
    last = now;
    if (policy == WaitPolicy::Patient) {
      if (now >= deadline)
        abortStalledJob(limit);
      std::unique_lock<std::mutex> lock(patienceMutex);
      if (!callerArrived.wait_for(lock, kPatientPoll, [] {
            return callersWaiting.load(std::memory_order_relaxed) > 0;
          }))
        continue;
      lock.unlock();
      // From here the rank waits for this wait: poll as a prompt one,
      // counting from now.
      policy = WaitPolicy::Prompt;
      start = now;
    }
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

CommCounters &runningCounters() { return counters; }

/// Queues `task`, which posts messages or not (a posted hand-over's wait).
CollectiveHandle enqueue(std::function<void()> task, bool posts) {
  if (!commQueue) {
    task();
    return 0;
  }
  std::function<void()> traced = traceCommunication(std::move(task));
  std::lock_guard<std::mutex> lock(commQueue->mutex);
  commQueue->tasks.push_back({std::move(traced), posts});
  commQueue->posting += posts;
  commQueue->workQueued.notify_one();
  return ++commQueue->queued;
}

CollectiveHandle submit(std::function<void()> task) {
  return enqueue(std::move(task), /*posts=*/true);
}

CollectiveHandle submitWait(std::function<void()> wait) {
  return enqueue(std::move(wait), /*posts=*/false);
}

bool startPostingBeside() {
  if (!commQueue)
    return true;
  std::lock_guard<std::mutex> lock(commQueue->mutex);
  if (commQueue->posting > 0)
    return false;
  ++commQueue->posting;
  return true;
}

void finishPostingBeside() {
  if (!commQueue)
    return;
  std::lock_guard<std::mutex> lock(commQueue->mutex);
  --commQueue->posting;
  if (!commQueue->tasks.empty())
    commQueue->workQueued.notify_one();
}

std::mutex &mpiCallMutex() { return mpiCalls; }

bool startOnCaller() {
  if (!commQueue)
    return true;
  std::lock_guard<std::mutex> lock(commQueue->mutex);
  if (!commQueue->tasks.empty() || commQueue->running || commQueue->posting > 0)
    return false;
  commQueue->running = true;
  ++commQueue->posting;
  return true;
}

void finishOnCaller() {
  if (!commQueue)
    return;
  std::lock_guard<std::mutex> lock(commQueue->mutex);
  commQueue->running = false;
  --commQueue->posting;
  // A task queued meanwhile (from another thread) waited for `running` to
  // clear. Otherwise the thread sleeps on: waking it for nothing would cost
  // a context switch per collective.
  if (!commQueue->tasks.empty())
    commQueue->workQueued.notify_one();
}

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

//===----------------------------------------------------------------------===//
// The public functions
//===----------------------------------------------------------------------===//

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
  if (commQueue->completed >= handle)
    return;
  CallerWaiting waiting;
  commQueue->workDone.wait(lock,
                           [&] { return commQueue->completed >= handle; });
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

} // namespace cleave::rt
