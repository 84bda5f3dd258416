//===- Shape.h - static tensor shapes for the runtime -----------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR), shared by generated
// programs of every target.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SHAPE_H
#define CLEAVE_RUNTIME_SHAPE_H

#include "runtime/HostDevice.h"

#include <cstdint>
#include <initializer_list>

namespace cleave::rt {

constexpr int kMaxRank = 8;

/// A row-major tensor shape of rank <= kMaxRank.
struct Shape {
  int rank = 0;
  int64_t dims[kMaxRank] = {};

  Shape() = default;
  // constexpr: the tables of generated programs are constants, not code
  // run at start-up (which g++ compiles slowly for thousands of rows).
  constexpr Shape(std::initializer_list<int64_t> list) {
    for (int64_t d : list)
      dims[rank++] = d;
  }
  CLEAVE_HD int64_t operator[](int i) const { return dims[i]; }
  CLEAVE_HD int64_t numElements() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= dims[i];
    return n;
  }
  /// Product of dims [begin, end).
  CLEAVE_HD int64_t product(int begin, int end) const {
    int64_t n = 1;
    for (int i = begin; i < end; ++i)
      n *= dims[i];
    return n;
  }
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_SHAPE_H
