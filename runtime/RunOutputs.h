//===- RunOutputs.h - the files a training run reads and keeps --*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). The values a run starts
// from (--init, --resume), the checkpoints it saves (--checkpoint-dir), and
// what it writes at the end (--dump-params, --export-onnx, --dump-outputs,
// --dump-local). Checkpoint.h and Export.h hold the file formats.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_RUNOUTPUTS_H
#define CLEAVE_RUNTIME_RUNOUTPUTS_H

#include "runtime/DriverOptions.h"
#include "runtime/RunReports.h"
#include "runtime/TensorStore.h"

#include <cstdint>

namespace cleave::rt {

/// Loads --init, then the latest checkpoint of --resume, over the initial
/// values; returns the step the run starts at (0 unless resumed).
int64_t restoreValues(const RunOptions &options, TensorStore &store);

/// --checkpoint-dir: a checkpoint every --checkpoint-every steps and after
/// the last.
class Checkpointer {
public:
  Checkpointer(const RunOptions &options, TensorStore &store)
      : options(options), store(store) {}

  /// Saves the checkpoint after `step` when one is due; the log reaches
  /// the disk first.
  void afterStep(int64_t step, RunReports &reports);

private:
  const RunOptions &options;
  TensorStore &store;
  bool saved = false;
};

/// Writes the parameters, the trained model and the outputs as the options
/// ask, once the steps are done.
void writeFinalOutputs(const Program &program, const RunOptions &options,
                       TensorStore &store);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_RUNOUTPUTS_H
