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
#include "runtime/KernelInstantiations.h"

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

CLEAVE_FOR_EACH_ELEMENT_TYPE(CLEAVE_INSTANTIATE_DATA_MOVEMENT)
CLEAVE_FOR_EACH_INDEX_TYPE(CLEAVE_INSTANTIATE_GATHER_GRAD)

} // namespace cleave::rt::cuda
