//===- BlasPackingProbe.h - measures OpenBLAS's packing blocking -*- C++
//-*-===//
//
// `cleave-calibrate-probe --blas-packing`: the blocking of OpenBLAS's
// level-3 driver on this machine (runtime/BlasPacking.h), fitted to the
// pages a few products touch in its buffer, each product in a process of
// its own, then checked on products of other shapes. Run by `cleave
// calibrate` without mpirun.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_BLASPACKINGPROBE_H
#define CLEAVE_TOOLS_BLASPACKINGPROBE_H

namespace cleave::probe {

/// Prints one JSON line: {"panel_rows": P, "panel_depth": Q,
/// "narrow_columns": W, "small_product": S, "checks": [[predicted,
/// measured], ...]}, or {"error": "why"} where the products do not follow
/// the model. Returns the exit code.
int runBlasPackingProbe();

} // namespace cleave::probe

#endif // CLEAVE_TOOLS_BLASPACKINGPROBE_H
