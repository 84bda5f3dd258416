//===- DataMovementBodies.h - work items of copies and gathers --*- C++ -*-===//
//
// Part of the Cleave runtime. The cuda target's broadcasts, transposes,
// concatenations, splits, slices and gathers (cuda/KernelsDataMovement.cu),
// one functor per kernel phase, work item i writing one element. Shapes are
// turned into strides on the host by the static make functions below, which
// the cuda kernels and the shared-body tests both call, so that the tests
// check exactly what the GPU is given. Free of anything device code cannot
// call.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DATAMOVEMENTBODIES_H
#define CLEAVE_RUNTIME_DATAMOVEMENTBODIES_H

#include "runtime/HostDevice.h"
#include "runtime/Shape.h"

#include <cstdint>

namespace cleave::body {

//===----------------------------------------------------------------------===//
// Helpers shared by the bodies headers
//===----------------------------------------------------------------------===//

/// *dst += v where several work items may add to one element: atomic on the
/// device; runOnHost runs the items one at a time, so a plain add there.
CLEAVE_HD inline void atomicAccumulate(float *dst, float v) {
#ifdef __CUDA_ARCH__
  atomicAdd(dst, v);
#else
  *dst += v;
#endif
}

/// out[i] = 0: the first phase of the kernels that then add into `out`.
template <typename T> struct FillZero {
  T *out;

  CLEAVE_HD void operator()(int64_t i) const { out[i] = T(0); }
};

/// Negative axes count from the back, as the cpu kernels' normalizeAxis.
inline int normalizeAxis(int axis, int rank) {
  return axis < 0 ? axis + rank : axis;
}

inline void rowMajorStrides(const rt::Shape &shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape.dims[i];
  }
}

//===----------------------------------------------------------------------===//
// Strided copies: broadcastTo, transpose, slice, sliceGrad
//===----------------------------------------------------------------------===//

/// Where element i of a row-major iteration space lives in another buffer:
/// base + sum_d idx_d * strides[d], idx the multi-index of i in `dims`.
/// Adjacent dims that step through memory as one are merged on the host
/// (as the cpu's StridedLoop::coalesce does), since every dim costs each
/// work item a 64-bit division.
struct StridedIndex {
  int rank = 0;
  int64_t dims[rt::kMaxRank] = {};
  int64_t strides[rt::kMaxRank] = {};
  int64_t base = 0;

  CLEAVE_HD int64_t operator()(int64_t i) const {
    int64_t offset = base;
    for (int d = rank - 1; d >= 0; --d) {
      offset += i % dims[d] * strides[d];
      i /= dims[d];
    }
    return offset;
  }

  /// The number of work items, the iteration space's size.
  int64_t numItems() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d)
      n *= dims[d];
    return n;
  }

  /// Reads `inShape` numpy-broadcast to `outShape` (missing and size-1
  /// dims stride 0).
  static StridedIndex broadcast(const rt::Shape &inShape,
                                const rt::Shape &outShape) {
    StridedIndex s;
    s.rank = outShape.rank;
    int64_t stride = 1;
    for (int i = outShape.rank - 1, j = inShape.rank - 1; i >= 0; --i, --j) {
      s.dims[i] = outShape.dims[i];
      if (j < 0 || inShape.dims[j] == 1) {
        s.strides[i] = 0;
        continue;
      }
      s.strides[i] = stride;
      stride *= inShape.dims[j];
    }
    s.coalesce();
    return s;
  }

  /// Reads `inShape` so that result dim i is input dim perm[i].
  static StridedIndex transpose(const rt::Shape &inShape, const int64_t *perm) {
    int64_t inStrides[rt::kMaxRank];
    rowMajorStrides(inShape, inStrides);
    StridedIndex s;
    s.rank = inShape.rank;
    for (int i = 0; i < inShape.rank; ++i) {
      s.dims[i] = inShape.dims[perm[i]];
      s.strides[i] = inStrides[perm[i]];
    }
    s.coalesce();
    return s;
  }

  /// Element offsets + idx * strides of `inShape` for idx in `outShape`
  /// (cleave.slice; strides may be negative).
  static StridedIndex slice(const rt::Shape &inShape, const int64_t *offsets,
                            const int64_t *strides, const rt::Shape &outShape) {
    int64_t inStrides[rt::kMaxRank];
    rowMajorStrides(inShape, inStrides);
    StridedIndex s;
    s.rank = outShape.rank;
    for (int i = 0; i < outShape.rank; ++i) {
      s.dims[i] = outShape.dims[i];
      s.strides[i] = strides[i] * inStrides[i];
      s.base += offsets[i] * inStrides[i];
    }
    s.coalesce();
    return s;
  }

  /// Drops size-1 dims and merges a dim into the one before it when the
  /// two walk memory as a single dim. Leaves numItems() unchanged.
  void coalesce() {
    int r = 0;
    for (int i = 0; i < rank; ++i) {
      if (dims[i] == 1)
        continue;
      if (r > 0 && strides[r - 1] == strides[i] * dims[i]) {
        dims[r - 1] *= dims[i];
        strides[r - 1] = strides[i];
        continue;
      }
      dims[r] = dims[i];
      strides[r] = strides[i];
      ++r;
    }
    rank = r;
  }
};

/// out[i] = in[src(i)]: broadcastTo, transpose and slice, one work item per
/// output element. The reads of a transpose are not coalesced; a tiled
/// shared-memory transpose would be the next step if it shows in profiles.
template <typename T> struct StridedCopy {
  const T *in;
  T *out;
  StridedIndex src;

  CLEAVE_HD void operator()(int64_t i) const { out[i] = in[src(i)]; }
};

/// The second phase of sliceGrad, after FillZero on dIn: dIn[dst(i)] +=
/// dOut[i] per dOut element. Slice positions are distinct, so no two items
/// touch one element and no atomics are needed.
struct SliceGradAdd {
  const float *dOut;
  float *dIn;
  StridedIndex dst;

  CLEAVE_HD void operator()(int64_t i) const { dIn[dst(i)] += dOut[i]; }
};

//===----------------------------------------------------------------------===//
// concat and split
//===----------------------------------------------------------------------===//

/// Copies `rows` rows of `rowLength` elements between buffers of different
/// row pitches: dst[r * dstPitch + j] = src[r * srcPitch + j]. One launch
/// per input of a concat (into its slab of each output row) or per output
/// of a split, so the device needs no table of pointers.
template <typename T> struct RowBlockCopy {
  const T *src;
  T *dst;
  int64_t rows;
  int64_t rowLength;
  int64_t srcPitch;
  int64_t dstPitch;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t r = i / rowLength, j = i % rowLength;
    dst[r * dstPitch + j] = src[r * srcPitch + j];
  }

  int64_t numItems() const { return rows * rowLength; }

  /// The copy of input `index` of concat(inputs, shapes, count, axis, out).
  static RowBlockCopy concatPiece(const T *const *inputs,
                                  const rt::Shape *shapes, int count, int axis,
                                  int index, T *out) {
    const rt::Shape &first = shapes[0];
    axis = normalizeAxis(axis, first.rank);
    int64_t inner = first.product(axis + 1, first.rank);
    int64_t rowSize = 0, start = 0;
    for (int i = 0; i < count; ++i) {
      if (i == index)
        start = rowSize;
      rowSize += shapes[i].dims[axis] * inner;
    }
    RowBlockCopy copy;
    copy.src = inputs[index];
    copy.dst = out + start;
    copy.rows = first.product(0, axis);
    copy.rowLength = shapes[index].dims[axis] * inner;
    copy.srcPitch = copy.rowLength;
    copy.dstPitch = rowSize;
    return copy;
  }

  /// The copy into output `index` of split(in, inShape, axis, sizes, ...).
  static RowBlockCopy splitPiece(const T *in, const rt::Shape &inShape,
                                 int axis, const int64_t *sizes, int index,
                                 T *out) {
    axis = normalizeAxis(axis, inShape.rank);
    int64_t inner = inShape.product(axis + 1, inShape.rank);
    int64_t start = 0;
    for (int i = 0; i < index; ++i)
      start += sizes[i] * inner;
    RowBlockCopy copy;
    copy.src = in + start;
    copy.dst = out;
    copy.rows = inShape.product(0, axis);
    copy.rowLength = sizes[index] * inner;
    copy.srcPitch = inShape.dims[axis] * inner;
    copy.dstPitch = copy.rowLength;
    return copy;
  }
};

//===----------------------------------------------------------------------===//
// gather and gatherGrad
//===----------------------------------------------------------------------===//

/// An ONNX Gather index, negative ones counted from the end; -1 when out of
/// range. The cpu kernel exits on such an index; a work item cannot, so the
/// GPU path does not check: gather writes 0 and gatherGrad drops the
/// gradient.
template <typename I>
CLEAVE_HD int64_t gatherPosition(I index, int64_t axisSize) {
  int64_t idx = static_cast<int64_t>(index);
  if (idx < 0)
    idx += axisSize;
  return idx < 0 || idx >= axisSize ? -1 : idx;
}

/// The [outer, axis, inner] view of a gather's data around `axis`.
struct GatherDims {
  int64_t outer;
  int64_t axisSize;
  int64_t inner;
  int64_t numIndices;

  static GatherDims make(const rt::Shape &dataShape, int axis,
                         int64_t numIndices) {
    axis = normalizeAxis(axis, dataShape.rank);
    return {dataShape.product(0, axis), dataShape.dims[axis],
            dataShape.product(axis + 1, dataShape.rank), numIndices};
  }

  /// Elements of the gathered tensor, [outer, numIndices, inner].
  int64_t numItems() const { return outer * numIndices * inner; }
};

/// out[o, j, r] = data[o, indices[j], r], one work item per output element.
template <typename T, typename I> struct Gather {
  const T *data;
  const I *indices;
  T *out;
  GatherDims dims;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t r = i % dims.inner, t = i / dims.inner;
    int64_t o = t / dims.numIndices, j = t % dims.numIndices;
    int64_t idx = gatherPosition(indices[j], dims.axisSize);
    out[i] = idx < 0 ? T(0) : data[(o * dims.axisSize + idx) * dims.inner + r];
  }
};

/// The second phase of gatherGrad, after FillZero on dData: dData[o,
/// indices[j], r] += dOut[o, j, r] per dOut element. Repeated indices add
/// into one element, hence the atomics (and a summation order on the GPU
/// that differs from run to run in the last bits).
template <typename I> struct GatherGradAdd {
  const float *dOut;
  const I *indices;
  float *dData;
  GatherDims dims;

  CLEAVE_HD void operator()(int64_t i) const {
    int64_t r = i % dims.inner, t = i / dims.inner;
    int64_t o = t / dims.numIndices, j = t % dims.numIndices;
    int64_t idx = gatherPosition(indices[j], dims.axisSize);
    if (idx >= 0)
      atomicAccumulate(dData + (o * dims.axisSize + idx) * dims.inner + r,
                       dOut[i]);
  }
};

} // namespace cleave::body

#endif // CLEAVE_RUNTIME_DATAMOVEMENTBODIES_H
