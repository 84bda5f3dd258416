//===- Checkpoint.h - saving and restoring training state -------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). A checkpoint is a
// directory `step-<k>` (k steps done) holding one .npy per parameter and
// state tensor; `latest` names the newest. A checkpoint is written into a
// temporary directory, its files and the directory fsynced, then renamed
// into place; only then is `latest` replaced (written beside, fsynced,
// renamed). A killed program or a full disk never leaves a torn checkpoint,
// and `latest` always names a whole one.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_H
#define CLEAVE_RUNTIME_CHECKPOINT_H

#include "runtime/Program.h"

#include <string>

namespace cleave::rt {

/// Loads `<dir>/<name>.npy` into every parameter (required) and state
/// (optional unless `requireStates`) of `program`; checks dtype and shape.
bool loadTensors(const std::string &dir, const Program &program,
                 void *const *tensors, bool requireStates, std::string &error);

/// Writes every parameter and state (or, with `outputs`, every graph
/// output) as `<dir>/<name>.npy`, creating dir. Each file is written beside
/// its destination and all are whole on the disk before the first is
/// renamed into place, so a failure leaves an earlier dump as it was.
bool writeTensors(const std::string &dir, const Program &program,
                  void *const *tensors, bool outputs, std::string &error);

/// Writes the parameters and states after `step` completed steps and moves
/// `latest` to them; on failure `error` names the file and the OS error,
/// and `latest` still names the previous checkpoint.
bool saveCheckpoint(const std::string &dir, int64_t step,
                    const Program &program, void *const *tensors,
                    std::string &error);

/// Whether `dir` holds another run's checkpoints (a `latest` or a
/// `step-*`); `what` then says which.
bool holdsCheckpoints(const std::string &dir, std::string &what);

/// Removes every `step-<k>` in `dir` but `step-<step>` (an earlier run's,
/// under --overwrite-checkpoints, once this run's first one is saved).
bool removeOtherCheckpoints(const std::string &dir, int64_t step,
                            std::string &error);

/// Makes `dir` and takes an exclusive lock on `dir`/.lock for the rest of
/// the process, so that two runs cannot interleave their checkpoints;
/// false, and why in `error`, when another run holds it.
bool lockCheckpointDirectory(const std::string &dir, std::string &error);

/// Finds the newest checkpoint in `dir`: its path and step count.
bool findLatestCheckpoint(const std::string &dir, std::string &path,
                          int64_t &step, std::string &error);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CHECKPOINT_H
