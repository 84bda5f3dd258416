//===- MeshDetail.h - what Mesh.cpp and the collectives share ---*- C++ -*-===//
//
// Part of the Cleave runtime; included by Mesh.cpp, Collectives.cpp and
// CommThread.cpp only, never by generated programs (it brings in mpi.h).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_MESHDETAIL_H
#define CLEAVE_RUNTIME_MESHDETAIL_H

#include "runtime/Mesh.h"

#include <mpi.h>

#include <string>

namespace cleave::rt::detail {

/// The communicator of a group of size > 1, whose MPI ranks are the group
/// ranks (Mesh.cpp).
MPI_Comm groupComm(AxisGroup group);
/// argv[0]'s base name, for messages (Mesh.cpp).
const char *meshProgramName();
/// The group as its axis names, "{dp}" or "{tp,dp}" (Mesh.cpp).
std::string groupName(AxisGroup group);

/// Start and stop the thread that runs asynchronous collectives
/// (CommThread.cpp). stopCommThread runs the queued collectives to the end
/// first.
void startCommThread();
void stopCommThread();
/// Waits until every rank of the world gets here, under the collectives'
/// watchdog (CommThread.cpp).
void finalBarrier();

} // namespace cleave::rt::detail

#endif // CLEAVE_RUNTIME_MESHDETAIL_H
