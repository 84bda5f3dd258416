//===- CudaElementwise.cuh - broadcasting elementwise ops ------*- CUDA -*-===//
//
// Part of the Cleave runtime's cuda backend: mapUnary, mapBinary and
// mapTernary of Elementwise.h, with the same arguments, on device memory.
// Templates over the body functor, so generated programs include this and
// nvcc instantiates one kernel per (op, types) they use.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CUDA_CUDAELEMENTWISE_CUH
#define CLEAVE_RUNTIME_CUDA_CUDAELEMENTWISE_CUH

#include "runtime/BroadcastBodies.h"
#include "runtime/cuda/Launch.cuh"

namespace cleave::rt::cuda {

template <typename In, typename Out, typename F>
void mapUnary(const In *x, Out *y, int64_t n, F f) {
  launch(n, body::MapUnaryItems<F, In, Out>{x, y, f});
}

template <typename A, typename B, typename Out, typename F>
void mapBinary(const A *a, const Shape &aShape, const B *b, const Shape &bShape,
               Out *out, const Shape &outShape, F f) {
  launch(outShape.numElements(),
         body::MapBinaryItems<F, A, B, Out>{
             a, body::BroadcastIndex(aShape, outShape), b,
             body::BroadcastIndex(bShape, outShape), out, f});
}

template <typename A, typename B, typename C, typename Out, typename F>
void mapTernary(const A *a, const Shape &aShape, const B *b,
                const Shape &bShape, const C *c, const Shape &cShape, Out *out,
                const Shape &outShape, F f) {
  launch(outShape.numElements(),
         body::MapTernaryItems<F, A, B, C, Out>{
             a, body::BroadcastIndex(aShape, outShape), b,
             body::BroadcastIndex(bShape, outShape), c,
             body::BroadcastIndex(cShape, outShape), out, f});
}

} // namespace cleave::rt::cuda

#endif // CLEAVE_RUNTIME_CUDA_CUDAELEMENTWISE_CUH
