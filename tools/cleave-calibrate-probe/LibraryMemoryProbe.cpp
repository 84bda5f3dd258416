//===- LibraryMemoryProbe.cpp - memory MPI keeps for itself ---------------===//

#include "LibraryMemoryProbe.h"

#include "runtime/CollectiveBuffers.h"
#include "runtime/CollectiveKernels.h"
#include "runtime/Collectives.h"
#include "runtime/PeakMemory.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace cleave::probe {

namespace {

/// Buffer sizes of the collectives: a bucket of small gradients and a
/// layer's.
constexpr int64_t kCollectiveBytes[] = {int64_t{4} << 10, int64_t{64} << 10};
/// Hand-overs in flight before the receiving rank posts its receives (a
/// pipeline stage running ahead of the next one), of sizes MPI sends
/// eagerly: buffered at the receiver when they arrive first.
constexpr int kMessagesAhead = 2;
constexpr int64_t kHandOverBytes[] = {int64_t{1} << 10, int64_t{4} << 10};
/// Each pattern runs this many times: lists grow where messages pile up,
/// which depends on how the ranks happen to be scheduled.
constexpr int kRounds = 3;

/// A step computes between its collectives, about as long as an op of a
/// small model takes. (Messages sent back to back pile up at ranks that
/// share a core, and MPI's lists grow further than a program's do.)
void computeAWhile() {
  auto until =
      std::chrono::steady_clock::now() + std::chrono::microseconds(300);
  volatile double x = 1;
  while (std::chrono::steady_clock::now() < until)
    x = x * 1.0000001 + 1e-9;
}

/// An all-reduce bucket on the communication thread, a reduce-scatter and
/// an all-gather on the step's, at each size.
void runCollectives(rt::AxisGroup group, float *in, float *out) {
  using namespace rt;
  int g = groupSize(group);
  for (int64_t bytes : kCollectiveBytes) {
    int64_t count = bytes / sizeof(float);
    const void *ins[] = {in};
    void *outs[] = {in};
    int64_t bucket =
        startAllReduceBucket(ins, outs, &count, 1, DType::F32, group);
    computeAWhile();
    finishAllReduceBucket(bucket);
    computeAWhile();
    int64_t perRank = count / g;
    reduceScatterDim(in, Shape{perRank * g}, 0, DType::F32, out, group);
    computeAWhile();
    allGatherDim(in, Shape{perRank}, 0, sizeof(float), out, group);
    computeAWhile();
  }
}

/// Every rank sends kMessagesAhead messages to the next rank of `group`
/// before it receives as many from the previous one.
void runHandOvers(rt::AxisGroup group, char *send, char *receive) {
  using namespace rt;
  int g = groupSize(group), r = groupRank(group);
  for (int64_t bytes : kHandOverBytes) {
    for (int i = 0; i < kMessagesAhead; ++i) {
      sendAsyncUncopied(send + i * bytes, bytes, (r + 1) % g, group);
      computeAWhile();
    }
    std::vector<int64_t> receives;
    for (int i = 0; i < kMessagesAhead; ++i)
      receives.push_back(
          startReceive(receive + i * bytes, bytes, (r + g - 1) % g, group));
    for (int64_t id : receives)
      finishAllReduceBucket(id);
    finishSends();
  }
}

} // namespace

int64_t measureLibraryMemory(rt::AxisGroup all) {
  // The probe's own buffers, touched before the baseline.
  size_t floats =
      kCollectiveBytes[std::size(kCollectiveBytes) - 1] / sizeof(float);
  std::vector<float> in(floats, 1.0f), out(floats, 0.0f);
  size_t handOver =
      kMessagesAhead * kHandOverBytes[std::size(kHandOverBytes) - 1];
  std::vector<char> send(handOver, 1), receive(handOver, 0);
  // A program's start-up agrees on its outputs' locations (one small
  // all-reduce over every rank: allSucceeded) before its meter starts.
  int64_t failures = 0;
  rt::allReduceSum(&failures, 1, rt::DType::I64, all);

  rt::PeakMemoryMeter meter(/*enabled=*/true);
  for (int round = 0; round < kRounds; ++round) {
    runCollectives(all, in.data(), out.data());
    runHandOvers(all, send.data(), receive.data());
  }
  meter.stop();
  int64_t mine =
      meter.growth().peak - meter.growth().file - rt::collectiveBufferBytes();
  mine = std::max<int64_t>(mine, 0);
  // Every rank's, through the runtime (MPI is the communication thread's).
  std::vector<int64_t> each(rt::groupSize(all));
  rt::allGather(&mine, each.data(), sizeof(mine), all);
  return *std::max_element(each.begin(), each.end());
}

} // namespace cleave::probe
