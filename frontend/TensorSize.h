//===- TensorSize.h - element counts that cannot overflow -------*- C++ -*-===//
//
// Every element count the importer computes from a model's dims goes
// through checkedElementCount, so that a shape such as [2^32, 2^32] is
// refused instead of wrapping to 0 elements; with at most 2^48 elements a
// tensor's byte size (and every offset later passes and the runtime
// compute from it) stays far from int64 overflow.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_TENSORSIZE_H
#define CLEAVE_FRONTEND_TENSORSIZE_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>

namespace cleave::frontend {

/// The most elements one tensor may have.
constexpr int64_t kMaxTensorElements = int64_t(1) << 48;

/// The number of elements of a tensor of `dims`, or nullopt when a dim is
/// negative (dynamic) or the count exceeds kMaxTensorElements.
template <typename Dims>
std::optional<int64_t> checkedElementCount(const Dims &dims) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0)
      return std::nullopt;
    if (dim != 0 && count > kMaxTensorElements / dim)
      return std::nullopt;
    count *= dim;
  }
  return count;
}

} // namespace cleave::frontend

#endif // CLEAVE_FRONTEND_TENSORSIZE_H
