//===- HangGuard.h - end a test whose kernel never returns ------*- C++ -*-===//
//
// Part of Cleave's shared-body tests. A kernel whose loop never ends (a
// line walk that recursed into itself) would otherwise stall the whole
// test run until lit's or ctest's timeout, if one is set at all; a
// HangGuard ends the process with a message naming the test instead. Its
// limit is minutes for work of milliseconds: it tells a hang from a slow
// machine, it times nothing.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_SHAREDBODIES_HANGGUARD_H
#define CLEAVE_TEST_UNIT_SHAREDBODIES_HANGGUARD_H

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace cleave::rt::test {

/// While alive, exits the process (status 1) if it lives longer than
/// `limit`.
class HangGuard {
public:
  explicit HangGuard(std::string what,
                     std::chrono::seconds limit = std::chrono::seconds(120))
      : what(std::move(what)), watcher([this, limit] { watch(limit); }) {}

  ~HangGuard() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    finished.notify_one();
    watcher.join();
  }

  HangGuard(const HangGuard &) = delete;
  HangGuard &operator=(const HangGuard &) = delete;

private:
  void watch(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex);
    if (finished.wait_for(lock, limit, [this] { return done; }))
      return;
    std::fprintf(stderr, "FAILED: %s did not finish in %lld s (a hang)\n",
                 what.c_str(), static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }

  std::string what;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  // Last: started once the members above exist.
  std::thread watcher;
};

} // namespace cleave::rt::test

#endif // CLEAVE_TEST_UNIT_SHAREDBODIES_HANGGUARD_H
