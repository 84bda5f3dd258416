//===- GlobalTensors.h - a distributed program's tensors --------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The generated table
// describes each rank's block of a tensor; files (initial values, data,
// --init, checkpoints, dumps, export) hold whole tensors. This is the view
// with global shapes, and how a rank finds its block in a whole tensor.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_GLOBALTENSORS_H
#define CLEAVE_RUNTIME_GLOBALTENSORS_H

#include "runtime/Program.h"
#include "runtime/Sharding.h"

#include <cstdint>
#include <vector>

namespace cleave::rt {

/// The global view of a distributed program's tensors: the table with
/// global shapes, for everything that reads or writes whole tensors.
/// Built once the mesh is up.
struct GlobalTensors {
  std::vector<TensorSpec> specs;
  std::vector<TensorSharding> shardings;
  std::vector<int> coords;
  /// The program with the global table.
  Program program;
  const TensorSpec *localTensors;
  bool distributed;
  /// This rank's pipeline stage; -1 when the step is not split in stages.
  int stage = -1;

  explicit GlobalTensors(const Program &local);

  /// Whether this rank writes the files of the run (rank 0, or the only
  /// rank).
  bool isRoot() const { return !distributed || isMeshRoot(); }
  /// Whether this rank is its pipeline stage's first (coordinate 0 on every
  /// other axis): the root, or the only rank, when there are no stages.
  bool isFirstOfStage() const;
  /// This rank and those that differ from it only in the pipeline stage.
  AxisGroup pipelineGroup() const;
  /// This rank and those of its stage: every mesh axis but the pipeline's.
  AxisGroup stageGroup() const;
  /// Whether tensor `i` lives in one pipeline stage only.
  bool isStaged(int i) const { return stage >= 0 && specs[i].stage >= 0; }
  /// Whether this rank holds (a block of) tensor `i`.
  bool holds(int i) const { return !isStaged(i) || specs[i].stage == stage; }
  /// The bytes of tensor `i` on this rank.
  int64_t localBytes(int i) const {
    return holds(i) ? localShape(i).numElements() * dtypeSize(specs[i].dtype)
                    : 0;
  }
  /// The bytes of the whole tensor `i`.
  int64_t wholeBytes(int i) const {
    return specs[i].shape.numElements() * dtypeSize(specs[i].dtype);
  }
  /// Whether ranks hold different parts of tensor `i`, so that reading or
  /// writing it whole goes through toLocal and gatherToRoot.
  bool isSplit(int i) const {
    return distributed && (!shardings[i].isReplicated() || isStaged(i));
  }
  /// Where this rank's block of tensor `i` is whole rows of the global
  /// tensor (no dimension but the first split), the first of them; -1
  /// where another dimension is split.
  int64_t firstLocalRow(int i) const;
  /// The rows (first dimension) of this rank's block of tensor `i`; 1 for
  /// a 0-d tensor.
  int64_t localRows(int i) const {
    return localShape(i).rank ? localShape(i).dims[0] : 1;
  }
  /// Copies this rank's block of tensor `i` out of `global`.
  void toLocal(int i, const char *global, void *local) const;
  /// Assembles the whole tensor `i` in rank 0's `whole` from every rank's
  /// block at `local` (every rank takes part; only rank 0 holds it whole,
  /// the others send their blocks).
  void gatherToRoot(int i, const void *local, void *whole) const;
  /// The block's shape: the generated table's own.
  const Shape &localShape(int i) const { return localTensors[i].shape; }
};

/// Every rank learns whether all ranks succeeded, so that an error on one
/// (rank 0 writing a file, say) ends all of them instead of leaving the
/// others waiting in a collective.
bool allSucceeded(bool ok, const GlobalTensors &global);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_GLOBALTENSORS_H
