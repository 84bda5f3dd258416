//===- CalibrateProbe.cpp - what `cleave calibrate` measures --------------===//
//
// Runs under mpirun with the ranks and threads a training program would
// have, and measures what the cost model needs for the cpu target: the
// runtime's GEMM (the kernel programs call) in three shape classes and
// by the smallest dimension of a linear layer's products,
// memory, L2 and last-level cache bandwidth, the cost of an op and of
// handing work to another thread, and the rates of the kernels the
// roofline misses (planner/Cluster.h, Kernel), all ranks at once (they
// share the machine as a run does), point-to-point latency and bandwidth
// between ranks 0 and 1 over MPI, and the runtime's own all-reduce,
// reduce-scatter and all-gather as a program calls them
// (runtime/CollectiveKernels.h: an all-reduce bucket on the communication
// thread) at buffers of 4 KiB to 64 MiB, on groups of each size a mesh of
// these ranks has, and how much of a started all-reduce's time GEMMs on
// the ranks hide. The link's measurements run in three rounds spread over
// the probe, and each keeps its fastest round. Rank 0 prints one JSON
// object on stdout; numbers are the slowest rank's.
//
//   mpirun -np 2 cleave-calibrate-probe [--ranks 2] [--seconds S]
//   mpirun -np 2 cleave-calibrate-probe --library-memory
//   cleave-calibrate-probe --blas-packing | --onednn-primitives THREADS
//
// --library-memory measures only the memory MPI keeps for itself
// (LibraryMemoryProbe.h) and prints {"library_bytes": N}; --blas-packing
// and --onednn-primitives run without MPI (BlasPackingProbe.h,
// OneDnnPrimitiveProbe.h).
//
//===----------------------------------------------------------------------===//

#include "BlasPackingProbe.h"
#include "LibraryMemoryProbe.h"
#include "OneDnnPrimitiveProbe.h"

#include "runtime/CollectiveKernels.h"
#include "runtime/ConvolutionPath.h"
#include "runtime/Kernels.h"
#include "runtime/Mesh.h"
#include "runtime/OneDnnConvolution.h"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// printf into a string (the JSON pieces rank 0 prints).
template <typename... Args>
std::string format(const char *pattern, Args... args) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, args...);
  return text;
}

/// Runs `op` for about `seconds` on every rank at once; returns the
/// slowest rank's seconds per call. Calls go in batches of at least a
/// millisecond, so that the check of the clock (a broadcast from rank 0,
/// which keeps the ranks in step) costs nothing against a short call.
template <typename Op> double secondsPerCall(Op op, double seconds) {
  op(); // warm-up: page faults, OpenBLAS buffers
  // Every rank runs the same calls (a ping-pong's sends must meet their
  // receives): rank 0 times the doubling batches and says when to stop.
  int64_t batch = 1;
  for (;; batch *= 2) {
    double start = now();
    for (int64_t i = 0; i < batch; ++i)
      op();
    int enough = now() - start >= 1e-3 || batch >= (int64_t{1} << 20);
    MPI_Bcast(&enough, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (enough)
      break;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double start = now();
  int64_t calls = 0;
  int keepGoing = 1;
  while (keepGoing) {
    for (int64_t i = 0; i < batch; ++i)
      op();
    calls += batch;
    int stop = now() - start >= seconds;
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    keepGoing = !stop;
  }
  double mine = (now() - start) / calls, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

double gemmGflops(int64_t m, int64_t n, int64_t k, double seconds,
                  bool transA = false, bool transB = false) {
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  double t = secondsPerCall(
      [&] {
        cleave::rt::gemm(transA, transB, m, n, k, 1.0f, a.data(), b.data(),
                         0.0f, c.data());
      },
      seconds);
  return 2.0 * m * n * k / t / 1e9;
}

/// GEMM GFLOP/s by the product's smallest dimension d and its other two
/// (Cluster::gemmEfficiency), as a linear layer of width x width runs them
/// on d rows: with d rows of the result, its forward product (X W^T: the
/// runtime's skinny kernel where that pays) and input gradient (dY W), by
/// their mean time per flop; summing over d, its weight gradient (dY^T X).
/// Layers of 256 (a weight in the L2 cache) and 1024 (one read from
/// memory). A JSON array of [width, d, rows GFLOP/s, summed GFLOP/s].
std::string gemmByDimension(double seconds) {
  std::string out;
  for (int64_t width : {256, 1024})
    for (int64_t d : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}) {
      double forward = gemmGflops(d, width, width, seconds, false, true);
      double inputGrad = gemmGflops(d, width, width, seconds);
      double weightGrad = gemmGflops(width, width, d, seconds, true, false);
      double rows = 2 / (1 / forward + 1 / inputGrad);
      char point[128];
      std::snprintf(point, sizeof point, "%s[%lld, %lld, %.3f, %.3f]",
                    out.empty() ? "" : ", ", static_cast<long long>(width),
                    static_cast<long long>(d), rows, weightGrad);
      out += point;
    }
  return "[" + out + "]";
}

/// A 3x3 convolution with padding 1 the probe times oneDNN's direct
/// kernels on: `samples` images of `size` x `size` and `channels` channels
/// in and out; its output rows per call (samples x positions) are what the
/// rate depends on most: a call reorders the weight, which the rows share.
struct ConvGeometry {
  int64_t samples, channels, size;
  int64_t rows() const { return samples * size * size; }
};

/// 2048 rows (ResNet's middle stages), then 256 and 64 (its late stages at
/// 32x32: 4x4 and 2x2 images).
constexpr ConvGeometry kConvGeometries[] = {
    {8, 64, 16}, {16, 128, 4}, {16, 256, 2}};

/// oneDNN's direct convolutions (the cpu runtime's path for most dense
/// convolutions: runtime/ConvolutionPath.h) per pass and geometry, as
/// Cluster::convEfficiency counts them: GFLOP/s of the multiply-adds the
/// kernels do (rt::directConvWork), on oneDNN's blocked layouts whatever
/// the rule picks for the geometry (the rate is the kernels'). The cost
/// model reads them over the 1024^3 GEMM's rate (`large`), so they are
/// timed against that GEMM: both in turn in short rounds, each pass's rate
/// over the round's GEMM, the median round's ratio times `large`. Timed
/// apart, a load that came or went between them made the ratio anything
/// (5 to 6 with another build running, where oneDNN runs at about the
/// GEMM's rate). The weight gradient reuses the output gradient's reorder
/// of the call before, as it does after the input gradient in a program
/// (oneDnnConvGradWeight's afterGradInput).
/// A JSON object {"forward": ..., "input_grad": ..., "weight_grad": ...}
/// for the first geometry, in `byRows` one {"ROWS": {...}, ...} of every
/// geometry's, and in `winograd` the first geometry's on oneDNN's Winograd
/// kernels (counted on the direct kernels' multiply-adds), which the
/// runtime picks for it (rt::winogradApplies).
std::string convGflops(double seconds, double large, std::string &byRows,
                       std::string &winograd) {
  using cleave::rt::OneDnnLayout;
  using cleave::rt::Shape;
  constexpr int kRounds = 5;
  constexpr int kGeometries = std::size(kConvGeometries);
  seconds /= 4 * kRounds * (kGeometries + 1);
  std::string first;
  byRows.clear();
  auto rates = [&](const ConvGeometry &g, OneDnnLayout layout) {
    const Shape xShape{g.samples, g.channels, g.size, g.size},
        wShape{g.channels, g.channels, 3, 3};
    const Shape &yShape = xShape;
    const int64_t unit[] = {1, 1}, pads[] = {1, 1, 1, 1};
    std::vector<float> x(xShape.numElements(), 0.5f),
        w(wShape.numElements(), 0.01f), y(yShape.numElements(), 0.25f),
        dx(x.size()), dw(w.size());
    cleave::body::Window3 window(xShape, yShape, wShape.dims + 2, unit, pads,
                                 unit);
    auto gflops = [&](cleave::rt::ConvPass pass, auto call) {
      double flops = 2.0 * yShape.numElements() * g.channels * 9 *
                     cleave::rt::directConvWork(pass, wShape,
                                                OneDnnLayout::Blocked, window);
      return flops / secondsPerCall(call, seconds) / 1e9;
    };
    std::vector<double> forward, inputGrad, weightGrad;
    for (int round = 0; round < kRounds; ++round) {
      double gemm = gemmGflops(1024, 1024, 1024, seconds);
      forward.push_back(gflops(cleave::rt::ConvPass::Forward,
                               [&] {
                                 cleave::rt::oneDnnConv(
                                     x.data(), xShape, w.data(), wShape,
                                     nullptr, unit, pads, unit, 1, y.data(),
                                     yShape, layout);
                               }) /
                        gemm);
      inputGrad.push_back(gflops(cleave::rt::ConvPass::GradInput,
                                 [&] {
                                   cleave::rt::oneDnnConvGradInput(
                                       y.data(), yShape, w.data(), wShape, unit,
                                       pads, unit, 1, dx.data(), xShape,
                                       layout);
                                 }) /
                          gemm);
      weightGrad.push_back(gflops(cleave::rt::ConvPass::GradWeight,
                                  [&] {
                                    cleave::rt::oneDnnConvGradWeight(
                                        y.data(), yShape, x.data(), xShape,
                                        unit, pads, unit, 1, dw.data(), wShape,
                                        layout, /*afterGradInput=*/true);
                                  }) /
                           gemm);
    }
    auto median = [&](std::vector<double> &ratios) {
      std::sort(ratios.begin(), ratios.end());
      return ratios[kRounds / 2] * large;
    };
    char text[160];
    std::snprintf(text, sizeof text,
                  "{\"forward\": %.3f, \"input_grad\": %.3f, "
                  "\"weight_grad\": %.3f}",
                  median(forward), median(inputGrad), median(weightGrad));
    return std::string(text);
  };
  for (const ConvGeometry &g : kConvGeometries) {
    std::string text = rates(g, OneDnnLayout::Blocked);
    if (first.empty())
      first = text;
    byRows += (byRows.empty() ? "\"" : ", \"") + std::to_string(g.rows()) +
              "\": " + text;
  }
  byRows = "{" + byRows + "}";
  winograd = rates(kConvGeometries[0], OneDnnLayout::Winograd);
  return first;
}

/// STREAM's triad a = b + s c on arrays of n floats, on the OpenMP
/// threads: GB/s (reads and writes counted, 1e9 bytes).
double triadGBs(int64_t n, double seconds) {
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double t = secondsPerCall(
      [&] {
        float *pa = a.data();
        const float *pb = b.data(), *pc = c.data();
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i)
          pa[i] = pb[i] + 0.5f * pc[i];
      },
      seconds);
  return 3.0 * n * sizeof(float) / t / 1e9;
}

/// The floor of one op of a step, in seconds: the mean time of kernels on
/// 8x8 tensors (a GEMM, a sum over rows, a softmax, a LayerNorm), whose
/// arithmetic takes nanoseconds; the rest is the call, its checks and the
/// start of its loops.
double opOverhead(double seconds) {
  const cleave::rt::Shape shape{8, 8};
  std::vector<float> a(64, 0.5f), b(64, 0.25f), c(64), row(8), scale(8, 1),
      bias(8, 0), mean(8), invStd(8);
  const int64_t axes[] = {1};
  double total =
      secondsPerCall(
          [&] {
            cleave::rt::gemm(false, false, 8, 8, 8, 1.0f, a.data(), b.data(),
                             0.0f, c.data());
          },
          seconds / 4) +
      secondsPerCall(
          [&] {
            cleave::rt::reduce(cleave::rt::ReduceKind::Sum, a.data(), shape,
                               axes, 1, row.data());
          },
          seconds / 4) +
      secondsPerCall(
          [&] { cleave::rt::softmax(a.data(), shape, 1, false, c.data()); },
          seconds / 4) +
      secondsPerCall(
          [&] {
            cleave::rt::layerNorm(a.data(), shape, 1, scale.data(),
                                  bias.data(), 1e-5f, c.data(), mean.data(),
                                  invStd.data());
          },
          seconds / 4);
  return total / 4;
}

/// Per-row and per-element nanoseconds of a row kernel, from its time on
/// the same elements as short rows and as long ones: t = rows * row +
/// elements * element, solved for the two (the op overhead taken off).
/// kernel(rows, length) runs it on rows of that length.
struct RowRate {
  double rowNs = 0, elementNs = 0;
};

template <typename Kernel>
RowRate rowRate(Kernel kernel, double overhead, double seconds,
                int64_t kElements = 16384, int64_t kShort = 8,
                int64_t kLong = 512) {
  double shortRows = secondsPerCall(
      [&] { kernel(kElements / kShort, kShort); }, seconds);
  double longRows =
      secondsPerCall([&] { kernel(kElements / kLong, kLong); }, seconds);
  double perRow = std::max(0.0, (shortRows - longRows) /
                                    (kElements / kShort - kElements / kLong));
  double perElement =
      std::max(0.0, (longRows - overhead - perRow * (kElements / kLong)) /
                        kElements);
  return {perRow * 1e9, perElement * 1e9};
}

/// A convolution pass the runtime runs as im2col + GEMMs, per GEMM call and
/// per element of the im2col matrix (planner/OpCost.h, Im2colConv): on one
/// input and one output channel, 3x3 with padding 1 (the product a
/// matrix-vector one, so that the copies and calls are what is timed), the
/// same 112896 im2col elements as 16 samples of 28x28 and as 49 of 16x16
/// (a GEMM per sample either way: rt::samplesPerGemm).
/// pass(shape of x and y) runs it.
template <typename Pass>
RowRate im2colRate(Pass pass, double overhead, double seconds) {
  using cleave::rt::Shape;
  auto secondsOn = [&](int64_t samples, int64_t side) {
    Shape shape{samples, 1, side, side};
    return secondsPerCall([&] { pass(shape); }, seconds);
  };
  const int64_t fewCalls = 16, manyCalls = 49, taps = 9;
  double few = secondsOn(fewCalls, 28), many = secondsOn(manyCalls, 16);
  double perCall = std::max(0.0, (many - few) / (manyCalls - fewCalls));
  double elements = double(fewCalls * 28 * 28 * taps);
  double perElement =
      std::max(0.0, (few - overhead - perCall * fewCalls) / elements);
  return {perCall * 1e9, perElement * 1e9};
}

/// A kernel's rates under its name in the cluster file's device.kernels.
struct NamedRate {
  const char *name;
  RowRate rate;
};

/// The kernels whose time the roofline misses on a cpu (planner/Cluster.h,
/// Kernel): softmax and LayerNorm forward and backward by row and element,
/// dropout by element, attention's batched products by matrix (8x8x8),
/// pools and BatchNorm forward and backward by plane and element, im2col
/// convolutions by GEMM call and im2col element (im2colRate), by the names
/// of the cluster file's device.kernels.
std::vector<NamedRate> kernelRates(double overhead, double seconds) {
  const int64_t n = 16384;
  std::vector<float> x(n), dy(n), y(n), dx(n), scale(512, 1.0f),
      bias(512, 0.0f), dScale(512), dBias(512), mean(n), invStd(n);
  std::unique_ptr<bool[]> mask(new bool[n]);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 97) * 0.01f - 0.5f;
    dy[i] = static_cast<float>(i % 89) * 0.01f - 0.4f;
  }
  seconds /= 10;
  using cleave::rt::Shape;
  RowRate rates[4] = {
      rowRate([&](int64_t rows,
                  int64_t d) { cleave::rt::softmax(x.data(), Shape{rows, d}, 1,
                                                   false, y.data()); },
              overhead, seconds),
      rowRate([&](int64_t rows, int64_t d) {
            cleave::rt::softmaxGrad(y.data(), dy.data(), Shape{rows, d}, 1,
                                    false, dx.data());
          },
              overhead, seconds),
      rowRate([&](int64_t rows, int64_t d) {
            cleave::rt::layerNorm(x.data(), Shape{rows, d}, 1, scale.data(),
                                  bias.data(), 1e-5f, y.data(), mean.data(),
                                  invStd.data());
          },
              overhead, seconds),
      rowRate([&](int64_t rows, int64_t d) {
            cleave::rt::layerNormGrad(dy.data(), x.data(), Shape{rows, d}, 1,
                                      scale.data(), mean.data(), invStd.data(),
                                      dx.data(), dScale.data(), dBias.data());
          },
              overhead, seconds)};
  // Pools and BatchNorm by plane, on 62720 elements as 4x4 planes and as
  // 28x28 ones: pools with 2x2 windows, stride 2 (as many window taps as
  // inputs), BatchNorm in training (statistics, then the output) over 8
  // channels. Rows of 28 (and 14 after a pool), not 32: a CNN's planes are
  // seldom a multiple of the 16 floats of a vector, and MaxPool on 28x28
  // takes 1.6x as long per element as on 32x32 (0.50 against 0.31 ns).
  const int64_t planeElements = 62720, smallPlane = 16, largePlane = 784;
  std::vector<float> px(planeElements), py(planeElements), pdy(planeElements),
      pdx(planeElements), ones(8, 1.0f), zeros(8, 0.0f), stats(32);
  for (int64_t i = 0; i < planeElements; ++i) {
    px[i] = static_cast<float>(i * 7919 % 997) * 0.001f - 0.5f;
    pdy[i] = static_cast<float>(i * 104729 % 991) * 0.001f - 0.5f;
  }
  const int64_t window[] = {2, 2}, noPads[] = {0, 0, 0, 0}, unit[] = {1, 1};
  auto side = [](int64_t length) {
    return static_cast<int64_t>(std::lround(std::sqrt(double(length))));
  };
  auto planeShape = [&](int64_t planes, int64_t length) {
    return Shape{planes, 1, side(length), side(length)};
  };
  auto pooledShape = [&](int64_t planes, int64_t length) {
    return Shape{planes, 1, side(length) / 2, side(length) / 2};
  };
  auto channelShape = [](int64_t planes, int64_t length) {
    return Shape{planes / 8, 8, length};
  };
  RowRate planeRates[6] = {
      rowRate(
          [&](int64_t planes, int64_t length) {
            cleave::rt::maxPool(px.data(), planeShape(planes, length), window,
                                window, noPads, unit, py.data(),
                                pooledShape(planes, length));
          },
          overhead, seconds, planeElements, smallPlane, largePlane),
      rowRate(
          [&](int64_t planes, int64_t length) {
            cleave::rt::maxPoolGrad(pdy.data(), pooledShape(planes, length),
                                    px.data(), planeShape(planes, length),
                                    window, window, noPads, unit, pdx.data());
          },
          overhead, seconds, planeElements, smallPlane, largePlane),
      rowRate(
          [&](int64_t planes, int64_t length) {
            cleave::rt::avgPool(px.data(), planeShape(planes, length), window,
                                window, noPads, false, py.data(),
                                pooledShape(planes, length));
          },
          overhead, seconds, planeElements, smallPlane, largePlane),
      rowRate(
          [&](int64_t planes, int64_t length) {
            cleave::rt::avgPoolGrad(pdy.data(), pooledShape(planes, length),
                                    window, window, noPads, false, pdx.data(),
                                    planeShape(planes, length));
          },
          overhead, seconds, planeElements, smallPlane, largePlane),
      rowRate(
          [&](int64_t planes, int64_t length) {
            cleave::rt::batchNorm(px.data(), channelShape(planes, length),
                                  ones.data(), zeros.data(), ones.data(),
                                  ones.data(), 1e-5f, 0.9f, true, py.data(),
                                  stats.data(), stats.data() + 8);
          },
          overhead, seconds, planeElements, smallPlane, largePlane),
      rowRate(
          [&](int64_t planes, int64_t length) {
            cleave::rt::batchNormGrad(
                pdy.data(), px.data(), channelShape(planes, length),
                ones.data(), 1e-5f, pdx.data(), stats.data(), stats.data() + 8);
          },
          overhead, seconds, planeElements, smallPlane, largePlane)};
  int64_t step = 0;
  double dropout = secondsPerCall(
      [&] {
        cleave::rt::dropout(x.data(), n, 0.1f, 1, 0, ++step, nullptr, n, n,
                            y.data(), mask.get());
      },
      seconds);
  const int64_t matrices = 256, m = 8;
  const int64_t strides[] = {m * m, m, 1};
  double batched = secondsPerCall(
      [&] {
        cleave::rt::matmulStrided(Shape{matrices}, m, m, m, x.data(), strides,
                                  dy.data(), strides, y.data(), strides);
      },
      seconds);
  std::vector<NamedRate> named = {
      {"softmax", rates[0]},
      {"softmax_grad", rates[1]},
      {"layer_norm", rates[2]},
      {"layer_norm_grad", rates[3]},
      {"dropout", {0, std::max(0.0, dropout - overhead) / n * 1e9}},
      {"batched_matmul",
       {std::max(0.0, batched - overhead) / matrices * 1e9, 0}}};
  // The im2col passes: x and y of the same shape (3x3, padding 1), one
  // channel each.
  const int64_t most = 16 * 28 * 28;
  std::vector<float> cx(most, 0.5f), cy(most, 0.25f), cdx(most), cw(9, 0.1f),
      cdw(9);
  const Shape cwShape{1, 1, 3, 3};
  const int64_t pads[] = {1, 1, 1, 1};
  RowRate convRates[3] = {
      im2colRate(
          [&](const Shape &shape) {
            cleave::rt::conv(cx.data(), shape, cw.data(), cwShape, nullptr,
                             unit, pads, unit, 1, cy.data(), shape);
          },
          overhead, seconds),
      im2colRate(
          [&](const Shape &shape) {
            cleave::rt::convGradInput(cy.data(), shape, cw.data(), cwShape,
                                      unit, pads, unit, 1, cdx.data(), shape);
          },
          overhead, seconds),
      im2colRate(
          [&](const Shape &shape) {
            cleave::rt::convGradWeight(cy.data(), shape, cx.data(), shape, unit,
                                       pads, unit, 1, cdw.data(), cwShape);
          },
          overhead, seconds)};
  const char *namedKernels[9] = {"max_pool",
                                 "max_pool_grad",
                                 "avg_pool",
                                 "avg_pool_grad",
                                 "batch_norm",
                                 "batch_norm_grad",
                                 "conv_im2col",
                                 "conv_im2col_grad_input",
                                 "conv_im2col_grad_weight"};
  for (int k = 0; k < 9; ++k)
    named.push_back(
        {namedKernels[k], k < 6 ? planeRates[k] : convRates[k - 6]});
  return named;
}

/// The kernels' rates of several rounds (kernelRates, all in one order),
/// each kernel's from the round in which it ran fastest on a typical
/// call (1000 rows and 62720 elements), as a JSON object of [row_ns,
/// element_ns]. A host that slows down for a few seconds (another
/// machine's load on the same cores) otherwise leaves the kernels timed
/// 2-3x slower than the GEMMs and the memory measured beside them.
std::string
fastestKernelRates(const std::vector<std::vector<NamedRate>> &rounds) {
  std::string json;
  char text[160];
  for (size_t k = 0; k < rounds.front().size(); ++k) {
    auto typical = [&](const RowRate &rate) {
      return 1000 * rate.rowNs + 62720 * rate.elementNs;
    };
    RowRate best = rounds.front()[k].rate;
    for (const std::vector<NamedRate> &round : rounds)
      if (typical(round[k].rate) < typical(best))
        best = round[k].rate;
    std::snprintf(text, sizeof text, "%s\"%s\": [%.4f, %.4f]",
                  json.empty() ? "" : ", ", rounds.front()[k].name, best.rowNs,
                  best.elementNs);
    json += text;
  }
  return "{" + json + "}";
}

/// The size of cpu 0's cache of `level` in bytes, as Linux's sysfs gives
/// it (what this cpu shares: a virtual machine's sysconf can report the
/// host's whole L3), else sysconf's `name`; 0 when unknown.
long cacheSize(int level, int name) {
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream levelFile(dir + "/level"), sizeFile(dir + "/size");
    int found = 0;
    std::string size;
    if (!(levelFile >> found) || found != level || !(sizeFile >> size))
      continue;
    long value = std::atol(size.c_str());
    if (!size.empty() && size.back() == 'K')
      value *= 1024;
    else if (!size.empty() && size.back() == 'M')
      value *= 1024 * 1024;
    if (value > 0)
      return value;
  }
  return std::max(0L, sysconf(name));
}

/// One round trip of work between this rank's thread and a second one
/// through a mutex and condition variables, in seconds: how a started
/// collective reaches the runtime's communication thread and how its end
/// wakes the thread waiting for it (runtime/CommThread.cpp), all ranks'
/// threads at once.
double threadHandOff(double seconds) {
  std::mutex mutex;
  std::condition_variable changed;
  int turn = 0;
  bool stop = false;
  std::thread other([&] {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return turn == 1 || stop; });
      if (stop)
        return;
      turn = 0;
      changed.notify_all();
    }
  });
  double t = secondsPerCall(
      [&] {
        std::unique_lock<std::mutex> lock(mutex);
        turn = 1;
        changed.notify_all();
        changed.wait(lock, [&] { return turn == 0; });
      },
      seconds);
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  changed.notify_all();
  other.join();
  return t;
}

/// Half a round trip of `bytes` between ranks 0 and 1, in seconds (the
/// other ranks wait).
double pingPong(int rank, int64_t bytes, double seconds) {
  std::vector<char> buffer(std::max<int64_t>(bytes, 1));
  double t = secondsPerCall(
      [&] {
        if (rank == 0) {
          MPI_Send(buffer.data(), bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
          MPI_Recv(buffer.data(), bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
        } else if (rank == 1) {
          MPI_Recv(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
          MPI_Send(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
      },
      seconds);
  return t / 2;
}

/// The buffer sizes the collectives are measured at, in bytes.
constexpr int64_t kCollectiveBytes[] = {int64_t{4} << 10,  int64_t{64} << 10,
                                        int64_t{1} << 20,  int64_t{4} << 20,
                                        int64_t{16} << 20, int64_t{64} << 20};

/// The probe's mesh: `ranks` factored into at most kMaxMeshAxes axes, the
/// smallest prime factors minor (the last axes), so that the groups over
/// the last 1, 2, ... axes have every size measureCollectives measures.
std::vector<int64_t> meshAxes(int64_t ranks) {
  std::vector<int64_t> factors; // ascending
  for (int64_t rest = ranks, p = 2; rest > 1;) {
    if (p * p > rest)
      p = rest;
    if (rest % p == 0) {
      factors.push_back(p);
      rest /= p;
    } else {
      ++p;
    }
  }
  // Too many factors: the largest ones share the major axis.
  while (factors.size() > static_cast<size_t>(cleave::rt::kMaxMeshAxes)) {
    int64_t last = factors.back();
    factors.pop_back();
    factors.back() *= last;
  }
  if (factors.empty())
    factors.push_back(1);
  return std::vector<int64_t>(factors.rbegin(), factors.rend());
}

/// Seconds per call of the runtime's collectives on one group (all its
/// groups at once), by kind (all-reduce, reduce-scatter, all-gather) and
/// buffer size (kCollectiveBytes): a buffer's bytes being the tensor an
/// all-reduce sums, a reduce-scatter's input or an all-gather's output
/// (rounded down to a whole number of elements per rank).
struct CollectiveTimes {
  cleave::rt::AxisGroup group;
  std::array<std::array<double, std::size(kCollectiveBytes)>, 3> seconds;
};

/// Times each collective on `group` for about `seconds` in all. The
/// all-reduce goes as one tensor in a bucket started and then finished, as
/// a program's gradient bucket does; reduce-scatter and all-gather along
/// the first dimension.
CollectiveTimes measureCollectives(cleave::rt::AxisGroup group,
                                   double seconds) {
  using namespace cleave::rt;
  int g = groupSize(group);
  constexpr size_t kSizes = std::size(kCollectiveBytes);
  seconds /= 3 * kSizes;
  std::vector<float> in(kCollectiveBytes[kSizes - 1] / sizeof(float), 0.0f),
      out(in.size(), 0.0f);
  CollectiveTimes times{group, {}};
  for (size_t s = 0; s < kSizes; ++s) {
    int64_t count = kCollectiveBytes[s] / sizeof(float);
    times.seconds[0][s] = secondsPerCall(
        [&] {
          const void *ins[] = {in.data()};
          void *outs[] = {in.data()};
          finishAllReduceBucket(
              startAllReduceBucket(ins, outs, &count, 1, DType::F32, group));
        },
        seconds);
    int64_t perRank = count / g;
    times.seconds[1][s] = secondsPerCall(
        [&] {
          reduceScatterDim(in.data(), Shape{perRank * g}, 0, DType::F32,
                           out.data(), group);
        },
        seconds);
    times.seconds[2][s] = secondsPerCall(
        [&] {
          allGatherDim(in.data(), Shape{perRank}, 0, sizeof(float),
                       out.data(), group);
        },
        seconds);
  }
  return times;
}

/// The link between ranks measured in rounds spread over the probe (a
/// shared or virtual machine's link between cores can change speed for
/// tens of seconds at a time: the vCPUs move), each number kept from its
/// fastest round; every round's ping-pong is reported, so that `cleave
/// calibrate` can say when they disagree.
class LinkRounds {
public:
  /// `groups`: the axis groups whose collectives are measured.
  LinkRounds(int rank, std::vector<cleave::rt::AxisGroup> groups)
      : rank(rank), groups(std::move(groups)) {}

  /// One round: ping-pong latency and bandwidth between ranks 0 and 1,
  /// then every group's collectives, about `seconds` for each.
  void measure(double seconds) {
    double latency = pingPong(rank, 8, seconds);
    const int64_t big = int64_t{16} << 20;
    double bandwidth = big / pingPong(rank, big, seconds);
    rounds.push_back({latency, bandwidth});
    for (size_t i = 0; i < groups.size(); ++i) {
      CollectiveTimes times = measureCollectives(groups[i], seconds);
      if (fastest.size() <= i) {
        fastest.push_back(times);
        continue;
      }
      for (size_t k = 0; k < times.seconds.size(); ++k)
        for (size_t s = 0; s < times.seconds[k].size(); ++s)
          fastest[i].seconds[k][s] =
              std::min(fastest[i].seconds[k][s], times.seconds[k][s]);
    }
  }

  double latencyUs() const {
    double best = rounds.front().latency;
    for (const Round &round : rounds)
      best = std::min(best, round.latency);
    return best * 1e6;
  }
  double bandwidthGBs() const {
    double best = 0;
    for (const Round &round : rounds)
      best = std::max(best, round.bandwidth);
    return best / 1e9;
  }

  /// [{"latency_us": ..., "bandwidth_gbs": ...}, ...], in the order
  /// measured.
  std::string roundsJson() const {
    std::string json;
    for (const Round &round : rounds)
      json += (json.empty() ? "" : ", ") +
              format("{\"latency_us\": %.3f, \"bandwidth_gbs\": %.3f}",
                     round.latency * 1e6, round.bandwidth / 1e9);
    return "[" + json + "]";
  }

  /// Each group's fastest times: [{"group_size": g, "all_reduce":
  /// [[bytes, seconds], ...], "reduce_scatter": ..., "all_gather": ...},
  /// ...].
  std::string collectivesJson() const {
    static const char *const kNames[] = {"all_reduce", "reduce_scatter",
                                         "all_gather"};
    std::string json;
    for (const CollectiveTimes &times : fastest) {
      int g = cleave::rt::groupSize(times.group);
      json += (json.empty() ? "" : ", ") + format("{\"group_size\": %d", g);
      for (size_t k = 0; k < times.seconds.size(); ++k) {
        std::string points;
        for (size_t s = 0; s < times.seconds[k].size(); ++s) {
          int64_t bytes = kCollectiveBytes[s];
          // The reduce-scatter's and all-gather's whole elements per rank.
          if (k > 0)
            bytes = bytes / sizeof(float) / g * g * sizeof(float);
          points += format("%s[%lld, %.9g]", points.empty() ? "" : ", ",
                           static_cast<long long>(bytes), times.seconds[k][s]);
        }
        json += format(", \"%s\": [", kNames[k]) + points + "]";
      }
      json += "}";
    }
    return "[" + json + "]";
  }

private:
  struct Round {
    double latency, bandwidth; // seconds for 8 bytes; bytes per second
  };
  int rank;
  std::vector<cleave::rt::AxisGroup> groups;
  std::vector<Round> rounds;
  std::vector<CollectiveTimes> fastest; // per group
};

/// The share of a started all-reduce's time that compute on the rank's
/// own threads hides, all ranks at once: a 16 MiB all-reduce bucket
/// (over `group`) started, 256^3 GEMMs for about twice its time, then its
/// wait; against the two apart, (GEMMs + all-reduce - together) /
/// all-reduce. Near 1 where the collective needs no core the GEMMs need
/// (separate hardware, spare cores), near 0 where its copies, sums and
/// polls take the cores the GEMMs run on; below 0 where running both
/// costs more than running them in turn. The three are timed in turn in
/// short rounds, and the median round's share counts: a load that comes
/// and goes then shifts all three alike.
double collectiveOverlap(cleave::rt::AxisGroup group, double seconds) {
  using namespace cleave::rt;
  int64_t count = (int64_t{16} << 20) / sizeof(float);
  std::vector<float> data(count, 0.0f);
  const int64_t n = 256;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  auto start = [&] {
    const void *ins[] = {data.data()};
    void *outs[] = {data.data()};
    return startAllReduceBucket(ins, outs, &count, 1, DType::F32, group);
  };
  auto gemmOnce = [&] {
    gemm(false, false, n, n, n, 1.0f, a.data(), b.data(), 0.0f, c.data());
  };
  constexpr int kRounds = 7;
  seconds /= 3 * kRounds;
  double allReduce =
      secondsPerCall([&] { finishAllReduceBucket(start()); }, seconds);
  double oneGemm = secondsPerCall(gemmOnce, seconds);
  // Every rank runs as many GEMMs (rank 0's count).
  int64_t calls = std::max<int64_t>(1, static_cast<int64_t>(
                                           2 * allReduce / oneGemm + 0.5));
  MPI_Bcast(&calls, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  std::vector<double> shares;
  for (int round = 0; round < kRounds; ++round) {
    double alone =
        secondsPerCall([&] { finishAllReduceBucket(start()); }, seconds);
    double gemms = secondsPerCall(
        [&] {
          for (int64_t i = 0; i < calls; ++i)
            gemmOnce();
        },
        seconds);
    double together = secondsPerCall(
        [&] {
          int64_t bucket = start();
          for (int64_t i = 0; i < calls; ++i)
            gemmOnce();
          finishAllReduceBucket(bucket);
        },
        seconds);
    shares.push_back((gemms + alone - together) / alone);
  }
  // The median, within what cluster files take.
  std::sort(shares.begin(), shares.end());
  return std::clamp(shares[kRounds / 2], -10.0, 1.0);
}

} // namespace

int main(int argc, char **argv) {
  // OpenBLAS's blocking, measured in processes of their own, without MPI
  // (`cleave calibrate` runs this apart).
  if (argc == 2 && std::strcmp(argv[1], "--blas-packing") == 0)
    return cleave::probe::runBlasPackingProbe();
  // oneDNN's memory per convolution primitive, likewise.
  if (argc == 3 && std::strcmp(argv[1], "--onednn-primitives") == 0)
    return cleave::probe::runOneDnnPrimitiveProbe(
        std::max(1, std::atoi(argv[2])));
  // The ranks mpirun starts (--ranks, else Open MPI's count), known before
  // MPI starts: the runtime's mesh is made of them.
  int64_t meshRanks = 1;
  if (const char *size = std::getenv("OMPI_COMM_WORLD_SIZE"))
    meshRanks = std::max(1, std::atoi(size));
  double seconds = 0.5;
  bool libraryMemory = false;
  const char *bad = nullptr;
  for (int i = 1; i < argc && !bad; ++i) {
    if (std::strcmp(argv[i], "--library-memory") == 0)
      libraryMemory = true;
    else if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (std::strcmp(argv[i], "--ranks") == 0 && i + 1 < argc)
      meshRanks = std::atoi(argv[++i]);
    else
      bad = argv[i];
  }
  if (bad || !(seconds > 0) || meshRanks < 1) {
    // Every rank says it; mpirun shows the first.
    if (bad)
      std::fprintf(stderr,
                   "cleave-calibrate-probe: error: unknown argument "
                   "'%s' (only --ranks N, --seconds S, "
                   "--library-memory)\n",
                   bad);
    else
      std::fprintf(stderr, "cleave-calibrate-probe: error: --seconds and "
                           "--ranks must be > 0\n");
    return 1;
  }
  // The runtime's mesh over these ranks, as a program starts it
  // (MPI_THREAD_SERIALIZED, a communication thread): its collectives are
  // measured as programs run them. initMesh refuses another rank count.
  std::vector<int64_t> axes = meshAxes(meshRanks);
  std::vector<std::string> axisNames;
  for (size_t a = 0; a < axes.size(); ++a)
    axisNames.push_back("a" + std::to_string(a));
  std::vector<const char *> names;
  for (const std::string &name : axisNames)
    names.push_back(name.c_str());
  cleave::rt::initMesh(
      cleave::rt::MeshSpec{static_cast<int>(axes.size()), names.data(),
                           axes.data()},
      argc, argv);
  int rank = cleave::rt::worldRank(), ranks = cleave::rt::worldSize();
  // Groups over the last 1, 2, ... mesh axes: every size a mesh of these
  // ranks' prime factors has (2 and 4 of 4 ranks).
  std::vector<cleave::rt::AxisGroup> groups;
  cleave::rt::AxisGroup group{{}, 0};
  for (int a = static_cast<int>(axes.size()) - 1; a >= 0 && ranks > 1; --a) {
    for (int i = group.count; i > 0; --i)
      group.axes[i] = group.axes[i - 1];
    group.axes[0] = static_cast<int8_t>(a);
    ++group.count;
    groups.push_back(group);
  }
  // MPI's own memory, alone in its processes: its lists grow once.
  if (libraryMemory) {
    int64_t bytes =
        ranks > 1 ? cleave::probe::measureLibraryMemory(groups.back()) : 0;
    if (rank == 0)
      std::printf("{\"library_bytes\": %lld}\n", static_cast<long long>(bytes));
    cleave::rt::finalizeMesh();
    return 0;
  }
  // The link in three rounds: first, between the compute phases and last,
  // a third of the time each.
  constexpr int kLinkRounds = 3;
  LinkRounds link(rank, groups);
  auto linkRound = [&] {
    if (ranks > 1)
      link.measure(seconds / kLinkRounds);
  };
  linkRound();
  double large = gemmGflops(1024, 1024, 1024, seconds);
  double medium = gemmGflops(256, 256, 256, seconds);
  double skinny = gemmGflops(4096, 32, 1024, seconds);
  std::string byDimension = gemmByDimension(seconds / 4);
  std::string convByRows, convWinograd;
  std::string conv = convGflops(seconds, large, convByRows, convWinograd);
  // Memory: arrays of 32 MiB; cache: three arrays in half the L2.
  double triad = triadGBs(int64_t{8} << 20, seconds);
  long l2 = cacheSize(2, _SC_LEVEL2_CACHE_SIZE);
  if (l2 <= 0)
    l2 = 1 << 20;
  int64_t cacheFloats = std::max<long>(1024, l2 / 2 / 3 / 4);
  double cacheTriad = triadGBs(cacheFloats, seconds);
  // The cost model's "fits the cache" threshold: the working set measured.
  long cacheBytes = 3 * cacheFloats * sizeof(float);
  // The last-level cache: this rank's share of it (the ranks share one
  // here), half of it in the three arrays; none when no larger than the L2.
  long l3 = cacheSize(3, _SC_LEVEL3_CACHE_SIZE);
  long llcBytes = 0;
  double llcTriad = 0;
  if (l3 / ranks > 2 * l2) {
    int64_t llcFloats = l3 / ranks / 2 / 3 / 4;
    llcTriad = triadGBs(llcFloats, seconds);
    llcBytes = 3 * llcFloats * sizeof(float);
  }
  linkRound();
  double overhead = opOverhead(seconds);
  // Three rounds of the kernels, spread over the rest of the measurement.
  std::vector<std::vector<NamedRate>> kernelRounds;
  kernelRounds.push_back(kernelRates(overhead, seconds / 3));
  double handOff = threadHandOff(seconds / 4);
  kernelRounds.push_back(kernelRates(overhead, seconds / 3));
  linkRound();
  double overlap = ranks > 1 ? collectiveOverlap(group, seconds) : 1;
  kernelRounds.push_back(kernelRates(overhead, seconds / 3));
  std::string kernels = fastestKernelRates(kernelRounds);
  if (rank == 0)
    std::printf("{\"ranks\": %d, \"threads\": %d, \"gemm_gflops\": "
                "{\"large\": %.3f, \"medium\": %.3f, \"skinny\": %.3f, "
                "\"by_dimension\": %s}, \"conv_gflops\": %s, "
                "\"conv_gflops_by_rows\": %s, \"conv_winograd_gflops\": %s, "
                "\"triad_gbs\": %.3f, \"cache_triad_gbs\": %.3f, "
                "\"cache_bytes\": %ld, \"llc_triad_gbs\": %.3f, "
                "\"llc_bytes\": %ld, \"p2p_latency_us\": %.3f, "
                "\"p2p_bandwidth_gbs\": %.3f, \"link_rounds\": %s, "
                "\"op_overhead_us\": %.4f, "
                "\"hand_off_us\": %.3f, \"kernels\": %s, "
                "\"collectives\": %s, \"overlap\": %.3f}\n",
                ranks, omp_get_max_threads(), large, medium, skinny,
                byDimension.c_str(), conv.c_str(), convByRows.c_str(),
                convWinograd.c_str(), triad, cacheTriad, cacheBytes, llcTriad,
                llcBytes, ranks > 1 ? link.latencyUs() : 0.0,
                ranks > 1 ? link.bandwidthGBs() : 0.0,
                ranks > 1 ? link.roundsJson().c_str() : "[]", overhead * 1e6,
                handOff * 1e6, kernels.c_str(),
                ranks > 1 ? link.collectivesJson().c_str() : "[]", overlap);
  cleave::rt::finalizeMesh();
  return 0;
}
