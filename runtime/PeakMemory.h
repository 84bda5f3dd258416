//===- PeakMemory.h - the memory a rank measures it used --------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). --print-memory-peak: how
// far the process's resident set (Linux's VmRSS: the pages of RAM it has
// touched) rose above its size just before the tensors were allocated, at
// its highest (VmHWM, reset to the baseline through /proc/self/clear_refs)
// until the end of the steps. --print-memory is the compiler's prediction
// (its static plan); this is the measurement, which also shows what the
// plan does not count: the kernels' workspaces, the collectives' buffers,
// the step's inputs, OpenBLAS's packing buffers and what MPI and oneDNN
// keep for themselves (which the planner predicts beside the plan), and
// what no plan holds (kernels' per-call temporaries, the heap's
// bookkeeping). A page counts once it is touched: the scratch arena is
// mapped untouched (TensorStore.cpp), so arena pages no step writes are not
// counted. File-backed pages (the code of libraries run for the first time)
// are reported apart; they are not the program's data.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_PEAKMEMORY_H
#define CLEAVE_RUNTIME_PEAKMEMORY_H

#include <cstdint>

namespace cleave::rt {

/// The measured growth of one rank's resident set, in bytes.
struct MemoryGrowth {
  /// The high-water mark minus the baseline: everything touched since.
  int64_t peak = 0;
  /// The part of it in file-backed pages (library code paged in), as far
  /// as the end: such pages are seldom given back while a program runs.
  int64_t file = 0;
};

class PeakMemoryMeter {
public:
  /// Takes the baseline now and resets the high-water mark to it, when
  /// `enabled`; exits 1 (failRun) where /proc cannot tell (not Linux).
  explicit PeakMemoryMeter(bool enabled);

  /// Reads the high-water mark at the end of the measured part of the run.
  void stop();

  bool enabled() const { return on; }
  const MemoryGrowth &growth() const { return measured; }

private:
  bool on;
  int64_t baseResident = 0, baseFile = 0;
  MemoryGrowth measured;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_PEAKMEMORY_H
