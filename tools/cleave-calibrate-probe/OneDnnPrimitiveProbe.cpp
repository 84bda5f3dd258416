//===- OneDnnPrimitiveProbe.cpp - memory of oneDNN's primitives -----------===//

#include "OneDnnPrimitiveProbe.h"

#include "runtime/OneDnnConvolution.h"
#include "runtime/PeakMemory.h"

#include <omp.h>

#include <cstdio>
#include <vector>

namespace cleave::probe {

namespace {

/// A 3x3 convolution, stride 1: input [n, c, h, h], `k` output channels,
/// padding `pad` on every side.
struct Geometry {
  int64_t n, c, h, k, pad;
};

/// Convolutions of the sizes small models have: a first layer of one
/// channel, and blocked ones of 16 and 32 channels. (Each pass's code is
/// generated for its shapes; the mean over these stands for any.)
constexpr Geometry kGeometries[] = {
    {16, 1, 28, 8, 1}, {8, 16, 16, 16, 1}, {8, 32, 8, 32, 0}};

/// One geometry's operands, allocated and touched before the baseline.
struct Operands {
  rt::Shape x, w, y;
  std::vector<float> xs, ws, ys, bias, dx, dw;
  int64_t pads[4];

  explicit Operands(const Geometry &g)
      : x{g.n, g.c, g.h, g.h}, w{g.k, g.c, 3, 3}, y{g.n, g.k,
                                                    g.h + 2 * g.pad - 2,
                                                    g.h + 2 * g.pad - 2},
        xs(x.numElements(), 0.5f), ws(w.numElements(), 0.1f),
        ys(y.numElements(), 0.0f), bias(g.k, 0.0f), dx(xs.size(), 0.0f),
        dw(ws.size(), 0.0f), pads{g.pad, g.pad, g.pad, g.pad} {}

  /// The three passes on oneDNN; the number of primitives they created.
  int64_t runPasses() {
    using namespace rt;
    const int64_t strides[] = {1, 1}, dilations[] = {1, 1};
    int64_t before = oneDnnPrimitives();
    oneDnnConv(xs.data(), x, ws.data(), w, bias.data(), strides, pads,
               dilations, 1, ys.data(), y, OneDnnLayout::Blocked);
    oneDnnConvGradInput(ys.data(), y, ws.data(), w, strides, pads, dilations, 1,
                        dx.data(), x, OneDnnLayout::Blocked);
    oneDnnConvGradWeight(ys.data(), y, xs.data(), x, strides, pads, dilations,
                         1, dw.data(), w, OneDnnLayout::Blocked);
    return oneDnnPrimitives() - before;
  }
};

} // namespace

int runOneDnnPrimitiveProbe(int threads) {
  omp_set_num_threads(threads);
  std::vector<Operands> operands;
  for (const Geometry &g : kGeometries)
    operands.emplace_back(g);
  rt::PeakMemoryMeter meter(/*enabled=*/true);
  int64_t primitives = 0;
  for (Operands &o : operands)
    primitives += o.runPasses();
  meter.stop();
  int64_t rise =
      meter.growth().peak - meter.growth().file - rt::oneDnnWorkspaceBytes();
  if (primitives == 0) {
    std::printf("{\"error\": \"oneDNN created no convolution primitive\"}\n");
    return 0;
  }
  if (rise < 0)
    rise = 0;
  std::printf("{\"primitive_bytes\": %lld, \"primitives\": %lld, "
              "\"rise\": %lld}\n",
              static_cast<long long>(rise / primitives),
              static_cast<long long>(primitives), static_cast<long long>(rise));
  return 0;
}

} // namespace cleave::probe
