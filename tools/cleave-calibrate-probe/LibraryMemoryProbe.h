//===- LibraryMemoryProbe.h - memory MPI keeps for itself -------*- C++ -*-===//
//
// Part of `cleave-calibrate-probe`: how far a rank's resident set rises
// while the runtime's collectives and pipeline hand-overs run their first
// messages, beyond the buffers the runtime itself maps (which the planner
// predicts). That rise is the MPI library's own: its request and fragment
// lists, grown in chunks as messages are in flight, the shared-memory
// fragments a message passes through, messages that arrive before their
// receive is posted, and the communication thread's stack. No plan holds
// it; the planner adds it to every plan of more than one rank.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_LIBRARYMEMORYPROBE_H
#define CLEAVE_TOOLS_LIBRARYMEMORYPROBE_H

#include "runtime/Mesh.h"

#include <cstdint>

namespace cleave::probe {

/// The most any rank's resident set rose (file-backed pages and the
/// runtime's collective buffers excepted) while the ranks of `all` ran
/// all-reduce buckets, reduce-scatters and all-gathers, and each sent
/// messages ahead of its neighbour's receives, as a pipeline stage does,
/// with compute between them as a step has. Measured with the meter of
/// `--print-memory-peak`, after what a program's start-up communicates:
/// it must run before anything else communicates (MPI grows its lists
/// once; `cleave-calibrate-probe --library-memory` runs it alone). Every
/// rank returns the same number.
int64_t measureLibraryMemory(rt::AxisGroup all);

} // namespace cleave::probe

#endif // CLEAVE_TOOLS_LIBRARYMEMORYPROBE_H
