//===- CollectivesTest.cpp - the collectives against direct sums ----------===//
//
// Runs every collective of runtime/Collectives.h on every group of a mesh and
// compares with results computed directly from the other ranks' inputs
// (every rank's input is a function of its world rank, so each rank knows
// them all). Run under mpirun with the mesh on the command line:
//
//   mpirun -np 4 cleave-collectives-test --mesh a=2,b=2
//
// Without --mesh it runs as one process with no mesh. Rank 0 prints one
// `PASS: <what>` or `FAIL: <what>` line per collective and group; a failing
// rank prints what differed. Exits 1 if anything failed on any rank.
//
// The inputs are small integers, so sums are exact in every type and
// independent of the order of addition; the bitwise check across ranks uses
// inexact fractions instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/Collectives.h"
#include "runtime/CollectiveKernels.h"
#include "runtime/CommVolume.h"
#include "runtime/Mesh.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace cleave::rt;

namespace {

//===----------------------------------------------------------------------===//
// The mesh as the test sees it, independently of Mesh.cpp
//===----------------------------------------------------------------------===//

std::vector<std::string> axisNames;
std::vector<int64_t> axisSizes;
/// This rank's coordinates, decoded row-major from its world rank.
std::vector<int> myCoords;

int worldRankOf(const std::vector<int> &coords) {
  int rank = 0;
  for (size_t axis = 0; axis < coords.size(); ++axis)
    rank = rank * static_cast<int>(axisSizes[axis]) + coords[axis];
  return rank;
}

int sizeOf(AxisGroup group) {
  int size = 1;
  for (int i = 0; i < group.count; ++i)
    size *= static_cast<int>(axisSizes[group.axes[i]]);
  return size;
}

int rankIn(AxisGroup group) {
  int rank = 0;
  for (int i = 0; i < group.count; ++i)
    rank = rank * static_cast<int>(axisSizes[group.axes[i]]) +
           myCoords[group.axes[i]];
  return rank;
}

/// The world ranks of this rank's `group`, by group rank: member q has this
/// rank's coordinates, with q decoded over the group's axes, the last one
/// fastest.
std::vector<int> membersOf(AxisGroup group) {
  std::vector<int> members;
  for (int q = 0; q < sizeOf(group); ++q) {
    std::vector<int> coords = myCoords;
    for (int i = group.count - 1, rest = q; i >= 0; --i) {
      int size = static_cast<int>(axisSizes[group.axes[i]]);
      coords[group.axes[i]] = rest % size;
      rest /= size;
    }
    members.push_back(worldRankOf(coords));
  }
  return members;
}

std::string groupName(AxisGroup group) {
  std::string name = "{";
  for (int i = 0; i < group.count; ++i)
    name += (i ? "," : "") + axisNames[group.axes[i]];
  return name + "}";
}

/// The trivial group and every ordering of every subset of the axes.
std::vector<AxisGroup> allGroups() {
  std::vector<AxisGroup> groups = {AxisGroup{{}, 0}};
  for (size_t next = 0; next < groups.size(); ++next)
    for (int axis = 0; axis < static_cast<int>(axisSizes.size()); ++axis) {
      AxisGroup group = groups[next];
      bool used = false;
      for (int i = 0; i < group.count; ++i)
        used |= group.axes[i] == axis;
      if (used)
        continue;
      group.axes[group.count++] = static_cast<int8_t>(axis);
      groups.push_back(group);
    }
  return groups;
}

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

/// Failures on this rank: in the current section, and in all.
int64_t sectionFailures = 0;
int64_t totalFailures = 0;

void fail(const char *format, ...) {
  ++sectionFailures;
  ++totalFailures;
  if (totalFailures > 20)
    return;
  std::fprintf(stderr, "FAIL: rank %d: ", worldRank());
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fprintf(stderr, "\n");
}

/// The world group, to sum the failure counts of all ranks.
AxisGroup worldGroup() {
  AxisGroup group{{}, static_cast<int8_t>(axisSizes.size())};
  for (int axis = 0; axis < group.count; ++axis)
    group.axes[axis] = static_cast<int8_t>(axis);
  return group;
}

/// Ends a section: rank 0 says whether any rank failed in it.
void report(const std::string &what) {
  int64_t failures = sectionFailures;
  allReduceSum(&failures, 1, DType::I64, worldGroup());
  if (isMeshRoot()) {
    if (failures)
      std::printf("FAIL: %s: %lld failures\n", what.c_str(),
                  static_cast<long long>(failures));
    else
      std::printf("PASS: %s\n", what.c_str());
    std::fflush(stdout);
  }
  sectionFailures = 0;
}

//===----------------------------------------------------------------------===//
// Inputs and comparisons
//===----------------------------------------------------------------------===//

template <typename T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return DType::F32; }
template <> constexpr DType dtypeOf<double>() { return DType::F64; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::I64; }

/// Rank `rank`'s element i: an integer in [-30, 30].
template <typename T> T value(int rank, int64_t i) {
  return static_cast<T>((rank * 131 + i * 7) % 61 - 30);
}

template <typename T> std::vector<T> inputOf(int rank, int64_t count) {
  std::vector<T> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = value<T>(rank, i);
  return v;
}

/// Element-by-element equality; reports the first difference.
template <typename T>
void expectEqual(const std::vector<T> &got, const std::vector<T> &expected,
                 const std::string &what) {
  for (size_t i = 0; i < expected.size(); ++i)
    if (got[i] != expected[i]) {
      fail("%s: element %zu is %g, expected %g", what.c_str(), i,
           static_cast<double>(got[i]), static_cast<double>(expected[i]));
      return;
    }
}

/// Checks that this rank sent exactly what CommVolume.h predicts, in one
/// call of `kind`, and nothing else.
void expectCounted(CollectiveKind kind, int64_t predicted,
                   const std::string &what) {
  const CommCounters &counters = commCounters();
  for (int k = 0; k < kNumCollectiveKinds; ++k) {
    bool mine = k == static_cast<int>(kind);
    if (counters.bytesSent[k] != (mine ? predicted : 0) ||
        counters.calls[k] != (mine ? 1 : 0))
      fail("%s: counted %lld bytes in %lld %s calls, predicted %lld in %d",
           what.c_str(), static_cast<long long>(counters.bytesSent[k]),
           static_cast<long long>(counters.calls[k]),
           collectiveKindName(static_cast<CollectiveKind>(k)),
           static_cast<long long>(mine ? predicted : 0), mine ? 1 : 0);
  }
}

/// The element counts each collective is checked with: around the group
/// size, odd, and large. For the collectives that take a count per rank,
/// blocksFor keeps the largest case at 1 << 20 elements in all, lest it
/// take minutes with 8 ranks on 2 cores.
std::vector<int64_t> countsFor(int g) {
  return {0, 1, g - 1, 7, 1000, 1 << 20};
}
std::vector<int64_t> blocksFor(int g) {
  return {0, 1, g - 1, 7, 1000, (1 << 20) / g};
}

template <typename T>
std::string caseName(const char *op, int64_t count, AxisGroup group) {
  return std::string(op) + " " + dtypeName(dtypeOf<T>()) + " x" +
         std::to_string(count) + " over " + groupName(group);
}

//===----------------------------------------------------------------------===//
// The collectives
//===----------------------------------------------------------------------===//

template <typename T> void checkAllReduce(AxisGroup group) {
  int g = sizeOf(group), r = rankIn(group);
  std::vector<int> members = membersOf(group);
  for (int64_t count : countsFor(g)) {
    std::string what = caseName<T>("all_reduce", count, group);
    std::vector<T> data = inputOf<T>(worldRank(), count);
    std::vector<T> expected(count, T(0));
    for (int q = 0; q < g; ++q) {
      int member = members[q];
      for (int64_t i = 0; i < count; ++i)
        expected[i] += value<T>(member, i);
    }
    resetCommCounters();
    allReduceSum(data.data(), count, dtypeOf<T>(), group);
    expectEqual(data, expected, what);
    expectCounted(CollectiveKind::AllReduce,
                  allReduceBytesSent(count, sizeof(T), g, r), what);
  }
}

uint64_t fnv1a(const void *data, size_t bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i)
    hash =
        (hash ^ static_cast<const unsigned char *>(data)[i]) * 1099511628211ull;
  return hash;
}

/// Inexact inputs, whose sum depends on the order of addition: every rank of
/// the group must still end with the same bits (compared by hash, gathered
/// over the group), close to the sum in double.
template <typename T> void checkAllReduceBitwise(AxisGroup group) {
  int g = sizeOf(group);
  std::vector<int> members = membersOf(group);
  for (int64_t count : {int64_t(7), int64_t(1000), int64_t(1) << 20}) {
    std::string what = caseName<T>("all_reduce (inexact)", count, group);
    auto inexact = [](int rank, int64_t i) {
      return 0.1 * (rank + 1) + 1.0 / (i % 97 + 3);
    };
    std::vector<T> data(count);
    for (int64_t i = 0; i < count; ++i)
      data[i] = static_cast<T>(inexact(worldRank(), i));
    allReduceSum(data.data(), count, dtypeOf<T>(), group);
    for (int64_t i = 0; i < count; ++i) {
      double sum = 0;
      for (int q = 0; q < g; ++q)
        sum += static_cast<T>(inexact(members[q], i));
      if (std::fabs(data[i] - sum) > 1e-5 * std::fabs(sum)) {
        fail("%s: element %lld is %g, expected about %g", what.c_str(),
             static_cast<long long>(i), static_cast<double>(data[i]), sum);
        break;
      }
    }
    uint64_t hash = fnv1a(data.data(), data.size() * sizeof(T));
    std::vector<uint64_t> hashes(g);
    allGather(&hash, hashes.data(), sizeof(hash), group);
    for (int q = 0; q < g; ++q)
      if (hashes[q] != hash)
        fail("%s: the result differs from group rank %d's", what.c_str(), q);
  }
}

template <typename T> void checkAllGather(AxisGroup group) {
  int g = sizeOf(group), r = rankIn(group);
  std::vector<int> members = membersOf(group);
  for (int64_t count : blocksFor(g)) {
    std::string what = caseName<T>("all_gather", count, group);
    std::vector<T> in = inputOf<T>(worldRank(), count);
    std::vector<T> out(g * count), expected;
    for (int q = 0; q < g; ++q) {
      std::vector<T> block = inputOf<T>(members[q], count);
      expected.insert(expected.end(), block.begin(), block.end());
    }
    resetCommCounters();
    allGather(in.data(), out.data(), count * sizeof(T), group);
    expectEqual(out, expected, what);
    expectCounted(CollectiveKind::AllGather,
                  allGatherBytesSent(count * sizeof(T), g, r), what);
  }
}

template <typename T> void checkReduceScatter(AxisGroup group) {
  int g = sizeOf(group), r = rankIn(group);
  std::vector<int> members = membersOf(group);
  for (int64_t count : blocksFor(g)) {
    std::string what = caseName<T>("reduce_scatter", count, group);
    std::vector<T> in = inputOf<T>(worldRank(), g * count);
    std::vector<T> out(count), expected(count, T(0));
    for (int q = 0; q < g; ++q) {
      int member = members[q];
      for (int64_t i = 0; i < count; ++i)
        expected[i] += value<T>(member, r * count + i);
    }
    resetCommCounters();
    reduceScatterSum(in.data(), out.data(), count, dtypeOf<T>(), group);
    expectEqual(out, expected, what);
    expectCounted(CollectiveKind::ReduceScatter,
                  reduceScatterBytesSent(count, sizeof(T), g, r), what);
  }
}

template <typename T> void checkBroadcast(AxisGroup group) {
  int g = sizeOf(group), r = rankIn(group);
  std::vector<int> members = membersOf(group);
  for (int64_t count : countsFor(g))
    for (int root = 0; root < g; ++root) {
      std::string what = caseName<T>("broadcast", count, group) + " from " +
                         std::to_string(root);
      std::vector<T> data = r == root ? inputOf<T>(worldRank(), count)
                                      : std::vector<T>(count, 99);
      std::vector<T> expected = inputOf<T>(members[root], count);
      resetCommCounters();
      broadcast(data.data(), count * sizeof(T), root, group);
      expectEqual(data, expected, what);
      expectCounted(CollectiveKind::Broadcast,
                    broadcastBytesSent(count * sizeof(T), root, g, r), what);
    }
}

template <typename T> void checkAllToAll(AxisGroup group) {
  int g = sizeOf(group), r = rankIn(group);
  std::vector<int> members = membersOf(group);
  for (int64_t count : blocksFor(g)) {
    std::string what = caseName<T>("all_to_all", count, group);
    // Block j of rank q's input is elements [j * count, (j + 1) * count) of
    // its inputOf, so out block j is those of member j's for block r.
    std::vector<T> in = inputOf<T>(worldRank(), g * count);
    std::vector<T> out(g * count), expected(g * count);
    for (int q = 0; q < g; ++q) {
      int member = members[q];
      for (int64_t i = 0; i < count; ++i)
        expected[q * count + i] = value<T>(member, r * count + i);
    }
    resetCommCounters();
    allToAll(in.data(), out.data(), count * sizeof(T), group);
    expectEqual(out, expected, what);
    expectCounted(CollectiveKind::AllToAll,
                  allToAllBytesSent(count * sizeof(T), g, r), what);
  }
}

/// A shift around the ring, an open chain (the last rank sends nothing, the
/// first receives nothing) and a copy to oneself.
template <typename T> void checkSendRecv(AxisGroup group) {
  int g = sizeOf(group), r = rankIn(group);
  std::vector<int> members = membersOf(group);
  enum Pattern { Shift, Chain, Self };
  for (int64_t count : countsFor(g))
    for (Pattern pattern : {Shift, Chain, Self}) {
      int sendTo = (r + 1) % g, recvFrom = (r + g - 1) % g;
      const char *patternName = "shift";
      if (pattern == Chain) {
        sendTo = r + 1 < g ? r + 1 : kNoPeer;
        recvFrom = r > 0 ? r - 1 : kNoPeer;
        patternName = "chain";
      } else if (pattern == Self) {
        sendTo = recvFrom = r;
        patternName = "self";
      }
      std::string what =
          caseName<T>("send_recv", count, group) + " " + patternName;
      std::vector<T> in = inputOf<T>(worldRank(), count);
      std::vector<T> out(count, 99);
      std::vector<T> expected =
          recvFrom == kNoPeer ? out : inputOf<T>(members[recvFrom], count);
      resetCommCounters();
      sendRecv(in.data(), out.data(), count * sizeof(T), sendTo, recvFrom,
               group);
      expectEqual(out, expected, what);
      expectCounted(CollectiveKind::SendRecv,
                    sendRecvBytesSent(count * sizeof(T), sendTo, g, r), what);
    }
}

/// Several all-reduces in flight at once, over every group, then a blocking
/// all-gather behind them (which waits for its turn), then the all-reduces
/// waited for in reverse order.
void checkAsync(const std::vector<AxisGroup> &groups) {
  std::vector<std::vector<float>> buffers, expected;
  std::vector<CollectiveHandle> handles;
  int64_t predicted = 0;
  resetCommCounters();
  for (AxisGroup group : groups)
    for (int64_t count : {int64_t(1000), int64_t(1) << 18}) {
      // Moving a vector keeps its buffer: the pointers handed out stay valid.
      buffers.push_back(inputOf<float>(worldRank(), count));
      expected.emplace_back(count, 0.0f);
      for (int member : membersOf(group))
        for (int64_t i = 0; i < count; ++i)
          expected.back()[i] += value<float>(member, i);
      handles.push_back(
          startAllReduceSum(buffers.back().data(), count, DType::F32, group));
      predicted += allReduceBytesSent(count, sizeof(float), sizeOf(group),
                                      rankIn(group));
    }
  int world = sizeOf(worldGroup());
  int64_t mine = worldRank();
  std::vector<int64_t> ranks(world);
  allGather(&mine, ranks.data(), sizeof(mine), worldGroup());
  for (int q = 0; q < world; ++q)
    if (ranks[q] != q)
      fail("all_gather behind async all_reduces: block %d is %lld", q,
           static_cast<long long>(ranks[q]));
  predicted += allGatherBytesSent(sizeof(mine), world, rankIn(worldGroup()));
  for (size_t i = handles.size(); i-- > 0;) {
    waitCollective(handles[i]);
    expectEqual(buffers[i], expected[i],
                "async all_reduce #" + std::to_string(i));
  }
  const CommCounters &counters = commCounters();
  int allReduce = static_cast<int>(CollectiveKind::AllReduce);
  int gather = static_cast<int>(CollectiveKind::AllGather);
  int64_t counted = counters.bytesSent[allReduce] + counters.bytesSent[gather];
  if (counted != predicted ||
      counters.calls[allReduce] != static_cast<int64_t>(handles.size()) ||
      counters.calls[gather] != 1)
    fail("async: counted %lld bytes in %lld all_reduce and %lld all_gather "
         "calls, predicted %lld in %zu and 1",
         static_cast<long long>(counted),
         static_cast<long long>(counters.calls[allReduce]),
         static_cast<long long>(counters.calls[gather]),
         static_cast<long long>(predicted), handles.size());
}

/// A gradient bucket of small and large tensors, summed by
/// allReduceBucket (blocking) and by startAllReduceBucket and
/// finishAllReduceBucket: every sum right, whether a tensor's sum lands in
/// its own buffer or another, in the all-reduces and bytes that
/// forEachBucketSegment and bucketAllReduceBytesSent predict (here a small
/// tensor alone, a large one, a packed run, a large one, a packed run),
/// its packed runs in a staging buffer of the size bucketStagingBytes
/// predicts.
void checkBucket(AxisGroup group, bool started) {
  const std::vector<int64_t> counts = {10, 70000, 300, 5, 100000, 1000, 2000};
  int n = static_cast<int>(counts.size());
  std::vector<std::vector<float>> inputs, outputs, expected;
  std::vector<const void *> in;
  std::vector<void *> out;
  for (int i = 0; i < n; ++i) {
    inputs.push_back(inputOf<float>(worldRank(), counts[i]));
    expected.emplace_back(counts[i], 0.0f);
    for (int member : membersOf(group))
      for (int64_t e = 0; e < counts[i]; ++e)
        expected.back()[e] += value<float>(member, e);
    // Odd tensors are summed into a buffer of their own.
    outputs.emplace_back(i % 2 ? counts[i] : 0, -1.0f);
    in.push_back(inputs.back().data());
    out.push_back(i % 2 ? outputs.back().data() : inputs.back().data());
  }
  resetCommCounters();
  CollectiveBuffer staging;
  if (started)
    finishAllReduceBucket(startAllReduceBucket(
        in.data(), out.data(), counts.data(), n, DType::F32, group, &staging));
  else
    allReduceBucket(in.data(), out.data(), counts.data(), n, DType::F32, group,
                    &staging);
  std::string what =
      caseName<float>(started ? "started bucket" : "bucket", n, group);
  for (int i = 0; i < n; ++i)
    expectEqual(i % 2 ? outputs[i] : inputs[i], expected[i],
                what + " tensor " + std::to_string(i));
  int64_t segments = 0;
  forEachBucketSegment(counts.data(), n, sizeof(float),
                       [&](int, int) { ++segments; });
  const CommCounters &counters = commCounters();
  int k = static_cast<int>(CollectiveKind::AllReduce);
  int64_t predicted = bucketAllReduceBytesSent(counts.data(), n, sizeof(float),
                                               sizeOf(group), rankIn(group));
  if (segments != 5 || counters.bytesSent[k] != predicted ||
      counters.calls[k] != segments)
    fail("%s: counted %lld bytes in %lld all_reduce calls, predicted %lld in "
         "%lld (5 segments)",
         what.c_str(), static_cast<long long>(counters.bytesSent[k]),
         static_cast<long long>(counters.calls[k]),
         static_cast<long long>(predicted), static_cast<long long>(segments));
  // The runs of 300 and 5, and of 1000 and 2000 (10 is alone).
  int64_t packed = (300 + 5 + 1000 + 2000) * int64_t(sizeof(float));
  if (staging.bytes() != packed ||
      bucketStagingBytes(counts.data(), n, sizeof(float)) != packed)
    fail("%s: staging of %lld bytes, predicted %lld, expected %lld",
         what.c_str(), static_cast<long long>(staging.bytes()),
         static_cast<long long>(
             bucketStagingBytes(counts.data(), n, sizeof(float))),
         static_cast<long long>(packed));
}

void checkMesh(const std::vector<AxisGroup> &groups) {
  for (size_t axis = 0; axis < axisSizes.size(); ++axis)
    if (meshCoord(axis) != myCoords[axis])
      fail("coordinate %zu is %d, expected %d", axis, meshCoord(axis),
           myCoords[axis]);
  for (AxisGroup group : groups)
    if (groupSize(group) != sizeOf(group) || groupRank(group) != rankIn(group))
      fail("group %s: rank %d of %d, expected %d of %d",
           groupName(group).c_str(), groupRank(group), groupSize(group),
           rankIn(group), sizeOf(group));
}

/// Parses "a=2,b=4" into axisNames and axisSizes.
bool parseMesh(const std::string &text) {
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(begin, end - begin);
    size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0)
      return false;
    char *rest = nullptr;
    long size = std::strtol(item.c_str() + equals + 1, &rest, 10);
    if (*rest || size < 1)
      return false;
    axisNames.push_back(item.substr(0, equals));
    axisSizes.push_back(size);
    begin = end + 1;
  }
  return axisSizes.size() <= kMaxMeshAxes;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 3 && std::strcmp(argv[1], "--mesh") == 0) {
    if (!parseMesh(argv[2])) {
      std::fprintf(stderr, "%s: error: bad mesh '%s'\n", argv[0], argv[2]);
      return 1;
    }
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--mesh NAME=SIZE,...]\n", argv[0]);
    return 1;
  }
  std::vector<const char *> names;
  for (const std::string &name : axisNames)
    names.push_back(name.c_str());
  MeshSpec spec{static_cast<int>(axisSizes.size()), names.data(),
                axisSizes.data()};
  initMesh(spec, argc, argv);
  myCoords.assign(axisSizes.size(), 0);
  for (int axis = static_cast<int>(axisSizes.size()) - 1, rest = worldRank();
       axis >= 0; --axis) {
    myCoords[axis] = rest % axisSizes[axis];
    rest /= axisSizes[axis];
  }

  std::vector<AxisGroup> groups = allGroups();
  checkMesh(groups);
  report("mesh coordinates and group ranks");
  for (AxisGroup group : groups) {
    std::string over = " over " + groupName(group);
    checkAllReduce<float>(group);
    checkAllReduce<double>(group);
    checkAllReduce<int64_t>(group);
    report("all_reduce" + over);
    checkAllReduceBitwise<float>(group);
    checkAllReduceBitwise<double>(group);
    report("all_reduce bitwise identical" + over);
    checkAllGather<float>(group);
    checkAllGather<double>(group);
    checkAllGather<int64_t>(group);
    report("all_gather" + over);
    checkReduceScatter<float>(group);
    checkReduceScatter<double>(group);
    checkReduceScatter<int64_t>(group);
    report("reduce_scatter" + over);
    checkBroadcast<float>(group);
    checkBroadcast<double>(group);
    checkBroadcast<int64_t>(group);
    report("broadcast" + over);
    checkAllToAll<float>(group);
    checkAllToAll<double>(group);
    checkAllToAll<int64_t>(group);
    report("all_to_all" + over);
    checkSendRecv<float>(group);
    checkSendRecv<double>(group);
    checkSendRecv<int64_t>(group);
    report("send_recv" + over);
  }
  for (AxisGroup group : groups) {
    checkBucket(group, false);
    checkBucket(group, true);
  }
  report("gradient buckets over every group");
  checkAsync(groups);
  report("async all_reduce over every group at once");

  int64_t failures = totalFailures;
  allReduceSum(&failures, 1, DType::I64, worldGroup());
  finalizeMesh();
  return failures ? 1 : 0;
}
