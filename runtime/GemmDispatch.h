//===- GemmDispatch.h - which kernel runs a product -------------*- C++ -*-===//
//
// Part of the Cleave runtime, shared with the planner: plain C++, header
// only. gemm() (KernelsLinalg.cpp) runs a product on the skinny kernel
// (SkinnyGemm.h) where that pays, else on OpenBLAS, single-threaded, split
// into one block of C per OpenMP thread where the product is large enough.
// The planner predicts OpenBLAS's packing buffers (BlasPacking.h) from the
// same rules.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_GEMMDISPATCH_H
#define CLEAVE_RUNTIME_GEMMDISPATCH_H

#include <algorithm>
#include <cstdint>

namespace cleave::rt {

/// The smallest product (m * n * k) split over the OpenMP threads: 2^22,
/// 8 MFLOP, about 35 us on one core. Each parallel region wakes the
/// sleeping threads (the benchmarks' OMP_WAIT_POLICY=PASSIVE) and waits
/// for the last of them: 25-50 us per region on the 2-core dev machine
/// (a VM), which a smaller product does not earn back. (It was 2^18,
/// OpenBLAS's own threading threshold; mlp-512's 10-class layer then took
/// 5 us on one thread and 50-60 on two.)
constexpr int64_t kThreadedProduct = int64_t{1} << 22;

/// Rows of x per tile of the skinny kernels: two AVX vectors.
constexpr int64_t kSkinnyTileRows = 16;
/// Rows of w per tile of the skinny kernels.
constexpr int64_t kSkinnyWeightRows = 6;

/// The shapes on which skinnyGemmXWt beats OpenBLAS (where it is built).
/// Timed against OpenBLAS split over the same 2 OpenMP threads (README.md,
/// Benchmarks): from 2^22 weights (16 MB) this kernel is faster whether w
/// comes from cache or from memory; below, a w read from memory favours
/// OpenBLAS. Rows are computed 16 at a time, so more than an eighth of
/// padding (24 rows: parity) loses, and from 40 rows OpenBLAS's blocking
/// wins.
inline bool skinnyGemmShapePays(int64_t rows, int64_t n, int64_t k) {
  int64_t padded =
      (rows + kSkinnyTileRows - 1) / kSkinnyTileRows * kSkinnyTileRows;
  return rows > 0 && rows <= 32 && 8 * rows >= 7 * padded &&
         n * k >= (int64_t{1} << 22) && n >= 64 && k >= 64;
}

/// The shapes on which skinnyLinearBackward beats OpenBLAS's two calls
/// split over the same 2 threads (README.md, Benchmarks); its tiles are
/// whole 16-column tiles.
inline bool skinnyBackwardShapePays(int64_t rows, int64_t n, int64_t k) {
  return rows >= 16 && rows <= 32 && k % kSkinnyTileRows == 0 && k >= 64 &&
         n * k >= (int64_t{1} << 22);
}

/// The rows [first, last) (columns where !byRows) of C the `t`-th of `team`
/// threads computes when gemm() splits an m x n product: whole rows when C
/// is tall, else columns in multiples of 16 (whole cache lines).
struct GemmSplit {
  bool byRows;
  int64_t extent, grain;
  GemmSplit(int64_t m, int64_t n)
      : byRows(m >= n), extent(byRows ? m : n), grain(byRows ? 1 : 16) {}
  int64_t first(int64_t t, int64_t team) const {
    int64_t units = (extent + grain - 1) / grain;
    return std::min(extent, units * t / team * grain);
  }
  int64_t last(int64_t t, int64_t team) const { return first(t + 1, team); }
};

/// The floats of the buffers the skinny kernels keep (SkinnyGemm.cpp), each
/// as large as its largest call's, for the run: a kernel workspace
/// (KernelWorkspaces.h) the planner predicts from these. skinnyGemmXWt:
/// x^T padded to whole tiles on the calling thread, and each of `team`
/// threads its rows of y^T; skinnyLinearBackward: dy^T twice (plain and
/// scaled) and x in column tiles on the calling thread, and each thread
/// its column tiles of dx.
struct SkinnyBuffers {
  static int64_t padded(int64_t rows) {
    return (rows + kSkinnyTileRows - 1) / kSkinnyTileRows * kSkinnyTileRows;
  }
  static int64_t forwardXt(int64_t rows, int64_t k) { return k * padded(rows); }
  static int64_t forwardYt(int64_t rows, int64_t n, int64_t t, int64_t team) {
    int64_t groups = (n + kSkinnyWeightRows - 1) / kSkinnyWeightRows;
    int64_t first = std::min(n, groups * t / team * kSkinnyWeightRows);
    int64_t last = std::min(n, groups * (t + 1) / team * kSkinnyWeightRows);
    return (last - first) * padded(rows);
  }
  static int64_t backwardDyt(int64_t rows, int64_t n) { return 2 * n * rows; }
  static int64_t backwardXt(int64_t rows, int64_t k) { return k * rows; }
  static int64_t backwardDxt(int64_t rows, int64_t k, int64_t t, int64_t team) {
    int64_t tiles = k / kSkinnyTileRows;
    return (tiles * (t + 1) / team - tiles * t / team) * rows * kSkinnyTileRows;
  }
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_GEMMDISPATCH_H
