//===- MemoryPlan.h - static scratch memory for a training step -*- C++ -*-===//

#ifndef CLEAVE_CODEGEN_MEMORYPLAN_H
#define CLEAVE_CODEGEN_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <vector>

namespace mlir::cleave {

/// Where every value of a function lives. Values that share storage with
/// another (a reshape's result, an optimizer's in-place update, the sum over
/// ranks of a value read by nothing else, a GEMM adding to a matrix nothing
/// else reads, a gradient GEMM run in its SGD update, a ReLU of a value
/// nothing else reads) map to that
/// value in `storageOf`; the remaining op results get an offset in one
/// scratch arena, reused once a value's last reader has run (liveness in
/// program order, first-fit placement, 64-byte alignment).
struct MemoryPlan {
  llvm::DenseMap<Value, Value> storageOf;
  /// Gradient GEMMs that run inside the plain SGD update they feed
  /// (param += -lr * alpha * a * b, one GEMM with beta 1 on the parameter):
  /// GEMM -> update. The gradient is never stored.
  llvm::DenseMap<Operation *, Operation *> gemmInUpdate;
  /// Slices of whole leading rows of a step input (a micro-batch's rows of
  /// the batch): views of the input, not placed. Value -> the input and the
  /// offset of the rows in elements.
  llvm::DenseMap<Value, std::pair<Value, int64_t>> rowsOfInput;
  llvm::DenseMap<Value, int64_t> arenaOffset;
  int64_t arenaBytes = 0;
  /// Of the buffers live when the arena reached its peak, the bytes of
  /// those holding parameter gradients (what an optimizer update reads,
  /// and what a collective reduced into it): the report's split of the
  /// scratch arena into gradients and activations.
  int64_t gradientBytesAtPeak = 0;

  /// The value whose buffer `value` uses (itself when not an alias).
  Value root(Value value) const {
    while (Value next = storageOf.lookup(value))
      value = next;
    return value;
  }
};

struct FusionPlan;

/// Plans `func`'s single block. Constants, arguments and rows of inputs are
/// not placed, nor the results of ops `fusion` runs inside a later op
/// (FusionPlan::fusedAway: values held in registers, transposes read
/// through strides). `fusion.executedAt` maps ops whose operands are read
/// up to a later op (a fused loop's members, run at its tail; a collective
/// started early and finished there) to that op: their operands stay live
/// until it. In a program split into pipeline stages, plans the ops of
/// `stage` (-1: all ops).
MemoryPlan planMemory(func::FuncOp func, const FusionPlan &fusion,
                      int64_t stage = -1);

/// planMemory of every stage of a step split into `numStages` pipeline
/// stages (one plan, of all ops, when `numStages` is 1), with what every
/// stage shares planned once: the same arenas and offsets, but each
/// stage's plan holds the storage of that stage's values only.
std::vector<MemoryPlan> planMemoryOfStages(func::FuncOp func,
                                           const FusionPlan &fusion,
                                           int64_t numStages);

/// Bytes of a statically shaped tensor.
int64_t tensorBytes(Type type);

/// The most device memory any op of `func` borrows for the length of its
/// call on the cuda target (reduction partials, workspaces, staging), by
/// the bounds of runtime/cuda/KernelScratch.h: the kernel-scratch region
/// at the end of the device block.
int64_t kernelScratchBytes(func::FuncOp func);

} // namespace mlir::cleave

#endif // CLEAVE_CODEGEN_MEMORYPLAN_H
