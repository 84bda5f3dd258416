//===- CommThread.h - how the collectives run, one at a time ----*- C++ -*-===//
//
// Part of the Cleave runtime; included by Collectives.cpp and CommThread.cpp
// only, never by generated programs (it brings in mpi.h). The algorithms
// (Collectives.cpp) run on the communication thread or the caller's, one
// at a time, and wait for their messages under the watchdog; the public
// functions of Collectives.h that queue, wait and count live in
// CommThread.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMMTHREAD_H
#define CLEAVE_RUNTIME_COMMTHREAD_H

#include "runtime/Collectives.h"

#include <mpi.h>

#include <functional>
#include <mutex>
#include <utility>

namespace cleave::rt::detail {

/// Makes `name` over `group` (or, with `world`, over all ranks) the
/// collective the watchdog names. Collectives run one at a time, so one
/// record serves both threads.
void beginCollective(const char *name, AxisGroup group, bool world = false);

/// How a wait polls its requests.
enum class WaitPolicy {
  /// Spins first: the peers are about to answer (the steps of a ring).
  Prompt,
  /// A pipeline hand-over, posted where the program meets it, usually
  /// milliseconds before its peer gets there: while no thread of this rank
  /// waits for a started collective, it polls between short sleeps, so
  /// that the communication thread does not take the core from the
  /// rank's compute (ranks and their communication threads share cores);
  /// once one waits, it polls as Prompt does.
  Patient,
};

/// MPI_Waitall, but aborting the job when the requests stay incomplete for
/// the collective timeout: every blocking wait of the collectives goes
/// through here.
void waitFor(int count, MPI_Request *requests,
             WaitPolicy policy = WaitPolicy::Prompt);

/// The counters the running collective adds to. Written by whichever
/// thread runs the collectives, one at a time; read after waiting for them
/// (commCounters).
CommCounters &runningCounters();

/// Queues `task` on the communication thread, or runs it at once without
/// one (handle 0, already complete).
CollectiveHandle submit(std::function<void()> task);

/// Queues the wait of a hand-over already posted (startPostingBeside), a
/// task that posts nothing.
CollectiveHandle submitWait(std::function<void()> wait);

/// Whether a started hand-over may post its messages on the calling thread
/// now: every collective queued or running (hand-over waits) has posted
/// its own, so the messages still go in start order. It posts holding
/// mpiCallMutex, since the communication thread may be polling, and counts
/// as posting until finishPostingBeside.
bool startPostingBeside();
void finishPostingBeside();
std::mutex &mpiCallMutex();

/// Whether a blocking collective may run on the calling thread now
/// (nothing is queued or running); it then counts as running until
/// finishOnCaller.
bool startOnCaller();
void finishOnCaller();

/// Runs a blocking collective. With nothing queued or running it runs on
/// the calling thread: handing it to the communication thread and waking
/// up again would add two thread switches, some 20 us, to every small
/// collective (bench/README.md).
/// (A template, so that the common path allocates no std::function.)
template <typename Task> void runBlocking(Task task) {
  if (startOnCaller()) {
    task();
    finishOnCaller();
    return;
  }
  waitCollective(submit(std::move(task)));
}

} // namespace cleave::rt::detail

#endif // CLEAVE_RUNTIME_COMMTHREAD_H
