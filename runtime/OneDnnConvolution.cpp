//===- OneDnnConvolution.cpp - convolutions through oneDNN ----------------===//
//
// Part of the Cleave runtime. oneDNN's convolution primitives (forward,
// backward data, backward weights) on the program's float32 tensors, one
// primitive per geometry, pass and layout, created on first use. oneDNN is
// Debian's build with the OpenMP runtime (libgomp, the runtime's own), so
// its kernels run on the program's OpenMP threads (OMP_NUM_THREADS), and
// inside an OpenMP region on the calling thread alone, as the sgemm path's
// do.
//
//===----------------------------------------------------------------------===//

#include "runtime/OneDnnConvolution.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cleave::rt {
namespace {

using dnnl::memory;
using Dims = memory::dims;

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream &stream() {
  static dnnl::stream s(engine());
  return s;
}

/// This thread's OpenMP thread count (its ICV, which oneDNN's OpenMP build
/// reads as omp_get_max_threads()) set to `threads` for a scope, and
/// restored however the scope ends (oneDNN throws dnnl::error).
class OmpThreads {
public:
  explicit OmpThreads(int threads)
      : saved(omp_get_max_threads()), changed(threads != saved) {
    if (changed)
      omp_set_num_threads(threads);
  }
  ~OmpThreads() {
    if (changed)
      omp_set_num_threads(saved);
  }
  OmpThreads(const OmpThreads &) = delete;
  OmpThreads &operator=(const OmpThreads &) = delete;

private:
  int saved;
  bool changed;
};

/// What a Workspace holds for `bytes`: whole cache lines.
int64_t workspaceSize(size_t bytes) {
  return static_cast<int64_t>((bytes + 63) / 64 * 64);
}

/// 64-byte aligned bytes (oneDNN's vector kernels load whole cache lines)
/// that grow on demand.
class Workspace {
public:
  void *get(size_t bytes) {
    if (bytes > size) {
      int64_t grown = workspaceSize(bytes);
      detail::oneDnnWorkspaceBytes += grown - static_cast<int64_t>(size);
      size = static_cast<size_t>(grown);
      data.reset(std::aligned_alloc(64, size));
    }
    return data.get();
  }

private:
  std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
  size_t size = 0;
};

/// Row-major strides of `dims`.
memory::desc rowMajor(const Dims &dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i)
    strides[i - 1] = strides[i] * dims[i];
  return memory::desc(dims, memory::data_type::f32, strides);
}

Dims dimsOf(const Shape &s) { return Dims(s.dims, s.dims + s.rank); }

/// The weight's dims as oneDNN takes them: [G, O/G, I/G, k...] when
/// grouped, the same floats as ONNX's [O, I/G, k...].
Dims weightDims(const Shape &w, int64_t group) {
  Dims d = dimsOf(w);
  if (group == 1)
    return d;
  d[0] /= group;
  d.insert(d.begin(), group);
  return d;
}

/// One operand of a primitive: the program's plain layout and the one the
/// primitive takes; where they differ, a reorder through a workspace.
struct Operand {
  int arg;
  bool output;
  memory::desc plain, taken;
  dnnl::primitive toTaken, toPlain;
  Operand(int arg, bool output, const memory::desc &plain,
          const memory::desc &taken)
      : arg(arg), output(output), plain(plain), taken(taken) {}
  bool reordered() const { return plain != taken; }
};

/// A primitive's description with its operands, or `ok` false where
/// oneDNN has no implementation for the geometry; `prim` and the operands'
/// reorders are created on the first call that runs it (a query of the
/// workspaces it takes needs only the description).
struct Entry {
  bool ok = false;
  std::string impl;
  dnnl::primitive_desc pd;
  dnnl::primitive prim;
  std::vector<std::unique_ptr<Operand>> operands;
  memory::desc scratchDesc;
};

struct Geometry {
  Dims src, wei, dst, bias, strides, dilations, padL, padR;
};

Geometry geometryOf(const Shape &xShape, const Shape &wShape,
                    const Shape &yShape, const int64_t *strides,
                    const int64_t *pads, const int64_t *dilations,
                    int64_t group) {
  Geometry g;
  int spatial = xShape.rank - 2;
  g.src = dimsOf(xShape);
  g.dst = dimsOf(yShape);
  g.wei = weightDims(wShape, group);
  g.bias = {wShape.dims[0]};
  for (int i = 0; i < spatial; ++i) {
    g.strides.push_back(strides ? strides[i] : 1);
    // oneDNN counts dilation from 0 (no gap), ONNX from 1.
    g.dilations.push_back((dilations ? dilations[i] : 1) - 1);
    g.padL.push_back(pads ? pads[i] : 0);
    g.padR.push_back(pads ? pads[spatial + i] : 0);
  }
  return g;
}

memory::desc taken(const Dims &dims, OneDnnLayout layout) {
  return layout == OneDnnLayout::Plain
             ? rowMajor(dims)
             : memory::desc(dims, memory::data_type::f32,
                            memory::format_tag::any);
}

dnnl::algorithm algorithmOf(OneDnnLayout layout) {
  return layout == OneDnnLayout::Winograd
             ? dnnl::algorithm::convolution_winograd
             : dnnl::algorithm::convolution_direct;
}

/// A forward primitive descriptor (also the hint the backward ones need).
dnnl::convolution_forward::primitive_desc
forwardDesc(const Geometry &g, bool bias, OneDnnLayout layout,
            const dnnl::primitive_attr &attr) {
  using dnnl::convolution_forward;
  auto src = taken(g.src, layout), wei = taken(g.wei, layout),
       dst = taken(g.dst, layout);
  dnnl::algorithm algorithm = algorithmOf(layout);
  auto d = bias ? convolution_forward::desc(dnnl::prop_kind::forward_training,
                                            algorithm, src, wei,
                                            rowMajor(g.bias), dst, g.strides,
                                            g.dilations, g.padL, g.padR)
                : convolution_forward::desc(dnnl::prop_kind::forward_training,
                                            algorithm, src, wei, dst, g.strides,
                                            g.dilations, g.padL, g.padR);
  return convolution_forward::primitive_desc(d, attr, engine());
}

/// Describes the primitive of `pass`: its implementation, the layouts of
/// its operands and its scratchpad; throws dnnl::error where oneDNN has
/// none for the geometry.
void describe(Entry &e, ConvPass pass, const Geometry &g, bool bias,
              OneDnnLayout layout) {
  dnnl::primitive_attr attr;
  // The scratchpad is the runtime's, allocated once, rather than one
  // oneDNN allocates per call.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto fwd = forwardDesc(g, bias, layout, attr);
  auto add = [&](int arg, bool output, const Dims &dims,
                 const memory::desc &want) {
    e.operands.push_back(
        std::make_unique<Operand>(arg, output, rowMajor(dims), want));
  };
  memory::desc &scratch = e.scratchDesc;
  switch (pass) {
  case ConvPass::Forward:
    e.pd = fwd;
    e.impl = fwd.impl_info_str();
    scratch = fwd.scratchpad_desc();
    add(DNNL_ARG_SRC, false, g.src, fwd.src_desc());
    add(DNNL_ARG_WEIGHTS, false, g.wei, fwd.weights_desc());
    if (bias)
      add(DNNL_ARG_BIAS, false, g.bias, fwd.bias_desc());
    add(DNNL_ARG_DST, true, g.dst, fwd.dst_desc());
    break;
  case ConvPass::GradInput: {
    using dnnl::convolution_backward_data;
    convolution_backward_data::desc d(
        algorithmOf(layout), taken(g.src, layout), taken(g.wei, layout),
        taken(g.dst, layout), g.strides, g.dilations, g.padL, g.padR);
    convolution_backward_data::primitive_desc pd(d, attr, engine(), fwd);
    e.pd = pd;
    e.impl = pd.impl_info_str();
    scratch = pd.scratchpad_desc();
    add(DNNL_ARG_DIFF_DST, false, g.dst, pd.diff_dst_desc());
    add(DNNL_ARG_WEIGHTS, false, g.wei, pd.weights_desc());
    add(DNNL_ARG_DIFF_SRC, true, g.src, pd.diff_src_desc());
    break;
  }
  case ConvPass::GradWeight: {
    using dnnl::convolution_backward_weights;
    convolution_backward_weights::desc d(
        algorithmOf(layout), taken(g.src, layout), taken(g.wei, layout),
        taken(g.dst, layout), g.strides, g.dilations, g.padL, g.padR);
    convolution_backward_weights::primitive_desc pd(d, attr, engine(), fwd);
    e.pd = pd;
    e.impl = pd.impl_info_str();
    scratch = pd.scratchpad_desc();
    add(DNNL_ARG_DIFF_DST, false, g.dst, pd.diff_dst_desc());
    add(DNNL_ARG_SRC, false, g.src, pd.src_desc());
    add(DNNL_ARG_DIFF_WEIGHTS, true, g.wei, pd.diff_weights_desc());
    break;
  }
  }
  e.ok = true;
}

/// Creates the described primitive and its operands' reorders.
void create(Entry &e) {
  e.prim = dnnl::primitive(e.pd);
  for (auto &op : e.operands) {
    if (!op->reordered())
      continue;
    using Reorder = dnnl::reorder::primitive_desc;
    if (op->output)
      op->toPlain = dnnl::reorder(
          Reorder(engine(), op->taken, engine(), op->plain));
    else
      op->toTaken = dnnl::reorder(
          Reorder(engine(), op->plain, engine(), op->taken));
  }
}

/// The primitives made so far, by pass, layout and geometry, and the
/// buffers of their reordered operands and scratchpads, shared by all (so
/// as large as the largest call's, not the sum). Calls hold the lock
/// through execution.
std::mutex cacheMutex;
std::map<std::vector<int64_t>, std::unique_ptr<Entry>> cache;
Workspace workspaces[kOneDnnWorkspaces]; // operands, then the scratchpad

/// The output gradient the last call reordered, when that call was a
/// backward pass: where in the program it was, the layout it took (in
/// workspaces[0], operand 0 of both backward passes), and which call.
struct ReorderedOutputGrad {
  const void *plain = nullptr;
  memory::desc taken;
  size_t workspace = 0;
  uint64_t call = 0;
};
ReorderedOutputGrad lastOutputGrad;
uint64_t calls = 0; // executes so far

/// The entry of a call, described on first use and, when `run`, created
/// (its primitive and reorders) on the first call that runs it. Called
/// with cacheMutex held. oneDNN sizes a scratchpad for the threads
/// (omp_get_max_threads) when it describes the primitive, so they are part
/// of the key.
Entry &lookup(ConvPass pass, OneDnnLayout layout, const Shape &xShape,
              const Shape &wShape, const Shape &yShape, const int64_t *strides,
              const int64_t *pads, const int64_t *dilations, int64_t group,
              bool bias, bool run = true) {
  Geometry g = geometryOf(xShape, wShape, yShape, strides, pads, dilations,
                          group);
  std::vector<int64_t> key = {static_cast<int64_t>(pass),
                              static_cast<int64_t>(layout), bias, group,
                              omp_get_max_threads()};
  for (const Dims *d : {&g.src, &g.wei, &g.dst, &g.strides, &g.dilations,
                        &g.padL, &g.padR}) {
    key.push_back(static_cast<int64_t>(d->size()));
    key.insert(key.end(), d->begin(), d->end());
  }
  std::unique_ptr<Entry> &slot = cache[key];
  // No implementation (or a geometry oneDNN refuses): the caller computes
  // this one with im2col, and so does every later call.
  if (!slot) {
    slot = std::make_unique<Entry>();
    try {
      describe(*slot, pass, g, bias, layout);
    } catch (const dnnl::error &) {
      *slot = Entry();
    }
  }
  if (slot->ok && run && !slot->prim) {
    try {
      create(*slot);
      ++detail::oneDnnPrimitiveCount;
    } catch (const dnnl::error &) {
      *slot = Entry();
    }
  }
  // A geometry oneDNN has no Winograd kernel for runs its direct ones.
  if (!slot->ok && layout == OneDnnLayout::Winograd)
    return lookup(pass, OneDnnLayout::Blocked, xShape, wShape, yShape, strides,
                  pads, dilations, group, bias, run);
  return *slot;
}

/// Reorders of up to this many bytes run on the calling thread alone. A
/// reorder is a copy, 15-60 us for the activations and (cropped) weights of
/// ResNet-18 at 32x32; on more threads each is a parallel region of its
/// own, which wakes the sleeping threads (OMP_WAIT_POLICY=PASSIVE, 25-50 us
/// per region on the 2-core dev machine) for a share of that copy: three
/// such regions per call made oneDNN's part of the step no faster on 2
/// threads than on 1.
constexpr size_t kSerialReorderBytes = size_t{2} << 20;

/// Runs a reorder, on this thread alone where it is small. oneDNN's
/// OpenMP build sizes each parallel region by omp_get_max_threads().
void runReorder(dnnl::primitive &reorder, dnnl::stream &s, const memory &from,
                const memory &to) {
  OmpThreads threads(from.get_desc().get_size() <= kSerialReorderBytes
                         ? 1
                         : omp_get_max_threads());
  reorder.execute(s, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

/// Runs the entry on the program's tensors: inputs reordered into the
/// primitive's layouts, outputs back into the program's. reuseOutputGrad:
/// the output gradient holds what the previous call reordered, if that
/// call read it (oneDnnConvGradWeight's afterGradInput).
void execute(Entry &e, const std::map<int, const void *> &pointers,
             bool reuseOutputGrad = false) {
  dnnl::engine &eng = engine();
  dnnl::stream &s = stream();
  std::unordered_map<int, memory> args;
  std::vector<std::pair<Operand *, memory>> outputs;
  ++calls;
  for (size_t i = 0; i < e.operands.size(); ++i) {
    Operand *op = e.operands[i].get();
    const void *plain = pointers.at(op->arg);
    memory user(op->plain, eng, const_cast<void *>(plain));
    if (!op->reordered()) {
      args.emplace(op->arg, user);
      continue;
    }
    memory mine(op->taken, eng, workspaces[i].get(op->taken.get_size()));
    bool outputGrad = op->arg == DNNL_ARG_DIFF_DST;
    bool reordered =
        outputGrad && reuseOutputGrad && lastOutputGrad.call + 1 == calls &&
        lastOutputGrad.plain == plain && lastOutputGrad.workspace == i &&
        lastOutputGrad.taken == op->taken;
    if (op->output)
      outputs.emplace_back(op, user);
    else if (!reordered)
      runReorder(op->toTaken, s, user, mine);
    if (outputGrad)
      lastOutputGrad = {plain, op->taken, i, calls};
    args.emplace(op->arg, mine);
  }
  if (size_t bytes = e.scratchDesc.get_size())
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(e.scratchDesc, eng,
                        workspaces[kScratchpadWorkspace].get(bytes)));
  e.prim.execute(s, args);
  for (auto &[op, user] : outputs)
    runReorder(op->toPlain, s, args.at(op->arg), user);
  s.wait();
}

} // namespace

bool oneDnnConv(const float *x, const Shape &xShape, const float *w,
                const Shape &wShape, const float *bias, const int64_t *strides,
                const int64_t *pads, const int64_t *dilations, int64_t group,
                float *y, const Shape &yShape, OneDnnLayout layout) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  Entry &e = lookup(ConvPass::Forward, layout, xShape, wShape, yShape, strides,
                    pads, dilations, group, bias != nullptr);
  if (!e.ok)
    return false;
  std::map<int, const void *> p = {
      {DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}};
  if (bias)
    p[DNNL_ARG_BIAS] = bias;
  execute(e, p);
  return true;
}

bool oneDnnConvGradInput(const float *dy, const Shape &yShape, const float *w,
                         const Shape &wShape, const int64_t *strides,
                         const int64_t *pads, const int64_t *dilations,
                         int64_t group, float *dx, const Shape &xShape,
                         OneDnnLayout layout) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  Entry &e = lookup(ConvPass::GradInput, layout, xShape, wShape, yShape,
                    strides, pads, dilations, group, false);
  if (!e.ok)
    return false;
  execute(e, {{DNNL_ARG_DIFF_DST, dy},
              {DNNL_ARG_WEIGHTS, w},
              {DNNL_ARG_DIFF_SRC, dx}});
  return true;
}

bool oneDnnConvGradWeight(const float *dy, const Shape &yShape, const float *x,
                          const Shape &xShape, const int64_t *strides,
                          const int64_t *pads, const int64_t *dilations,
                          int64_t group, float *dw, const Shape &wShape,
                          OneDnnLayout layout, bool afterGradInput) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  Entry &e = lookup(ConvPass::GradWeight, layout, xShape, wShape, yShape,
                    strides, pads, dilations, group, false);
  if (!e.ok)
    return false;
  execute(
      e,
      {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_WEIGHTS, dw}},
      afterGradInput);
  return true;
}

const char *oneDnnImplementation(ConvPass pass, const Shape &xShape,
                                 const Shape &wShape, const Shape &yShape,
                                 const int64_t *strides, const int64_t *pads,
                                 const int64_t *dilations, int64_t group,
                                 bool hasBias, OneDnnLayout layout) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  Entry &e = lookup(pass, layout, xShape, wShape, yShape, strides, pads,
                    dilations, group, hasBias, /*run=*/false);
  return e.impl.c_str();
}

bool oneDnnConvWorkspaces(ConvPass pass, const Shape &xShape,
                          const Shape &wShape, const Shape &yShape,
                          const int64_t *strides, const int64_t *pads,
                          const int64_t *dilations, int64_t group, bool hasBias,
                          OneDnnLayout layout, int threads,
                          int64_t (&bytes)[kOneDnnWorkspaces]) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  OmpThreads scope(threads);
  Entry &e = lookup(pass, layout, xShape, wShape, yShape, strides, pads,
                    dilations, group, hasBias, /*run=*/false);
  std::fill(std::begin(bytes), std::end(bytes), 0);
  if (!e.ok)
    return false;
  for (size_t i = 0; i < e.operands.size(); ++i)
    if (e.operands[i]->reordered())
      bytes[i] = workspaceSize(e.operands[i]->taken.get_size());
  bytes[kScratchpadWorkspace] = workspaceSize(e.scratchDesc.get_size());
  return true;
}

} // namespace cleave::rt
