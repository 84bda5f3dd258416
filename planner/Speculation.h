//===- Speculation.h - evaluating layouts ahead of the search ---*- C++ -*-===//
//
// The search decides layout by layout, each decision reading the plans
// found before it; what it evaluates for a layout (a partition and its
// prediction, a rolled estimate) depends on the layout alone. So other
// threads may evaluate the layouts the search will most likely ask for
// next while it decides, and the search takes their results in its own
// order: the plans, their order and the reasons are those of one thread.
// A result the search never asks for is dropped; one it asks for before a
// worker started it is computed by the search's own thread.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_SPECULATION_H
#define CLEAVE_PLANNER_SPECULATION_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/ThreadPool.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace cleave::planner {

/// Results of type `Result` by key, computed ahead on `threads - 1` worker
/// threads (none for one thread: everything is computed when taken).
/// Work must depend on its key alone, and be safe to run on several
/// threads at once; it runs in the order it was queued (urgent work
/// first).
template <typename Result> class Speculation {
public:
  explicit Speculation(unsigned threads) {
    if (threads > 1)
      pool = std::make_unique<llvm::DefaultThreadPool>(
          llvm::hardware_concurrency(threads - 1));
  }
  Speculation(const Speculation &) = delete;
  Speculation &operator=(const Speculation &) = delete;
  /// Waits for the work under way (what was not started is dropped).
  ~Speculation() {
    if (!pool)
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (const std::shared_ptr<Entry> &entry : queue)
        if (entry->state == State::Queued)
          entry->state = State::Dropped;
    }
    pool->wait();
  }

  /// Queues `work` for `key`, unless it is queued or done already: last,
  /// or with `urgent` first (what the search needs next, before what it
  /// may need later).
  void prefetch(const std::string &key, std::function<Result()> work,
                bool urgent = false) {
    if (!pool)
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto [it, fresh] = entries.try_emplace(key);
      if (!fresh)
        return;
      it->second = std::make_shared<Entry>();
      it->second->work = std::move(work);
      if (urgent)
        queue.push_front(it->second);
      else
        queue.push_back(it->second);
    }
    pool->async([this] {
      std::unique_lock<std::mutex> lock(mutex);
      runNext(lock);
    });
  }

  /// The result for `key`: the one computed ahead (while a worker computes
  /// it, this thread runs queued work), or `work` run here when none was
  /// started. Each result is taken once.
  Result take(const std::string &key, llvm::function_ref<Result()> work) {
    std::unique_lock<std::mutex> lock(mutex);
    auto it = entries.find(key);
    if (it == entries.end()) {
      lock.unlock();
      return work();
    }
    std::shared_ptr<Entry> entry = it->second;
    entries.erase(it);
    if (entry->state == State::Queued) {
      entry->state = State::Dropped;
      lock.unlock();
      return work();
    }
    while (entry->state != State::Done)
      if (!runNext(lock))
        done.wait(lock);
    return std::move(entry->result);
  }

private:
  enum class State { Queued, Running, Done, Dropped };
  struct Entry {
    std::function<Result()> work;
    State state = State::Queued;
    Result result;
  };

  /// Runs the first queued work (unlocked meanwhile); false when none.
  bool runNext(std::unique_lock<std::mutex> &lock) {
    while (!queue.empty() && queue.front()->state != State::Queued)
      queue.pop_front();
    if (queue.empty())
      return false;
    std::shared_ptr<Entry> entry = queue.front();
    queue.pop_front();
    entry->state = State::Running;
    lock.unlock();
    Result result = entry->work();
    lock.lock();
    entry->result = std::move(result);
    entry->state = State::Done;
    done.notify_all();
    return true;
  }

  std::mutex mutex;
  std::condition_variable done;
  std::map<std::string, std::shared_ptr<Entry>> entries;
  std::deque<std::shared_ptr<Entry>> queue;
  std::unique_ptr<llvm::DefaultThreadPool> pool;
};

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_SPECULATION_H
