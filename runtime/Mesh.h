//===- Mesh.h - the device mesh a distributed program runs on ---*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). A program compiled with
// --mesh runs as one MPI process per device of the mesh; this file maps MPI
// ranks to mesh coordinates and owns the communicators of the axis groups
// the collectives (Collectives.h) run over.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_MESH_H
#define CLEAVE_RUNTIME_MESH_H

#include <cstdint>

namespace cleave::rt {

constexpr int kMaxMeshAxes = 4;

/// The mesh a program was compiled for: named axes, major to minor. A
/// program without a mesh has numAxes 0 and runs as a single process.
struct MeshSpec {
  int numAxes;
  const char *const *axisNames;
  const int64_t *axisSizes;
};

/// An ordered list of mesh axis indices, major to minor: the group {tp, dp}
/// numbers its members coord(tp) * size(dp) + coord(dp), and a ring over it
/// visits them in that order. count 0 is the trivial group (this rank
/// alone).
struct AxisGroup {
  int8_t axes[kMaxMeshAxes];
  int8_t count;
};

/// Starts MPI and builds the communicator of every group of the mesh. Ranks
/// map to mesh coordinates row-major (the last axis fastest). If mpirun
/// started a number of ranks other than the mesh's, every rank exits with
/// status 1 after rank 0 says so. Does nothing (and never touches MPI) when
/// the spec has no axes. `argc`/`argv` go to MPI_Init_thread.
void initMesh(const MeshSpec &spec, int &argc, char **&argv);
/// Waits for every started collective and shuts MPI down; does nothing
/// without a mesh.
void finalizeMesh();

/// This rank's coordinate along mesh axis `axis`.
int meshCoord(int axis);
int worldRank();
int worldSize();
/// Whether this is world rank 0, the rank that logs and writes files.
bool isMeshRoot();

/// The number of ranks in `group` (1 for the trivial group).
int groupSize(AxisGroup group);
/// This rank's index in `group`, major to minor over its axes.
int groupRank(AxisGroup group);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_MESH_H
