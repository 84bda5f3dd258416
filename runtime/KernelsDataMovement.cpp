//===- KernelsDataMovement.cpp - copies, permutations, gathers ------------===//
//
// Part of the Cleave runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/DataMovementBodies.h"
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

/// Copies a tile of single elements, src[i + j * colStride] to
/// dst[i * rowStride + j]. Where the written rows lie a tile or more apart
/// and farther than the read columns, it writes row by row: column by
/// column, a tile's rows (4 KB apart on [12, 1024] -> [1024, 12]) fall in
/// one cache set and evict each other. (Not inlined: inside the tile loop
/// it ran short of registers and 1.7x slower.)
template <typename T>
[[gnu::noinline]] void copyElementTile(const T *src, int64_t colStride, T *dst,
                                       int64_t rowStride, int64_t rows,
                                       int64_t cols) {
  if (rowStride >= colStride && rowStride >= 32) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        dst[i * rowStride + j] = src[i + j * colStride];
  } else {
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i)
        dst[i * rowStride + j] = src[i + j * colStride];
  }
}

/// The same for runs of `run` contiguous elements at any steps.
template <typename T>
[[gnu::noinline]] void copyRunTile(const T *src, int64_t readStep,
                                   int64_t colStride, T *dst, int64_t rowStride,
                                   int64_t writeStep, int64_t run, int64_t rows,
                                   int64_t cols) {
  auto copyRun = [&](int64_t i, int64_t j) {
    const T *from = src + i * readStep + j * colStride;
    T *to = dst + i * rowStride + j * writeStep;
    for (int64_t e = 0; e < run; ++e)
      to[e] = from[e];
  };
  if (rowStride >= colStride && rowStride >= 32) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        copyRun(i, j);
  } else {
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i)
        copyRun(i, j);
  }
}

/// The loop and base offset that read `in` at offsets + i * strides.
detail::StridedLoop<1> sliceLoop(const Shape &inShape, const int64_t *offsets,
                                 const int64_t *strides, const Shape &outShape,
                                 int64_t &base) {
  int64_t inStrides[kMaxRank];
  body::rowMajorStrides(inShape, inStrides);
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
void detail::copyStrided(const T *in, const int64_t *inStrides,
                         const Shape &shape, T *out,
                         const int64_t *outStrides) {
  int64_t n = shape.numElements();
  if (n == 0)
    return;
  // Loop over the dims in the order of the written strides, largest first,
  // so that the innermost dim is the one written most densely.
  int order[kMaxRank];
  for (int i = 0; i < shape.rank; ++i)
    order[i] = i;
  std::stable_sort(order, order + shape.rank,
                   [&](int x, int y) { return outStrides[x] > outStrides[y]; });
  detail::StridedLoop<2> loop;
  loop.rank = shape.rank;
  for (int i = 0; i < shape.rank; ++i) {
    loop.dims[i] = shape.dims[order[i]];
    loop.strides[0][i] = inStrides[order[i]];
    loop.strides[1][i] = outStrides[order[i]];
  }
  loop.coalesce();
  int r = loop.rank;
  const int64_t *from = loop.strides[0], *to = loop.strides[1];

  // Elements are copied in runs: the innermost dim where it is contiguous
  // on both sides, else one element. Of the dims of runs, the innermost is
  // the one written most densely; if another is read more densely, going
  // along the written one reads far apart (a page apart on attention's
  // [12, 128 x 8] -> [128, 12 x 8], where rows then share one cache set
  // and evict each other), so copy tiles of the two instead.
  bool contiguousRuns = from[r - 1] == 1 && to[r - 1] == 1;
  int64_t run = contiguousRuns ? loop.dims[r - 1] : 1;
  int q = contiguousRuns ? r - 1 : r, across = q - 1, along = -1;
  for (int d = 0; d + 1 < q; ++d)
    if (from[d] < from[across] && (along < 0 || from[d] < from[along]))
      along = d;
  if (along < 0) {
    // Row by row, each thread's rows in one range, walked with a counter
    // rather than a division per row (rows are often a few elements long).
    int64_t inner = loop.inner(), rows = loop.rows();
    int64_t readStep = from[r - 1], writeStep = to[r - 1];
#pragma omp parallel if (n > kParallelGrain)
    {
      int threads = detail::numThreads(), thread = detail::threadNum();
      int64_t row = rows * thread / threads,
              end = rows * (thread + 1) / threads;
      int64_t index[kMaxRank] = {}, off[2];
      loop.rowOffsets(row, off);
      for (int64_t d = r - 2, rest = row; d >= 0; --d) {
        index[d] = rest % loop.dims[d];
        rest /= loop.dims[d];
      }
      for (; row < end; ++row) {
        const T *src = in + off[0];
        T *dst = out + off[1];
        if (readStep == 1 && writeStep == 1)
          std::copy(src, src + inner, dst);
        else
          for (int64_t i = 0; i < inner; ++i)
            dst[i * writeStep] = src[i * readStep];
        for (int d = r - 2; d >= 0; --d) {
          off[0] += from[d];
          off[1] += to[d];
          if (++index[d] < loop.dims[d])
            break;
          off[0] -= from[d] * loop.dims[d];
          off[1] -= to[d] * loop.dims[d];
          index[d] = 0;
        }
      }
    }
    return;
  }

  // Tiles of about 32 x 32 elements: `rows` along the densely read dim,
  // `cols` along the densely written one.
  int64_t rows = loop.dims[along], cols = loop.dims[across];
  int64_t rowStride = to[along], colStride = from[across];
  int64_t readStep = from[along], writeStep = to[across];
  int64_t outer = n / (rows * cols * run);
  int64_t tile = std::max<int64_t>(4, 32 / run);
  int64_t rowTiles = (rows + tile - 1) / tile;
  int64_t colTiles = (cols + tile - 1) / tile;
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
  for (int64_t t = 0; t < outer * rowTiles * colTiles; ++t) {
    int64_t o = t / (rowTiles * colTiles);
    int64_t i0 = (t / colTiles) % rowTiles * tile;
    int64_t j0 = t % colTiles * tile;
    int64_t inBase = 0, outBase = 0, rest = o;
    for (int d = q - 2; d >= 0; --d) {
      if (d == along)
        continue;
      int64_t index = rest % loop.dims[d];
      inBase += index * from[d];
      outBase += index * to[d];
      rest /= loop.dims[d];
    }
    int64_t tileRows = std::min(i0 + tile, rows) - i0;
    int64_t tileCols = std::min(j0 + tile, cols) - j0;
    const T *src = in + inBase + i0 * readStep + j0 * colStride;
    T *dst = out + outBase + i0 * rowStride + j0 * writeStep;
    if (run == 1 && readStep == 1 && writeStep == 1)
      copyElementTile(src, colStride, dst, rowStride, tileRows, tileCols);
    else
      copyRunTile(src, readStep, colStride, dst, rowStride, writeStep, run,
                  tileRows, tileCols);
  }
}

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
  int64_t inStrides[kMaxRank], outStrides[kMaxRank], permuted[kMaxRank];
  body::rowMajorStrides(inShape, inStrides);
  Shape outShape;
  outShape.rank = inShape.rank;
  for (int i = 0; i < inShape.rank; ++i) {
    outShape.dims[i] = inShape.dims[perm[i]];
    permuted[i] = inStrides[perm[i]];
  }
  body::rowMajorStrides(outShape, outStrides);
  detail::copyStrided(in, permuted, outShape, out, outStrides);
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

// The products' gathers (KernelsLinalg.cpp); transpose's are implicit.
template void detail::copyStrided<float>(const float *, const int64_t *,
                                         const Shape &, float *,
                                         const int64_t *);
CLEAVE_FOR_EACH_ELEMENT_TYPE(CLEAVE_INSTANTIATE_DATA_MOVEMENT)
CLEAVE_FOR_EACH_INDEX_TYPE(CLEAVE_INSTANTIATE_GATHER_GRAD)

} // namespace cleave::rt
