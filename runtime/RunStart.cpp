//===- RunStart.cpp - what a program checks before it trains --------------===//

#include "runtime/RunStart.h"
#include "runtime/Checkpoint.h"
#include "runtime/Collectives.h"
#include "runtime/RankAgreement.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace cleave::rt {

namespace {

/// Whether a file (or, with `directory`, a directory) can be written at
/// `path` later: it is there and writable, or its parent is. Checked before
/// training, so a typo costs seconds, not the run.
bool canWriteLater(const std::string &path, bool directory, const char *flag,
                   std::string &error) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode) != directory) {
      error = std::string(flag) + " '" + path + "' is " +
              (directory ? "not a directory" : "a directory") + "; give a " +
              (directory ? "directory" : "file name");
      return false;
    }
    if (directory) {
      if (access(path.c_str(), W_OK) == 0)
        return true;
      error = std::string(flag) + " '" + path +
              "' cannot be written: " + std::strerror(errno);
      return false;
    }
    // A file is replaced by renaming a new one over it: only its
    // directory must be writable.
  }
  std::string trimmed = path.substr(0, path.find_last_not_of('/') + 1);
  size_t slash = trimmed.find_last_of('/');
  std::string parent = slash == std::string::npos ? "."
                       : slash == 0               ? "/"
                                                  : trimmed.substr(0, slash);
  bool exists = stat(parent.c_str(), &info) == 0;
  if (exists && S_ISDIR(info.st_mode) && access(parent.c_str(), W_OK) == 0)
    return true;
  error = std::string(flag) + " '" + path + "': the directory '" + parent +
          "' " + (exists ? "is not a writable directory" : "does not exist") +
          "; create it first";
  return false;
}

/// A fresh run must not overwrite another run's checkpoints (and move its
/// `latest` back) unless told to.
bool checkpointDirectoryIsFree(const RunOptions &options, std::string &error) {
  std::string what;
  if (options.resume || options.overwriteCheckpoints ||
      !holdsCheckpoints(options.checkpointDir, what))
    return true;
  error = "--checkpoint-dir '" + options.checkpointDir +
          "' holds another run's checkpoints (" + what +
          "); give --resume to continue that run, --overwrite-checkpoints to "
          "replace it, or another --checkpoint-dir";
  return false;
}

/// Checks every output location this rank will write (rank 0's files, and
/// each rank's --dump-local).
bool canWriteOutputs(const RunOptions &options, bool root, std::string &error) {
  struct Output {
    const std::string &path;
    bool directory;
    const char *flag;
    bool mine;
  } outputs[] = {{options.checkpointDir, true, "--checkpoint-dir", root},
                 {options.dumpParams, true, "--dump-params", root},
                 {options.dumpOutputs, true, "--dump-outputs", root},
                 {options.exportOnnx, false, "--export-onnx", root},
                 {options.dumpLocal, true, "--dump-local", true},
                 {options.trace, false, "--trace", root}};
  for (const Output &output : outputs)
    if (output.mine && !output.path.empty() &&
        !canWriteLater(output.path, output.directory, output.flag, error))
      return false;
  return true;
}

} // namespace

RunOptions startRun(const Program &program, int &argc, char **&argv) {
  // Under a file size limit (ulimit -f) the kernel's SIGXFSZ would kill
  // the program mid-write; ignored, the write fails with EFBIG and the
  // program says which file.
  std::signal(SIGXFSZ, SIG_IGN);
  initMesh(program.mesh, argc, argv);
  RunOptions options = parseRunOptions(argc, argv);
  // An inference program answers for whatever it is given, NaN included
  // (isnan is a question one may ask); training on NaN never helps.
  if (!program.training)
    options.allowNonFinite = true;
  if (options.printMemoryPeak && program.device)
    failRun("--print-memory-peak measures the host's resident set, and this "
            "program keeps its tensors in GPU memory; it is for the cpu "
            "target");
  setCollectiveTimeout(options.collectiveTimeout);
  // A one-rank program started as several ranks would train several
  // independent copies; Open MPI tells each process how many there are.
  if (program.mesh.numAxes == 0)
    if (const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
        size && std::atoi(size) > 1)
      failRun("this program was compiled for one rank but mpirun started " +
              std::string(size) +
              "; recompile with --mesh (for example --mesh dp=" + size +
              " --strategy dp) to train on several");
  return options;
}

void startDevice(const Program &program, const GlobalTensors &global) {
  if (!program.device)
    return;
  std::string error;
  if (!allSucceeded(program.device->start(error), global))
    failRun(error.empty() ? "another rank has no GPU it can use" : error);
}

void checkOutputLocations(const RunOptions &options,
                          const GlobalTensors &global) {
  bool root = global.isRoot();
  std::string error;
  if (!allSucceeded(
          canWriteOutputs(options, root, error) &&
              (!root || options.checkpointDir.empty() ||
               // A mistyped --resume directory is not created.
               (options.resume &&
                access(options.checkpointDir.c_str(), F_OK) != 0) ||
               (lockCheckpointDirectory(options.checkpointDir, error) &&
                checkpointDirectoryIsFree(options, error))),
          global))
    failRun(error.empty()
                ? "another rank cannot use an output location (see rank 0's "
                  "message, or that rank's --dump-local)"
                : error);
}

void requireRankAgreement(const Program &program, const RunOptions &options,
                          int64_t firstStep, const TrainingData &data,
                          const TensorStore &store) {
  if (!store.global.distributed)
    return;
  RankAgreement agreement(program);
  agreement.addValue("--steps", options.steps);
  agreement.addValue("--seed", static_cast<int64_t>(options.seed));
  agreement.addValue("--shuffle", static_cast<int64_t>(options.shuffleSeed),
                     options.shuffle);
  agreement.addFlag("--synthetic", options.synthetic);
  agreement.addFlag("--init", !options.init.empty());
  agreement.addValue("--resume (the step of the checkpoint found)", firstStep,
                     options.resume);
  agreement.addFlag("--checkpoint-dir", !options.checkpointDir.empty());
  agreement.addValue("--checkpoint-every", options.checkpointEvery);
  // Each of these makes every rank take part in collectives at the end.
  agreement.addFlag("--dump-params", !options.dumpParams.empty());
  agreement.addFlag("--export-onnx", !options.exportOnnx.empty());
  agreement.addFlag("--dump-outputs", !options.dumpOutputs.empty());
  agreement.addFlag("--dump-local", !options.dumpLocal.empty());
  agreement.addFlag("--print-memory", options.printMemory);
  agreement.addFlag("--print-memory-peak", options.printMemoryPeak);
  agreement.addFlag("--trace", !options.trace.empty());
  agreement.addValue("--trace-steps", options.traceFirst,
                     !options.trace.empty());
  // The log's first record gathers every rank's memory.
  agreement.addFlag("--log", !options.log.empty());
  agreement.addFlag("--print-comm", options.printComm);
  // Synthetic data is the program's own, each rank making its rows.
  for (const InputData &input : data.inputs())
    if (!options.synthetic)
      agreement.addInputData(input.spec->name, input.shape(), input.bytes(),
                             input.byteCount());
  if (!options.init.empty() || options.resume)
    agreement.addLoadedValues(options.resume ? "--resume" : "--init",
                              store.global.program, store.wholeTensors());
  agreement.require();
}

} // namespace cleave::rt
