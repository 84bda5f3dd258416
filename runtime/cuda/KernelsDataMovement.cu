//===- KernelsDataMovement.cu - copies, permutations, gathers on the GPU --===//
//
// Part of the Cleave runtime's cuda backend: the data-movement kernels of
// CudaKernels.h, each one or more launches of the work items in
// DataMovementBodies.h. The shape arithmetic happens here, on the host; the
// Shape arguments and pointer arrays are host memory, the buffers device
// memory.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/DataMovementBodies.h"

namespace cleave::rt::cuda {

using body::StridedIndex;

template <typename T>
void broadcastTo(const T *in, const Shape &inShape, T *out,
                 const Shape &outShape) {
  StridedIndex src = StridedIndex::broadcast(inShape, outShape);
  launch(src.numItems(), body::StridedCopy<T>{in, out, src});
}

template <typename T>
void transpose(const T *in, const Shape &inShape, const int64_t *perm, T *out) {
  StridedIndex src = StridedIndex::transpose(inShape, perm);
  launch(src.numItems(), body::StridedCopy<T>{in, out, src});
}

template <typename T>
void concat(const T *const *inputs, const Shape *shapes, int count, int axis,
            T *out) {
  // One launch per input, into its slab of every output row.
  for (int i = 0; i < count; ++i) {
    auto piece =
        body::RowBlockCopy<T>::concatPiece(inputs, shapes, count, axis, i, out);
    launch(piece.numItems(), piece);
  }
}

template <typename T>
void split(const T *in, const Shape &inShape, int axis, const int64_t *sizes,
           int count, T *const *outs) {
  for (int i = 0; i < count; ++i) {
    auto piece =
        body::RowBlockCopy<T>::splitPiece(in, inShape, axis, sizes, i, outs[i]);
    launch(piece.numItems(), piece);
  }
}

template <typename T>
void slice(const T *in, const Shape &inShape, const int64_t *offsets,
           const int64_t *strides, T *out, const Shape &outShape) {
  StridedIndex src = StridedIndex::slice(inShape, offsets, strides, outShape);
  launch(src.numItems(), body::StridedCopy<T>{in, out, src});
}

void sliceGrad(const float *dOut, const Shape &outShape, const int64_t *offsets,
               const int64_t *strides, float *dIn, const Shape &inShape) {
  launch(inShape.numElements(), body::FillZero<float>{dIn});
  StridedIndex dst = StridedIndex::slice(inShape, offsets, strides, outShape);
  launch(dst.numItems(), body::SliceGradAdd{dOut, dIn, dst});
}

template <typename T, typename I>
void gather(const T *data, const Shape &dataShape, const I *indices,
            int64_t numIndices, int axis, T *out) {
  auto dims = body::GatherDims::make(dataShape, axis, numIndices);
  launch(dims.numItems(), body::Gather<T, I>{data, indices, out, dims});
}

template <typename I>
void gatherGrad(const float *dOut, const I *indices, int64_t numIndices,
                int axis, float *dData, const Shape &dataShape) {
  launch(dataShape.numElements(), body::FillZero<float>{dData});
  auto dims = body::GatherDims::make(dataShape, axis, numIndices);
  launch(dims.numItems(), body::GatherGradAdd<I>{dOut, indices, dData, dims});
}

//===----------------------------------------------------------------------===//
// Instantiations
//===----------------------------------------------------------------------===//

#define CLEAVE_INSTANTIATE_DATA_MOVEMENT(T)                                    \
  template void broadcastTo<T>(const T *, const Shape &, T *, const Shape &);  \
  template void transpose<T>(const T *, const Shape &, const int64_t *, T *);  \
  template void concat<T>(const T *const *, const Shape *, int, int, T *);     \
  template void split<T>(const T *, const Shape &, int, const int64_t *, int,  \
                         T *const *);                                          \
  template void slice<T>(const T *, const Shape &, const int64_t *,            \
                         const int64_t *, T *, const Shape &);                 \
  template void gather<T, int64_t>(const T *, const Shape &, const int64_t *,  \
                                   int64_t, int, T *);                         \
  template void gather<T, int32_t>(const T *, const Shape &, const int32_t *,  \
                                   int64_t, int, T *);

CLEAVE_INSTANTIATE_DATA_MOVEMENT(float)
CLEAVE_INSTANTIATE_DATA_MOVEMENT(double)
CLEAVE_INSTANTIATE_DATA_MOVEMENT(int64_t)
CLEAVE_INSTANTIATE_DATA_MOVEMENT(int32_t)
CLEAVE_INSTANTIATE_DATA_MOVEMENT(bool)
#undef CLEAVE_INSTANTIATE_DATA_MOVEMENT

template void gatherGrad<int64_t>(const float *, const int64_t *, int64_t, int,
                                  float *, const Shape &);
template void gatherGrad<int32_t>(const float *, const int32_t *, int64_t, int,
                                  float *, const Shape &);

} // namespace cleave::rt::cuda
