//===- InputMemory.h - the memory a step's inputs hold ----------*- C++ -*-===//
//
// The memory plan places the step's intermediate values and the driver
// allocates parameters and state; the step's inputs (a batch of every graph
// input, and the step counter) sit beside both, in buffers the driver fills
// every step (runtime/DriverData.h). On the cpu target a rank holds its own
// block of each input its stage reads, the samples it copies them from
// (with --synthetic, the rows of one batch it reads; with --data, every
// input's files, on every rank), and, for an input split along another
// dimension than the batch's, one whole batch to cut its block from. On
// the cuda target the device holds the blocks, in the one device block;
// the rest is the host's.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_INPUTMEMORY_H
#define CLEAVE_PLANNER_INPUTMEMORY_H

#include "codegen/ProgramEmitter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <vector>

namespace cleave::planner {

/// The bytes a rank holds for a step's inputs: in all, and the part of
/// that the graph's inputs hold (the rest: the step counter).
struct InputBytes {
  int64_t total = 0, graphInputs = 0;
};

/// Per pipeline stage (one entry without stages), the bytes a rank of it
/// holds for `step`'s inputs on the memory `target` runs the step in (the
/// host's for the cpu target, the GPU's for cuda): as the runtime's
/// TensorStore::inputBytes plus, on the cpu target, its
/// TrainingData::heldBytes for --synthetic data.
std::vector<InputBytes> stageInputBytes(mlir::func::FuncOp step, int64_t stages,
                                        mlir::cleave::Target target);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_INPUTMEMORY_H
