//===- KernelsDataMovement.cpp - copies, permutations, gathers ------------===//
//
// Part of the Cleave runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/Elementwise.h"
#include "runtime/KernelInstantiations.h"
#include "runtime/KernelSupport.h"
#include "runtime/Kernels.h"

#include <algorithm>
#include <cstring>

namespace cleave::rt {
namespace {

using detail::kParallelGrain;

/// An ONNX Gather index, negative ones counted from the end; out of range is
/// bad data, reported as gather's error.
template <typename I>
int64_t gatherIndex(I index, int64_t axisSize) {
  int64_t idx = static_cast<int64_t>(index);
  if (idx < 0)
    idx += axisSize;
  if (idx < 0 || idx >= axisSize)
    detail::fatal("gather index %lld out of range [-%lld, %lld)",
                  static_cast<long long>(index),
                  static_cast<long long>(axisSize),
                  static_cast<long long>(axisSize));
  return idx;
}

/// Copies a strided source into a contiguous destination row by row.
template <typename T>
void stridedCopy(const T *in, const detail::StridedLoop<1> &loop, T *out,
                 int64_t total) {
  int64_t inner = loop.inner(), rows = loop.rows();
  int64_t s = loop.innerStride(0);
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off;
    loop.rowOffsets(r, &off);
    const T *src = in + off;
    T *dst = out + r * inner;
    if (s == 1)
      std::copy(src, src + inner, dst);
    else if (s == 0)
      std::fill(dst, dst + inner, *src);
    else
      for (int64_t i = 0; i < inner; ++i)
        dst[i] = src[i * s];
  }
}

void rowMajorStrides(const Shape &shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape.dims[i];
  }
}

/// The loop and base offset that read `in` at offsets + i * strides.
detail::StridedLoop<1> sliceLoop(const Shape &inShape, const int64_t *offsets,
                                 const int64_t *strides, const Shape &outShape,
                                 int64_t &base) {
  int64_t inStrides[kMaxRank];
  rowMajorStrides(inShape, inStrides);
  detail::StridedLoop<1> loop;
  loop.rank = outShape.rank;
  base = 0;
  for (int i = 0; i < outShape.rank; ++i) {
    loop.dims[i] = outShape.dims[i];
    loop.strides[0][i] = strides[i] * inStrides[i];
    base += offsets[i] * inStrides[i];
  }
  loop.coalesce();
  return loop;
}

} // namespace

template <typename T>
void broadcastTo(const T *in, const Shape &inShape, T *out,
                 const Shape &outShape) {
  int64_t n = outShape.numElements();
  if (n == 0)
    return;
  const Shape *operands[1] = {&inShape};
  auto loop = detail::StridedLoop<1>::broadcast(outShape, operands);
  stridedCopy(in, loop, out, n);
}

template <typename T>
void transpose(const T *in, const Shape &inShape, const int64_t *perm, T *out) {
  int64_t n = inShape.numElements();
  if (n == 0)
    return;
  int64_t inStrides[kMaxRank];
  rowMajorStrides(inShape, inStrides);
  detail::StridedLoop<1> loop;
  loop.rank = inShape.rank;
  for (int i = 0; i < inShape.rank; ++i) {
    loop.dims[i] = inShape.dims[perm[i]];
    loop.strides[0][i] = inStrides[perm[i]];
  }
  loop.coalesce();

  // A strided innermost read (e.g. swapping the last two dims) thrashes the
  // cache: copy tiles of the innermost dim and the one with unit input
  // stride instead, wherever that one is.
  int r = loop.rank, unit = -1;
  for (int d = 0; d + 1 < r; ++d)
    if (loop.strides[0][d] == 1)
      unit = d;
  if (r >= 2 && loop.strides[0][r - 1] != 1 && unit >= 0) {
    int64_t outStrides[kMaxRank];
    for (int64_t d = r - 1, s = 1; d >= 0; --d) {
      outStrides[d] = s;
      s *= loop.dims[d];
    }
    int64_t rows = loop.dims[unit], cols = loop.dims[r - 1];
    int64_t rowStride = outStrides[unit], colStride = loop.strides[0][r - 1];
    int64_t outer = n / (rows * cols);
    constexpr int64_t kTile = 32;
    int64_t rowTiles = (rows + kTile - 1) / kTile;
    int64_t colTiles = (cols + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
    for (int64_t t = 0; t < outer * rowTiles * colTiles; ++t) {
      int64_t o = t / (rowTiles * colTiles);
      int64_t i0 = (t / colTiles) % rowTiles * kTile;
      int64_t j0 = t % colTiles * kTile;
      int64_t inBase = 0, outBase = 0, rest = o;
      for (int d = r - 2; d >= 0; --d) {
        if (d == unit)
          continue;
        int64_t index = rest % loop.dims[d];
        inBase += index * loop.strides[0][d];
        outBase += index * outStrides[d];
        rest /= loop.dims[d];
      }
      const T *src = in + inBase;
      T *dst = out + outBase;
      int64_t i1 = std::min(i0 + kTile, rows), j1 = std::min(j0 + kTile, cols);
      // Where the written rows lie a tile or more apart and farther than
      // the read columns, write row by row: column by column, a tile's
      // rows (4 KB apart on [12, 1024] -> [1024, 12]) fall in one cache
      // set and evict each other.
      if (rowStride >= colStride && rowStride >= kTile) {
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j)
            dst[i * rowStride + j] = src[i + j * colStride];
      } else {
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i)
            dst[i * rowStride + j] = src[i + j * colStride];
      }
    }
    return;
  }
  stridedCopy(in, loop, out, n);
}

template <typename T>
void concat(const T *const *inputs, const Shape *shapes, int count, int axis,
            T *out) {
  const Shape &first = shapes[0];
  axis = detail::normalizeAxis(axis, first.rank);
  int64_t outer = first.product(0, axis);
  int64_t inner = first.product(axis + 1, first.rank);
  int64_t rowSize = 0;
  for (int i = 0; i < count; ++i)
    rowSize += shapes[i].dims[axis] * inner;
  if (outer * rowSize == 0)
    return;
#pragma omp parallel for schedule(static) if (outer * rowSize > kParallelGrain)
  for (int64_t o = 0; o < outer; ++o) {
    T *dst = out + o * rowSize;
    for (int i = 0; i < count; ++i) {
      int64_t chunk = shapes[i].dims[axis] * inner;
      const T *src = inputs[i] + o * chunk;
      std::copy(src, src + chunk, dst);
      dst += chunk;
    }
  }
}

template <typename T>
void split(const T *in, const Shape &inShape, int axis, const int64_t *sizes,
           int count, T *const *outs) {
  axis = detail::normalizeAxis(axis, inShape.rank);
  int64_t outer = inShape.product(0, axis);
  int64_t inner = inShape.product(axis + 1, inShape.rank);
  int64_t rowSize = inShape.dims[axis] * inner;
  if (outer * rowSize == 0)
    return;
#pragma omp parallel for schedule(static) if (outer * rowSize > kParallelGrain)
  for (int64_t o = 0; o < outer; ++o) {
    const T *src = in + o * rowSize;
    for (int i = 0; i < count; ++i) {
      int64_t chunk = sizes[i] * inner;
      std::copy(src, src + chunk, outs[i] + o * chunk);
      src += chunk;
    }
  }
}

template <typename T>
void slice(const T *in, const Shape &inShape, const int64_t *offsets,
           const int64_t *strides, T *out, const Shape &outShape) {
  int64_t n = outShape.numElements();
  if (n == 0)
    return;
  int64_t base;
  auto loop = sliceLoop(inShape, offsets, strides, outShape, base);
  stridedCopy(in + base, loop, out, n);
}

void sliceGrad(const float *dOut, const Shape &outShape, const int64_t *offsets,
               const int64_t *strides, float *dIn, const Shape &inShape) {
  std::fill(dIn, dIn + inShape.numElements(), 0.0f);
  int64_t n = outShape.numElements();
  if (n == 0)
    return;
  int64_t base;
  auto loop = sliceLoop(inShape, offsets, strides, outShape, base);
  int64_t inner = loop.inner(), rows = loop.rows(), s = loop.innerStride(0);
  // Slice positions are distinct, so rows write disjoint elements.
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off;
    loop.rowOffsets(r, &off);
    float *dst = dIn + base + off;
    const float *src = dOut + r * inner;
    for (int64_t i = 0; i < inner; ++i)
      dst[i * s] += src[i];
  }
}

template <typename T, typename I>
void gather(const T *data, const Shape &dataShape, const I *indices,
            int64_t numIndices, int axis, T *out) {
  axis = detail::normalizeAxis(axis, dataShape.rank);
  int64_t outer = dataShape.product(0, axis);
  int64_t axisSize = dataShape.dims[axis];
  int64_t inner = dataShape.product(axis + 1, dataShape.rank);
  int64_t total = outer * numIndices * inner;
  if (total == 0)
    return;
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
  for (int64_t t = 0; t < outer * numIndices; ++t) {
    int64_t o = t / numIndices, j = t % numIndices;
    int64_t idx = gatherIndex(indices[j], axisSize);
    const T *src = data + (o * axisSize + idx) * inner;
    std::copy(src, src + inner, out + t * inner);
  }
}

template <typename I>
void gatherGrad(const float *dOut, const I *indices, int64_t numIndices,
                int axis, float *dData, const Shape &dataShape) {
  std::fill(dData, dData + dataShape.numElements(), 0.0f);
  axis = detail::normalizeAxis(axis, dataShape.rank);
  int64_t outer = dataShape.product(0, axis);
  int64_t axisSize = dataShape.dims[axis];
  int64_t inner = dataShape.product(axis + 1, dataShape.rank);
  int64_t total = outer * numIndices * inner;
  if (total == 0)
    return;
  // Repeated indices collide within one outer slice, so threads split the
  // outer slices, or the inner dim when there is a single slice (an
  // embedding table).
  int64_t innerChunks = outer == 1 ? std::max<int64_t>(1, inner / 256) : 1;
  int64_t chunk = (inner + innerChunks - 1) / innerChunks;
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
  for (int64_t t = 0; t < outer * innerChunks; ++t) {
    int64_t o = t / innerChunks;
    int64_t c0 = t % innerChunks * chunk;
    int64_t c1 = std::min(c0 + chunk, inner);
    for (int64_t j = 0; j < numIndices; ++j) {
      int64_t idx = gatherIndex(indices[j], axisSize);
      const float *src = dOut + (o * numIndices + j) * inner;
      float *dst = dData + (o * axisSize + idx) * inner;
      for (int64_t i = c0; i < c1; ++i)
        dst[i] += src[i];
    }
  }
}

//===----------------------------------------------------------------------===//
// Instantiations
//===----------------------------------------------------------------------===//

CLEAVE_FOR_EACH_ELEMENT_TYPE(CLEAVE_INSTANTIATE_DATA_MOVEMENT)
CLEAVE_FOR_EACH_INDEX_TYPE(CLEAVE_INSTANTIATE_GATHER_GRAD)

} // namespace cleave::rt
