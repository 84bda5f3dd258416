//===- Sharding.h - local blocks of split tensors ---------------*- C++ -*-===//
//
// Part of the Cleave runtime. A generated program describes each tensor of
// a distributed step by its local shape and its sharding text ("[dp,_]":
// per dimension '_', an axis or {a,b}, as in the compiler's hints). These
// helpers find a rank's block of the global tensor, cut it out of a global
// buffer (initial values, data batches, loaded checkpoints) and assemble the
// global tensor from every rank's block (dumps, checkpoints, export).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SHARDING_H
#define CLEAVE_RUNTIME_SHARDING_H

#include "runtime/Mesh.h"
#include "runtime/Shape.h"

#include <string>
#include <vector>

namespace cleave::rt {

/// Per dimension, the ordered mesh axes it is split over.
struct TensorSharding {
  AxisGroup dims[kMaxRank] = {};
  bool isReplicated() const;
};

/// Parses `text` (null or "" means replicated) against the mesh axes.
bool parseSharding(const char *text, const MeshSpec &mesh, int rank,
                   TensorSharding &sharding, std::string &error);

/// The global shape of a tensor whose local shape is `local`.
Shape globalShape(const Shape &local, const TensorSharding &sharding,
                  const MeshSpec &mesh);

/// The block a rank with mesh coordinates `coords` holds along a dimension
/// split over `group`: its index in the group, axes major to minor.
int64_t blockIndex(const AxisGroup &group, const MeshSpec &mesh,
                   const int *coords);

/// Copies between a global buffer and the local block of the rank with
/// mesh coordinates `coords` (toLocal: global -> local).
void copyBlock(char *global, const Shape &global_shape, char *local,
               const Shape &local_shape, const TensorSharding &sharding,
               const MeshSpec &mesh, const int *coords, int64_t elementBytes,
               bool toLocal);

/// The group of every rank: all mesh axes in order (group rank = world
/// rank).
AxisGroup allAxes(const MeshSpec &mesh);

/// The row-major mesh coordinates of world rank `rank`.
std::vector<int> meshCoordsOf(const MeshSpec &mesh, int rank);

/// The global tensor assembled from the blocks of `group`'s ranks, on the
/// group's first rank only (its coordinates on the group's axes all 0),
/// block by block: the others send their blocks and never hold the whole
/// tensor. `coords` are this rank's. The sharding may only use the group's
/// axes (all of them for a tensor split over the whole mesh; the axes
/// other than the pipeline's for one held by one stage).
void gatherGlobalToFirst(const char *local, const Shape &localShape,
                         const TensorSharding &sharding, const MeshSpec &mesh,
                         const int *coords, AxisGroup group,
                         int64_t elementBytes, char *global);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_SHARDING_H
