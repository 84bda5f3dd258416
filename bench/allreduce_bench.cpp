//===- allreduce_bench.cpp - ring all-reduce vs MPI_Allreduce -------------===//
//
// Bus bandwidth of the runtime's allReduceSum (runtime/Collectives.h) next
// to MPI_Allreduce on the same ranks, float32 sums of 1 KiB to 64 MiB, as a
// markdown table. busbw = 2 (g - 1) / g * bytes / time, as nccl-tests
// define it: the bandwidth each link of a ring would need. See
// bench/README.md for how to build and run it, and the numbers measured.
//
//   mpirun -np 2 allreduce_bench [--ranks 2] [--rounds 9]
//
//===----------------------------------------------------------------------===//

#include "runtime/Collectives.h"
#include "runtime/Mesh.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace cleave::rt;

namespace {

/// Seconds per call of `op` over `iters` calls started together on all
/// ranks, as the slowest rank saw it.
template <typename Op> double secondsPerCall(Op op, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i)
    op();
  double mine =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() /
      iters;
  double slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int64_t ranks = 2;
  int rounds = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ranks") == 0)
      ranks = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--rounds") == 0)
      rounds = std::atoi(argv[i + 1]);
  }
  const char *axisName = "x";
  initMesh(MeshSpec{1, &axisName, &ranks}, argc, argv);
  AxisGroup all{{0}, 1};
  int g = groupSize(all);

  if (isMeshRoot()) {
    std::printf("all-reduce, float32 sum, %d ranks; busbw = 2(g-1)/g * "
                "bytes / time\n\n",
                g);
    std::printf("| bytes | ours (us) | ours busbw (GB/s) | MPI_Allreduce "
                "(us) | MPI busbw (GB/s) | ours / MPI |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|\n");
  }
  for (int64_t bytes = 1 << 10; bytes <= int64_t(64) << 20; bytes *= 4) {
    int64_t count = bytes / sizeof(float);
    std::vector<float> data(count, 0.0f);
    // About 256 MiB reduced per round, so that small sizes are not all
    // latency noise and large ones do not take minutes.
    int iters = static_cast<int>(
        std::clamp<int64_t>((int64_t(256) << 20) / bytes, 4, 2000));
    auto ours = [&] { allReduceSum(data.data(), count, DType::F32, all); };
    // Called from this thread while the communication thread is idle (every
    // allReduceSum has returned), which MPI_THREAD_SERIALIZED allows.
    auto mpi = [&] {
      MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(count),
                    MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    ours(); // warm-up: page faults, MPI's connection set-up
    mpi();
    // Alternating rounds, so that both see the same machine load.
    std::vector<double> oursTimes, mpiTimes;
    for (int round = 0; round < rounds; ++round) {
      oursTimes.push_back(secondsPerCall(ours, iters));
      mpiTimes.push_back(secondsPerCall(mpi, iters));
    }
    double oursTime = median(oursTimes);
    double mpiTime = median(mpiTimes);
    double busBytes = 2.0 * (g - 1) / g * bytes;
    if (isMeshRoot())
      std::printf("| %lld | %.1f | %.2f | %.1f | %.2f | %.2f |\n",
                  static_cast<long long>(bytes), oursTime * 1e6,
                  busBytes / oursTime / 1e9, mpiTime * 1e6,
                  busBytes / mpiTime / 1e9, mpiTime / oursTime);
  }
  finalizeMesh();
  return 0;
}
