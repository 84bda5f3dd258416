//===- link_monitor.cpp - the link between two ranks, sampled over time ---===//
//
// Ping-pong latency (8 bytes) and bandwidth (1 MiB) between ranks 0 and 1,
// sampled every --interval seconds for --seconds, one line per sample:
// seconds since the start, latency in us, bandwidth in GB/s. On a virtual
// machine the link between two cores is a property of where the host runs
// the vCPUs at the moment, and can change for tens of seconds at a time;
// this shows when and for how long (bench/README.md).
//
//   mpirun -np 2 cleave-link-monitor [--seconds 120] [--interval 0.5]
//
//===----------------------------------------------------------------------===//

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

/// Half a round trip of `bytes` between ranks 0 and 1, averaged over
/// `trips`, in seconds.
double halfRoundTrip(int rank, std::vector<char> &buffer, int bytes,
                     int trips) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < trips; ++i) {
    if (rank == 0) {
      MPI_Send(buffer.data(), bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buffer.data(), bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - start) / trips / 2;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double seconds = 120, interval = 0.5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0)
      seconds = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--interval") == 0)
      interval = std::atof(argv[i + 1]);
  }
  if (size != 2 || !(seconds > 0) || !(interval > 0)) {
    if (rank == 0)
      std::fprintf(stderr, "cleave-link-monitor: error: run 2 ranks with "
                           "positive --seconds and --interval\n");
    MPI_Finalize();
    return 1;
  }
  constexpr int kBig = 1 << 20;
  std::vector<char> buffer(kBig, 1);
  if (rank == 0)
    std::printf("# seconds latency_us bandwidth_gbs\n");
  double begin = MPI_Wtime();
  for (int sample = 0; sample * interval < seconds; ++sample) {
    // Rank 0's clock says when: both ranks sample together.
    double at = begin + sample * interval;
    MPI_Bcast(&at, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double wait = at - MPI_Wtime();
    if (wait > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    double latency = halfRoundTrip(rank, buffer, 8, 20000);
    double bandwidth = kBig / halfRoundTrip(rank, buffer, kBig, 20);
    if (rank == 0) {
      std::printf("%.1f %.3f %.2f\n", MPI_Wtime() - begin, latency * 1e6,
                  bandwidth / 1e9);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
