//===- Elementwise.h - broadcasting elementwise loops (cpu) -----*- C++ -*-===//
//
// Part of the Cleave runtime. Applies a functor of ElementwiseBodies.h over
// tensors with numpy broadcasting: operands of lower rank are right-aligned
// and size-1 dims repeat.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_ELEMENTWISE_H
#define CLEAVE_RUNTIME_ELEMENTWISE_H

#include "runtime/HostDevice.h"
#include "runtime/Shape.h"

#include <cstdint>

namespace cleave::rt {
namespace detail {

/// Below this many elements a loop stays on one thread; thread start-up
/// costs more than it saves.
constexpr int64_t kParallelGrain = 1 << 15;

/// A row-major iteration space (the output's, contiguous) and the strides of
/// N operands over it. coalesce() drops size-1 dims and merges neighbours
/// that every operand walks contiguously, so that the innermost loop is as
/// long as possible.
template <int N> struct StridedLoop {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};

  /// Row-major element strides of `shape` right-aligned to rank `outRank`,
  /// 0 for broadcast (size-1 or missing) dims.
  static void broadcastStrides(const Shape &shape, const Shape &out,
                               int64_t *result) {
    int64_t stride = 1;
    for (int i = out.rank - 1, j = shape.rank - 1; i >= 0; --i, --j) {
      if (j < 0 || shape.dims[j] == 1) {
        result[i] = 0;
        continue;
      }
      result[i] = stride;
      stride *= shape.dims[j];
    }
  }

  /// The loop that broadcasts each of `operands` to `out`.
  static StridedLoop broadcast(const Shape &out, const Shape *const *operands) {
    StridedLoop loop;
    loop.rank = out.rank;
    for (int i = 0; i < out.rank; ++i)
      loop.dims[i] = out.dims[i];
    for (int k = 0; k < N; ++k)
      broadcastStrides(*operands[k], out, loop.strides[k]);
    loop.coalesce();
    return loop;
  }

  void coalesce() {
    int r = 0;
    for (int i = 0; i < rank; ++i) {
      if (dims[i] == 1)
        continue;
      bool merge = r > 0;
      for (int k = 0; k < N && merge; ++k)
        merge = strides[k][r - 1] == strides[k][i] * dims[i];
      if (merge) {
        dims[r - 1] *= dims[i];
        for (int k = 0; k < N; ++k)
          strides[k][r - 1] = strides[k][i];
        continue;
      }
      dims[r] = dims[i];
      for (int k = 0; k < N; ++k)
        strides[k][r] = strides[k][i];
      ++r;
    }
    if (r == 0) {
      // A single element: one row of length 1.
      dims[0] = 1;
      for (int k = 0; k < N; ++k)
        strides[k][0] = 0;
      r = 1;
    }
    rank = r;
  }

  int64_t inner() const { return dims[rank - 1]; }
  int64_t innerStride(int k) const { return strides[k][rank - 1]; }
  int64_t rows() const {
    int64_t n = 1;
    for (int i = 0; i + 1 < rank; ++i)
      n *= dims[i];
    return n;
  }

  /// Operand offsets of the first element of row `row`.
  void rowOffsets(int64_t row, int64_t *offsets) const {
    for (int k = 0; k < N; ++k)
      offsets[k] = 0;
    for (int i = rank - 2; i >= 0; --i) {
      int64_t idx = row % dims[i];
      row /= dims[i];
      for (int k = 0; k < N; ++k)
        offsets[k] += idx * strides[k][i];
    }
  }
};

} // namespace detail

// Operands are read through loadElement (HostDevice.h), which vectorizes
// loops over bool operands. The maps are not inlined: a step calls each instantiation (an element
// type and a body) from many places, and g++ would otherwise compile its
// loops once per call (the step's compile time, not its speed: the loops
// take their sizes at run time either way).

/// y[i] = f(x[i]) for i in [0, n).
template <typename In, typename Out, typename F>
[[gnu::noinline]] void mapUnary(const In *x, Out *y, int64_t n, F f) {
#pragma omp parallel for simd schedule(static) if (parallel : n > detail::kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    y[i] = f(loadElement(x, i));
}

/// out = f(a, b) with a and b numpy-broadcast to outShape.
template <typename A, typename B, typename Out, typename F>
[[gnu::noinline]] void mapBinary(const A *a, const Shape &aShape, const B *b, const Shape &bShape,
               Out *out, const Shape &outShape, F f) {
  int64_t n = outShape.numElements();
  if (n == 0)
    return;
  int64_t na = aShape.numElements(), nb = bShape.numElements();
  // Fast paths: an operand with as many elements as the output has the
  // output's layout; a one-element operand is a scalar.
  if (na == n && nb == n) {
#pragma omp parallel for simd schedule(static) if (parallel : n > detail::kParallelGrain)
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(loadElement(a, i), loadElement(b, i));
    return;
  }
  if (na == n && nb == 1) {
    B bv = b[0];
#pragma omp parallel for simd schedule(static) if (parallel : n > detail::kParallelGrain)
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(loadElement(a, i), bv);
    return;
  }
  if (na == 1 && nb == n) {
    A av = a[0];
#pragma omp parallel for simd schedule(static) if (parallel : n > detail::kParallelGrain)
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(av, loadElement(b, i));
    return;
  }

  const Shape *operands[2] = {&aShape, &bShape};
  auto loop = detail::StridedLoop<2>::broadcast(outShape, operands);
  int64_t inner = loop.inner(), rows = loop.rows();
  int64_t sa = loop.innerStride(0), sb = loop.innerStride(1);
#pragma omp parallel for schedule(static) if (n > detail::kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off[2];
    loop.rowOffsets(r, off);
    const A *pa = a + off[0];
    const B *pb = b + off[1];
    Out *po = out + r * inner;
    if (sa == 1 && sb == 1) {
      CLEAVE_SIMD
      for (int64_t i = 0; i < inner; ++i)
        po[i] = f(loadElement(pa, i), loadElement(pb, i));
    } else if (sa == 1 && sb == 0) {
      B bv = *pb;
      CLEAVE_SIMD
      for (int64_t i = 0; i < inner; ++i)
        po[i] = f(loadElement(pa, i), bv);
    } else if (sa == 0 && sb == 1) {
      A av = *pa;
      CLEAVE_SIMD
      for (int64_t i = 0; i < inner; ++i)
        po[i] = f(av, loadElement(pb, i));
    } else {
      CLEAVE_SIMD
      for (int64_t i = 0; i < inner; ++i)
        po[i] = f(loadElement(pa, i * sa), loadElement(pb, i * sb));
    }
  }
}

/// out = f(a, b, c) with all three numpy-broadcast to outShape (Where).
template <typename A, typename B, typename C, typename Out, typename F>
[[gnu::noinline]] void mapTernary(const A *a, const Shape &aShape, const B *b,
                const Shape &bShape, const C *c, const Shape &cShape, Out *out,
                const Shape &outShape, F f) {
  int64_t n = outShape.numElements();
  if (n == 0)
    return;
  if (aShape.numElements() == n && bShape.numElements() == n &&
      cShape.numElements() == n) {
#pragma omp parallel for simd schedule(static) if (parallel : n > detail::kParallelGrain)
    for (int64_t i = 0; i < n; ++i)
      out[i] = f(loadElement(a, i), loadElement(b, i), loadElement(c, i));
    return;
  }

  const Shape *operands[3] = {&aShape, &bShape, &cShape};
  auto loop = detail::StridedLoop<3>::broadcast(outShape, operands);
  int64_t inner = loop.inner(), rows = loop.rows();
  int64_t sa = loop.innerStride(0), sb = loop.innerStride(1),
          sc = loop.innerStride(2);
#pragma omp parallel for schedule(static) if (n > detail::kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off[3];
    loop.rowOffsets(r, off);
    const A *pa = a + off[0];
    const B *pb = b + off[1];
    const C *pc = c + off[2];
    Out *po = out + r * inner;
    // A mask's Where: condition and one value along the row, the other a
    // scalar (contiguous loads, not gathers).
    if (sa == 1 && sb == 1 && sc == 0) {
      C cv = *pc;
      CLEAVE_SIMD
      for (int64_t i = 0; i < inner; ++i)
        po[i] = f(loadElement(pa, i), loadElement(pb, i), cv);
    } else if (sa == 1 && sb == 0 && sc == 1) {
      B bv = *pb;
      CLEAVE_SIMD
      for (int64_t i = 0; i < inner; ++i)
        po[i] = f(loadElement(pa, i), bv, loadElement(pc, i));
    } else {
      CLEAVE_SIMD
      for (int64_t i = 0; i < inner; ++i)
        po[i] = f(loadElement(pa, i * sa), loadElement(pb, i * sb),
                    loadElement(pc, i * sc));
    }
  }
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_ELEMENTWISE_H
