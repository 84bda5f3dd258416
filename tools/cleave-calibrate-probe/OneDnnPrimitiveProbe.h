//===- OneDnnPrimitiveProbe.h - memory of oneDNN's primitives ---*- C++ -*-===//
//
// `cleave-calibrate-probe --onednn-primitives T`: what oneDNN keeps for
// each convolution primitive the runtime creates (the primitive and its
// operands' reorders: their objects and the code oneDNN generates for this
// CPU), beyond the workspaces the planner predicts apart. No plan holds it;
// the planner counts it per primitive a rank creates. Run by `cleave
// calibrate` without mpirun.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_ONEDNNPRIMITIVEPROBE_H
#define CLEAVE_TOOLS_ONEDNNPRIMITIVEPROBE_H

namespace cleave::probe {

/// Runs the three passes of a few convolutions through the runtime's oneDNN
/// path on `threads` OpenMP threads and prints one JSON line:
/// {"primitive_bytes": B, "primitives": N, "rise": R}: the resident set's
/// rise R (the workspaces' bytes excepted, oneDNN's first-use state
/// included, as a program pays it once) over the N primitives created, B
/// = R / N; or {"error": "why"}. Returns the exit code.
int runOneDnnPrimitiveProbe(int threads);

} // namespace cleave::probe

#endif // CLEAVE_TOOLS_ONEDNNPRIMITIVEPROBE_H
