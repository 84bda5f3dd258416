//===- MeshDetail.h - what Mesh.cpp and Collectives.cpp share ---*- C++ -*-===//
//
// Part of the Cleave runtime; included by Mesh.cpp and Collectives.cpp only,
// never by generated programs (it brings in mpi.h).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_MESHDETAIL_H
#define CLEAVE_RUNTIME_MESHDETAIL_H

#include "runtime/Mesh.h"

#include <mpi.h>

namespace cleave::rt::detail {

/// The communicator of a group of size > 1, whose MPI ranks are the group
/// ranks (Mesh.cpp).
MPI_Comm groupComm(AxisGroup group);

/// Start and stop the thread that runs asynchronous collectives
/// (Collectives.cpp). stopCommThread runs the queued collectives to the end
/// first.
void startCommThread();
void stopCommThread();

} // namespace cleave::rt::detail

#endif // CLEAVE_RUNTIME_MESHDETAIL_H
