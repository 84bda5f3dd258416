//===- KernelInstantiations.h - kernel templates' types ---------*- C++ -*-===//
//
// Part of the Cleave runtime. The explicit instantiations of the templates
// of KernelApi.inc, written once for both targets: the cpu kernels
// (Kernels<Family>.cpp, in cleave::rt) and the cuda ones
// (cuda/Kernels<Family>.cu, in cleave::rt::cuda) expand the same lists
// after their definitions, so that a type generated programs call is
// instantiated on both or neither.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELINSTANTIATIONS_H
#define CLEAVE_RUNTIME_KERNELINSTANTIATIONS_H

#include <cstdint>

/// X(T) for each element type a tensor may have (DType).
#define CLEAVE_FOR_EACH_ELEMENT_TYPE(X)                                        \
  X(float) X(double) X(int64_t) X(int32_t) X(bool)

/// X(I) for each type of class labels and gather indices.
#define CLEAVE_FOR_EACH_INDEX_TYPE(X) X(int64_t) X(int32_t)

/// The data-movement kernels of element type T.
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

/// The gather gradient of index type I.
#define CLEAVE_INSTANTIATE_GATHER_GRAD(I)                                      \
  template void gatherGrad<I>(const float *, const I *, int64_t, int, float *, \
                              const Shape &);

/// The losses of label type I.
#define CLEAVE_INSTANTIATE_LOSS(I)                                             \
  template void softmaxCrossEntropy<I>(const float *, const Shape &,           \
                                       const I *, const float *, Reduction,    \
                                       bool, int64_t, float *, float *);       \
  template void softmaxCrossEntropyGrad<I>(                                    \
      const float *, const float *, const Shape &, const I *, const float *,   \
      Reduction, bool, int64_t, float *);                                      \
  template void nllLoss<I>(const float *, const Shape &, const I *,            \
                           const float *, Reduction, bool, int64_t, float *);  \
  template void nllLossGrad<I>(const float *, const Shape &, const I *,        \
                               const float *, Reduction, bool, int64_t,        \
                               float *);

#endif // CLEAVE_RUNTIME_KERNELINSTANTIATIONS_H
