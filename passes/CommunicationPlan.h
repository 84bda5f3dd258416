//===- CommunicationPlan.h - bytes each rank sends per step -----*- C++ -*-===//
//
// Predicts, from a partitioned program, how many bytes every rank sends per
// training step for each kind of collective. The formulas are those of the
// runtime's collectives (runtime/CommVolume.h), so `cleave compile
// --print-comm` and the program's `--print-comm` counters must agree to the
// byte.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_COMMUNICATIONPLAN_H
#define CLEAVE_PASSES_COMMUNICATIONPLAN_H

#include "dialects/cleave/CleaveOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include "runtime/CollectiveKind.h"

#include <array>
#include <vector>

namespace mlir::cleave {

/// Bytes per collective kind, indexed by rt::CollectiveKind.
using BytesByKind = std::array<int64_t, ::cleave::rt::kNumCollectiveKinds>;

/// One entry per world rank (the module must have a mesh). `ringOnly`:
/// every all-reduce is a ring (NCCL, on the cuda target), none recursive
/// doubling.
std::vector<BytesByKind> predictBytesSent(func::FuncOp func,
                                          bool ringOnly = false);

/// The bytes the rank at mesh coordinates `coords` sends in the collective
/// `op` (0 for an op of another pipeline stage than `stage`, -1: none),
/// the formulas predictBytesSent sums. Sets `kind` (the index in
/// BytesByKind) for collectives and leaves it for other ops.
int64_t bytesSentBy(Operation *op, MeshAttr mesh, ArrayRef<int64_t> coords,
                    int64_t stage, bool ringOnly, int &kind);

/// Prints the prediction in the format of the program's --print-comm.
void printBytesSent(ArrayRef<BytesByKind> bytes, llvm::raw_ostream &os);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_COMMUNICATIONPLAN_H
