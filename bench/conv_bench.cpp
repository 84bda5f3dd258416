//===- conv_bench.cpp - im2col + sgemm vs oneDNN per convolution shape ----===//
//
// Times the cpu target's two convolution paths (runtime/OneDnnConvolution.h)
// on every distinct convolution of the benchmark's CNNs (torchvision's
// ResNet-18 and MobileNetV2 of test/models/zoo at 32x32, batch 16, and
// export_models.py's MNIST CNN at batch 8): forward, grad input and grad
// weight, im2col + OpenBLAS against oneDNN on the program's plain layouts
// and on its blocked ones (with the reorders each call pays). Prints a
// markdown table of microseconds per call, the best of several rounds (the
// machine is shared), the oneDNN implementations, the largest difference
// between the paths' results and what preferOneDnn picks. Threads come from
// OMP_NUM_THREADS; bench/README.md says how the rule was drawn from it.
//
//   OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX cleave-conv-bench [--model m]
//
//===----------------------------------------------------------------------===//

#include "runtime/ConvolutionShapes.h"
#include "runtime/OneDnnConvolution.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace cleave::rt;

namespace {

/// A 2-d convolution as torch's Conv2d describes it (square kernel,
/// symmetric padding), at one batch size.
struct ConvShape {
  const char *model;
  int64_t batch, inC, h, w, outC, k, stride, pad, group;
  int64_t outH() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t outW() const { return (w + 2 * pad - k) / stride + 1; }
};

// Each distinct Conv2d of the models, as forward hooks on the torch
// modules list them (in.C in.H in.W out.C k stride pad groups).
const ConvShape kShapes[] = {
    {"resnet18", 16, 3, 32, 32, 64, 7, 2, 3, 1},
    {"resnet18", 16, 64, 8, 8, 64, 3, 1, 1, 1},
    {"resnet18", 16, 64, 8, 8, 128, 3, 2, 1, 1},
    {"resnet18", 16, 128, 4, 4, 128, 3, 1, 1, 1},
    {"resnet18", 16, 64, 8, 8, 128, 1, 2, 0, 1},
    {"resnet18", 16, 128, 4, 4, 256, 3, 2, 1, 1},
    {"resnet18", 16, 256, 2, 2, 256, 3, 1, 1, 1},
    {"resnet18", 16, 128, 4, 4, 256, 1, 2, 0, 1},
    {"resnet18", 16, 256, 2, 2, 512, 3, 2, 1, 1},
    {"resnet18", 16, 512, 1, 1, 512, 3, 1, 1, 1},
    {"resnet18", 16, 256, 2, 2, 512, 1, 2, 0, 1},
    {"mobilenet_v2", 16, 3, 32, 32, 8, 3, 2, 1, 1},
    {"mobilenet_v2", 16, 8, 16, 16, 8, 3, 1, 1, 8},
    {"mobilenet_v2", 16, 8, 16, 16, 8, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 8, 16, 16, 48, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 48, 16, 16, 48, 3, 2, 1, 48},
    {"mobilenet_v2", 16, 48, 8, 8, 8, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 8, 8, 8, 48, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 48, 8, 8, 48, 3, 1, 1, 48},
    {"mobilenet_v2", 16, 48, 8, 8, 48, 3, 2, 1, 48},
    {"mobilenet_v2", 16, 48, 4, 4, 8, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 8, 4, 4, 48, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 48, 4, 4, 48, 3, 1, 1, 48},
    {"mobilenet_v2", 16, 48, 4, 4, 48, 3, 2, 1, 48},
    {"mobilenet_v2", 16, 48, 2, 2, 16, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 16, 2, 2, 96, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 96, 2, 2, 96, 3, 1, 1, 96},
    {"mobilenet_v2", 16, 96, 2, 2, 16, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 96, 2, 2, 24, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 24, 2, 2, 144, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 144, 2, 2, 144, 3, 1, 1, 144},
    {"mobilenet_v2", 16, 144, 2, 2, 24, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 144, 2, 2, 144, 3, 2, 1, 144},
    {"mobilenet_v2", 16, 144, 1, 1, 40, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 40, 1, 1, 240, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 240, 1, 1, 240, 3, 1, 1, 240},
    {"mobilenet_v2", 16, 240, 1, 1, 40, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 240, 1, 1, 80, 1, 1, 0, 1},
    {"mobilenet_v2", 16, 80, 1, 1, 1280, 1, 1, 0, 1},
    {"cnn", 8, 1, 28, 28, 8, 3, 1, 1, 1},
    {"cnn", 8, 8, 14, 14, 16, 3, 1, 0, 1},
    // The MNIST CNN at batch 64 on 2 ranks, as bench/plan_vs_measured.py
    // runs it: each rank's convolutions when the batch is split (dp=2) and
    // when the output channels are (tp=2, conv2 on all 8 input channels).
    {"cnn-dp2", 32, 1, 28, 28, 8, 3, 1, 1, 1},
    {"cnn-dp2", 32, 8, 14, 14, 16, 3, 1, 0, 1},
    {"cnn-tp2", 64, 1, 28, 28, 4, 3, 1, 1, 1},
    {"cnn-tp2", 64, 8, 14, 14, 8, 3, 1, 0, 1},
    // ResNet-18's layer4 3x3 convolutions on a 1x1 image as the runtime
    // runs them: cropped to their centre tap (runtime/ConvolutionLiveTaps.h).
    {"resnet18-cropped", 16, 512, 1, 1, 512, 1, 1, 0, 1},
    // Keras' MNIST convnet (bench.py's convnet and convnet-b128).
    {"convnet", 32, 1, 28, 28, 32, 3, 1, 0, 1},
    {"convnet", 32, 32, 26, 26, 64, 3, 1, 0, 1},
    {"convnet-b128", 128, 1, 28, 28, 32, 3, 1, 0, 1},
    {"convnet-b128", 128, 32, 26, 26, 64, 3, 1, 0, 1},
};

/// Microseconds per call of `f`: the best, over 7 rounds, of a round's
/// mean, a round being enough calls for ~20 ms.
double microseconds(const std::function<void()> &f) {
  using Clock = std::chrono::steady_clock;
  f();
  auto t0 = Clock::now();
  f();
  double once = std::chrono::duration<double>(Clock::now() - t0).count();
  int calls = std::max(1, static_cast<int>(0.02 / std::max(once, 1e-7)));
  double best = 1e30;
  for (int round = 0; round < 7; ++round) {
    auto start = Clock::now();
    for (int i = 0; i < calls; ++i)
      f();
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::min(best, s / calls);
  }
  return best * 1e6;
}

float maxAbsDiff(const std::vector<float> &a, const std::vector<float> &b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

const char *kPassNames[] = {"fwd", "dx", "dw"};

void benchShape(const ConvShape &c, int threads) {
  Shape xs{c.batch, c.inC, c.h, c.w};
  Shape ws{c.outC, c.inC / c.group, c.k, c.k};
  Shape ys{c.batch, c.outC, c.outH(), c.outW()};
  int64_t strides[2] = {c.stride, c.stride};
  int64_t pads[4] = {c.pad, c.pad, c.pad, c.pad};
  int64_t dil[2] = {1, 1};
  auto x = randomVector(xs.numElements(), 1), w = randomVector(ws.numElements(), 2),
       dy = randomVector(ys.numElements(), 3), bias = randomVector(c.outC, 4);
  cleave::body::Window3 win(xs, ys, ws.dims + 2, strides, pads, dil);
  ConvDims cd(xs, ws, c.group, win);
  for (ConvPass pass :
       {ConvPass::Forward, ConvPass::GradInput, ConvPass::GradWeight}) {
    size_t outSize = pass == ConvPass::Forward     ? ys.numElements()
                     : pass == ConvPass::GradInput ? xs.numElements()
                                                   : ws.numElements();
    std::vector<float> ref(outSize), out(outSize);
    auto im2colRun = [&](float *o) {
      if (pass == ConvPass::Forward)
        im2colConv(x.data(), xs, w.data(), ws, bias.data(), strides, pads, dil,
                   c.group, o, ys);
      else if (pass == ConvPass::GradInput)
        im2colConvGradInput(dy.data(), ys, w.data(), ws, strides, pads, dil,
                            c.group, o, xs);
      else
        im2colConvGradWeight(dy.data(), ys, x.data(), xs, strides, pads, dil,
                             c.group, o, ws);
    };
    auto dnnlRun = [&](float *o, OneDnnLayout l) {
      if (pass == ConvPass::Forward)
        return oneDnnConv(x.data(), xs, w.data(), ws, bias.data(), strides,
                          pads, dil, c.group, o, ys, l);
      if (pass == ConvPass::GradInput)
        return oneDnnConvGradInput(dy.data(), ys, w.data(), ws, strides, pads,
                                   dil, c.group, o, xs, l);
      return oneDnnConvGradWeight(dy.data(), ys, x.data(), xs, strides, pads,
                                  dil, c.group, o, ws, l);
    };
    im2colRun(ref.data());
    double tIm2col = microseconds([&] { im2colRun(out.data()); });
    constexpr OneDnnLayout kLayouts[] = {
        OneDnnLayout::Plain, OneDnnLayout::Blocked, OneDnnLayout::Winograd};
    constexpr const char *kLayoutNames[] = {"plain", "blocked", "winograd"};
    double t[3];
    std::string impl[3];
    float diff = 0;
    for (OneDnnLayout l : kLayouts) {
      int li = static_cast<int>(l);
      impl[li] = oneDnnImplementation(pass, xs, ws, ys, strides, pads, dil,
                                      c.group, pass == ConvPass::Forward, l);
      if (!dnnlRun(out.data(), l)) {
        t[li] = NAN;
        continue;
      }
      diff = std::max(diff, maxAbsDiff(ref, out));
      t[li] = microseconds([&] { dnnlRun(out.data(), l); });
    }
    OneDnnLayout rl;
    bool rule = preferOneDnn(pass, cd, win, threads, rl);
    const char *winner = "im2col";
    double best = tIm2col;
    for (OneDnnLayout l : kLayouts)
      if (double tl = t[static_cast<int>(l)]; tl < best) {
        best = tl;
        winner = kLayoutNames[static_cast<int>(l)];
      }
    std::printf("| %s | %ldx%ldx%ld k%ld s%ld g%ld -> %ld | %s | %.1f | %.1f "
                "| %.1f | %.1f | %s / %s / %s | %.1g | %s | %s |\n",
                c.model, c.inC, c.h, c.w, c.k, c.stride, c.group, c.outC,
                kPassNames[static_cast<int>(pass)], tIm2col, t[0], t[1], t[2],
                impl[0].c_str(), impl[1].c_str(), impl[2].c_str(), diff, winner,
                rule ? kLayoutNames[static_cast<int>(rl)] : "im2col");
  }
}

} // namespace

int main(int argc, char **argv) {
  const char *model = nullptr;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--model") && i + 1 < argc)
      model = argv[++i];
  int threads = omp_get_max_threads();
  std::printf("%d thread(s); microseconds per call, best of 7 rounds\n\n",
              threads);
  std::printf("| model | conv (C x H x W, kernel, stride, groups -> out C) | "
              "pass | im2col | oneDNN plain | oneDNN blocked | oneDNN "
              "Winograd | oneDNN impl (plain / blocked / Winograd) | max diff "
              "| fastest | rule |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|---|---:|---|---|\n");
  for (const ConvShape &c : kShapes)
    if (!model || !std::strcmp(model, c.model))
      benchShape(c, threads);
}
