//===- BroadcastBodies.h - elementwise ops as work items --------*- C++ -*-===//
//
// Part of the Cleave runtime. The cuda target runs an elementwise op as one
// work item per output element (runtime/cuda/CudaElementwise.cuh), each
// applying a functor of ElementwiseBodies.h to its operands numpy-broadcast
// to the output; the cpu target runs the same functors in the loops of
// Elementwise.h.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_BROADCASTBODIES_H
#define CLEAVE_RUNTIME_BROADCASTBODIES_H

#include "runtime/HostDevice.h"
#include "runtime/Shape.h"

#include <cstdint>

namespace cleave::body {

/// Where output element i reads an operand broadcast to the output shape:
/// operands of lower rank are right-aligned and size-1 dims repeat.
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[rt::kMaxRank] = {};
  int64_t strides[rt::kMaxRank] = {};

  BroadcastIndex(const rt::Shape &in, const rt::Shape &out) : rank(out.rank) {
    int64_t stride = 1;
    for (int i = out.rank - 1, j = in.rank - 1; i >= 0; --i, --j) {
      dims[i] = out.dims[i];
      bool repeated = j < 0 || in.dims[j] == 1;
      strides[i] = repeated ? 0 : stride;
      if (!repeated)
        stride *= in.dims[j];
    }
  }

  CLEAVE_HD int64_t offset(int64_t i) const {
    int64_t at = 0;
    for (int d = rank - 1; d >= 0; --d) {
      at += (i % dims[d]) * strides[d];
      i /= dims[d];
    }
    return at;
  }
};

/// y[i] = f(x[i]).
template <typename F, typename In, typename Out> struct MapUnaryItems {
  const In *x;
  Out *y;
  F f;
  CLEAVE_HD void operator()(int64_t i) const { y[i] = f(x[i]); }
};

/// out[i] = f(a, b) at i, a and b broadcast.
template <typename F, typename A, typename B, typename Out>
struct MapBinaryItems {
  const A *a;
  BroadcastIndex aIndex;
  const B *b;
  BroadcastIndex bIndex;
  Out *out;
  F f;
  CLEAVE_HD void operator()(int64_t i) const {
    out[i] = f(a[aIndex.offset(i)], b[bIndex.offset(i)]);
  }
};

/// out[i] = f(a, b, c) at i, all three broadcast (Where).
template <typename F, typename A, typename B, typename C, typename Out>
struct MapTernaryItems {
  const A *a;
  BroadcastIndex aIndex;
  const B *b;
  BroadcastIndex bIndex;
  const C *c;
  BroadcastIndex cIndex;
  Out *out;
  F f;
  CLEAVE_HD void operator()(int64_t i) const {
    out[i] = f(a[aIndex.offset(i)], b[bIndex.offset(i)], c[cIndex.offset(i)]);
  }
};

} // namespace cleave::body

#endif // CLEAVE_RUNTIME_BROADCASTBODIES_H
