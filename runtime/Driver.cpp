//===- Driver.cpp - the training loop around a generated step -------------===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Parses the program's
// command line, loads the data and initial values, runs the steps and logs
// the loss.
//
//===----------------------------------------------------------------------===//

#include "runtime/Checkpoint.h"
#include "runtime/Collectives.h"
#include "runtime/DriverData.h"
#include "runtime/DriverOptions.h"
#include "runtime/Export.h"
#include "runtime/KernelSupport.h"
#include "runtime/Npy.h"
#include "runtime/Program.h"
#include "runtime/RankAgreement.h"
#include "runtime/RunRecord.h"
#include "runtime/Sharding.h"
#include "runtime/Trace.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace cleave::rt {

int64_t dtypeSize(DType type) {
  switch (type) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::Bool:
    return 1;
  }
  return 0;
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "float32";
  case DType::F64:
    return "float64";
  case DType::I64:
    return "int64";
  case DType::I32:
    return "int32";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

const char *dtypeNpyKind(DType type) {
  switch (type) {
  case DType::F32:
    return "f4";
  case DType::F64:
    return "f8";
  case DType::I64:
    return "i8";
  case DType::I32:
    return "i4";
  case DType::Bool:
    return "b1";
  }
  return "";
}

namespace {

using Buffer = std::unique_ptr<char, std::function<void(void *)>>;

Buffer allocate(int64_t bytes, const std::string &what) {
  size_t size = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, size ? size : 64);
  if (!p)
    failRun("cannot allocate " + std::to_string(bytes) + " bytes for " + what +
            "; the machine has too little memory for this model and batch");
  std::memset(p, 0, size ? size : 64);
  return Buffer(static_cast<char *>(p), [](void *p) { std::free(p); });
}

/// Page-locked host memory from the device, which copies it to the device
/// without staging.
Buffer allocatePinned(const DeviceHooks &device, int64_t bytes) {
  char *p = static_cast<char *>(device.allocateHost(bytes ? bytes : 64));
  std::memset(p, 0, bytes);
  return Buffer(p, device.freeHost);
}

/// Device tensors start on 256-byte boundaries, as cudaMalloc's do.
int64_t alignUp(int64_t bytes) { return (bytes + 255) / 256 * 256; }

} // namespace

namespace {

/// The global view of a distributed program's tensors: the table with
/// global shapes, for everything that reads or writes whole tensors
/// (initial values, data, --init, checkpoints, dumps, export).
struct GlobalTensors {
  std::vector<TensorSpec> specs;
  std::vector<TensorSharding> shardings;
  std::vector<int> coords;
  Program program;
  const TensorSpec *localTensors;
  bool distributed;

  explicit GlobalTensors(const Program &local)
      : program(local), localTensors(local.tensors) {
    distributed = local.mesh.numAxes > 0;
    if (distributed)
      coords = meshCoordsOf(local.mesh, worldRank());
    if (distributed && local.pipeline.axis >= 0)
      stage = coords[local.pipeline.axis];
    for (int i = 0; i < local.numTensors; ++i) {
      TensorSpec spec = local.tensors[i];
      TensorSharding sharding;
      std::string error;
      if (!parseSharding(spec.sharding, local.mesh, spec.shape.rank, sharding,
                         error))
        failRun(error + " (tensor '" + spec.name + "'); recompile the program");
      spec.shape = globalShape(spec.shape, sharding, local.mesh);
      specs.push_back(spec);
      shardings.push_back(sharding);
    }
    program.tensors = specs.data();
  }

  /// This rank's pipeline stage; -1 when the step is not split in stages.
  int stage = -1;

  /// This rank and those that differ from it only in the pipeline stage.
  AxisGroup pipelineGroup() const {
    return AxisGroup{{static_cast<int8_t>(program.pipeline.axis)}, 1};
  }
  /// This rank and those of its stage: every mesh axis but the pipeline's.
  AxisGroup stageGroup() const {
    AxisGroup group{{}, 0};
    for (int a = 0; a < program.mesh.numAxes; ++a)
      if (a != program.pipeline.axis)
        group.axes[group.count++] = static_cast<int8_t>(a);
    return group;
  }
  /// Whether tensor `i` lives in one pipeline stage only.
  bool isStaged(int i) const { return stage >= 0 && specs[i].stage >= 0; }
  /// Whether this rank holds (a block of) tensor `i`.
  bool holds(int i) const { return !isStaged(i) || specs[i].stage == stage; }
  /// The bytes of tensor `i` on this rank.
  int64_t localBytes(int i) const {
    return holds(i) ? localShape(i).numElements() * dtypeSize(specs[i].dtype)
                    : 0;
  }
  /// Whether ranks hold different parts of tensor `i`, so that reading or
  /// writing it whole goes through toLocal and gatherWhole.
  bool isSplit(int i) const {
    return distributed && (!shardings[i].isReplicated() || isStaged(i));
  }
  /// Copies this rank's block of tensor `i` out of `global` (or back).
  void toLocal(int i, const char *global, void *local) const {
    // A stage's tensors may be split over the other axes, never over the
    // pipeline's (the compiler refuses that).
    if (!holds(i))
      return;
    copyBlock(const_cast<char *>(global), specs[i].shape,
              static_cast<char *>(local), localShape(i), shardings[i],
              program.mesh, coords.data(), dtypeSize(specs[i].dtype),
              /*toLocal=*/true);
  }
  /// The block's shape: the generated table's own.
  const Shape &localShape(int i) const { return localTensors[i].shape; }
};

/// Every rank learns whether all ranks succeeded, so that an error on one
/// (rank 0 writing a file, say) ends all of them instead of leaving the
/// others waiting in a collective.
bool allSucceeded(bool ok, const GlobalTensors &global) {
  if (!global.distributed)
    return ok;
  int64_t failures = ok ? 0 : 1;
  allReduceSum(&failures, 1, DType::I64, allAxes(global.program.mesh));
  return failures == 0;
}

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

/// Checks every output location the run will write (rank 0's files, and
/// each rank's --dump-local).
bool checkOutputLocations(const RunOptions &options, bool root,
                          std::string &error) {
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

namespace {

/// --print-comm: rank 0 prints, for every rank, the bytes it sent per step
/// by collective kind (the counts are the same every step).
void printCommunication(const CommCounters &counters, int64_t steps,
                        const GlobalTensors &global) {
  std::vector<int64_t> mine(kNumCollectiveKinds);
  for (int k = 0; k < kNumCollectiveKinds; ++k)
    mine[k] = steps ? counters.bytesSent[k] / steps : 0;
  int ranks = global.distributed ? worldSize() : 1;
  std::vector<int64_t> all(mine);
  if (global.distributed) {
    all.resize(kNumCollectiveKinds * ranks);
    allGather(mine.data(), all.data(), kNumCollectiveKinds * sizeof(int64_t),
              allAxes(global.program.mesh));
    if (!isMeshRoot())
      return;
  }
  std::printf("bytes sent per step:\n");
  for (int r = 0; r < ranks; ++r) {
    std::printf("  rank %d:", r);
    for (int k = 0; k < kNumCollectiveKinds; ++k)
      std::printf(" %s=%lld",
                  collectiveKindName(static_cast<CollectiveKind>(k)),
                  static_cast<long long>(all[r * kNumCollectiveKinds + k]));
    std::printf("\n");
  }
  std::fflush(stdout);
}

/// --print-memory: rank 0 prints every rank's persistent and scratch bytes.
void printMemory(int64_t persistentBytes, int64_t scratchBytes,
                 const GlobalTensors &global) {
  std::vector<int64_t> mine = {persistentBytes, scratchBytes};
  std::vector<int64_t> all(mine);
  int ranks = global.distributed ? worldSize() : 1;
  if (global.distributed) {
    all.resize(2 * ranks);
    allGather(mine.data(), all.data(), 2 * sizeof(int64_t),
              allAxes(global.program.mesh));
    if (!isMeshRoot())
      return;
  }
  std::printf("memory per rank:\n");
  for (int r = 0; r < ranks; ++r)
    std::printf("  rank %d: parameters and state %lld bytes, scratch %lld "
                "bytes\n",
                r, static_cast<long long>(all[2 * r]),
                static_cast<long long>(all[2 * r + 1]));
  std::fflush(stdout);
}

} // namespace

int runProgram(const Program &program, int argc, char **argv) {
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
  GlobalTensors global(program);
  bool root = !global.distributed || isMeshRoot();
  const DeviceHooks *device = program.device;
  if (device) {
    std::string error;
    if (!allSucceeded(device->start(error), global))
      failRun(error.empty() ? "another rank has no GPU it can use" : error);
  }

  std::string outputError;
  if (!allSucceeded(
          checkOutputLocations(options, root, outputError) &&
              (!root || options.checkpointDir.empty() ||
               // A mistyped --resume directory is not created.
               (options.resume &&
                access(options.checkpointDir.c_str(), F_OK) != 0) ||
               (lockCheckpointDirectory(options.checkpointDir, outputError) &&
                checkpointDirectoryIsFree(options, outputError))),
          global))
    failRun(outputError.empty()
                ? "another rank cannot use an output location (see rank 0's "
                  "message, or that rank's --dump-local)"
                : outputError);

  std::vector<Buffer> buffers;
  // The host copy of every tensor, which files and logs read and write.
  std::vector<void *> pointers;
  std::vector<InputData> inputs;
  int64_t batch = 0, persistentBytes = 0;
  for (int i = 0; i < program.numTensors; ++i) {
    const TensorSpec &spec = program.tensors[i];
    int64_t bytes = global.localBytes(i);
    buffers.push_back(
        device && spec.role == Role::Input
            ? allocatePinned(*device, bytes)
            : allocate(bytes, "tensor '" + std::string(spec.name) + "'"));
    pointers.push_back(buffers.back().get());
    if (spec.role == Role::Input) {
      inputs.push_back(loadInput(global.specs[i], options));
      for (int c = 0; c < program.numIndexChecks; ++c) {
        const IndexInputCheck &check = program.indexChecks[c];
        if (check.tensor != i)
          continue;
        if (options.synthetic)
          fillSyntheticIndices(inputs.back(), check);
        else
          checkIndexValues(inputs.back(), check);
      }
      batch = global.specs[i].shape.rank ? global.specs[i].shape.dims[0] : 1;
    } else if ((spec.role == Role::Param || spec.role == Role::State) &&
               global.holds(i)) {
      persistentBytes += bytes;
      if (spec.initOffset >= 0) {
        if (spec.initOffset +
                global.specs[i].shape.numElements() * dtypeSize(spec.dtype) >
            program.initialBytes)
          failRun("the initial value of '" + std::string(spec.name) +
                  "' lies outside the embedded data; recompile the program");
        refuseNonFinite(program.initialValues + spec.initOffset,
                        global.specs[i].shape.numElements(), spec.dtype,
                        "the initial value of '" + std::string(spec.name) +
                            "' (an initializer of the model)",
                        options);
        if (global.isSplit(i))
          global.toLocal(i, program.initialValues + spec.initOffset,
                         buffers.back().get());
        else
          std::memcpy(buffers.back().get(),
                      program.initialValues + spec.initOffset, bytes);
      }
    }
  }
  // Inputs whose file holds exactly one batch are the same every step (a
  // weight fed as an input, say); the others are the data set and must
  // agree on its size.
  const InputData *dataset = nullptr;
  for (const InputData &input : inputs) {
    int64_t rows = input.spec->shape.rank ? input.spec->shape.dims[0] : 1;
    if (input.samples == rows)
      continue;
    if (dataset && input.samples != dataset->samples)
      failRun(std::string("inputs '") + dataset->spec->name + "' and '" +
              input.spec->name + "' hold different numbers of samples (" +
              std::to_string(dataset->samples) + " and " +
              std::to_string(input.samples) + ")");
    dataset = &input;
  }
  // What the step reads and writes: the host copies (cpu target), or one
  // device block holding every tensor and the arena.
  std::vector<void *> stepPointers(pointers);
  Buffer hostArena;
  char *arena = nullptr;
  if (device) {
    std::vector<int64_t> offsets;
    int64_t total = 0;
    for (int i = 0; i < program.numTensors; ++i) {
      offsets.push_back(total);
      total += alignUp(global.localBytes(i));
    }
    // The kernel workspaces after the arena start 256-aligned too, as
    // cuBLASLt and cuDNN expect.
    std::string error;
    char *block = device->reserve(
        total + alignUp(program.arenaBytes) + program.kernelScratchBytes,
        persistentBytes, program.arenaBytes, program.kernelScratchBytes,
        !options.quiet && root, error);
    if (!allSucceeded(block != nullptr, global))
      failRun(error.empty() ? "another rank's GPU has too little memory"
                            : error);
    for (int i = 0; i < program.numTensors; ++i)
      stepPointers[i] = block + offsets[i];
    arena = block + total;
  } else {
    hostArena =
        allocate(program.arenaBytes, "the scratch arena (activations and "
                                     "gradients)");
    arena = hostArena.get();
  }
  // Copies the tensors of the given roles between the host and the device.
  auto transfer = [&](bool toDevice, std::initializer_list<Role> roles) {
    if (!device)
      return;
    for (int i = 0; i < program.numTensors; ++i)
      if (std::find(roles.begin(), roles.end(), program.tensors[i].role) !=
          roles.end()) {
        int64_t bytes = global.localBytes(i);
        if (bytes == 0)
          continue;
        if (toDevice)
          device->upload(stepPointers[i], pointers[i], bytes);
        else
          device->download(pointers[i], stepPointers[i], bytes);
      }
  };

  // Whole tensors for reading and writing files: split tensors are loaded
  // whole and cut into blocks, or gathered from every rank before rank 0
  // writes them.
  std::vector<Buffer> wholeBuffers;
  std::vector<void *> whole(pointers);
  if (global.distributed)
    for (int i = 0; i < program.numTensors; ++i)
      if (global.isSplit(i)) {
        wholeBuffers.push_back(
            allocate(global.specs[i].shape.numElements() *
                         dtypeSize(program.tensors[i].dtype),
                     "the whole of tensor '" +
                         std::string(program.tensors[i].name) + "'"));
        whole[i] = wholeBuffers.back().get();
      }
  auto scatterWhole = [&]() {
    for (int i = 0; i < program.numTensors; ++i)
      if (global.isSplit(i))
        global.toLocal(i, static_cast<char *>(whole[i]), pointers[i]);
  };
  auto gatherWhole = [&]() {
    for (int i = 0; i < program.numTensors; ++i)
      if (global.isStaged(i)) {
        // The stage holding it assembles it and sends it to the others.
        if (global.holds(i))
          gatherGlobal(static_cast<char *>(pointers[i]),
                       program.tensors[i].shape, global.shardings[i],
                       program.mesh, global.coords.data(), global.stageGroup(),
                       dtypeSize(program.tensors[i].dtype),
                       static_cast<char *>(whole[i]));
        broadcast(whole[i],
                  global.specs[i].shape.numElements() *
                      dtypeSize(global.specs[i].dtype),
                  global.specs[i].stage, global.pipelineGroup());
      } else if (global.isSplit(i))
        gatherGlobal(static_cast<char *>(pointers[i]), program.tensors[i].shape,
                     global.shardings[i], program.mesh, global.coords.data(),
                     allAxes(program.mesh),
                     dtypeSize(program.tensors[i].dtype),
                     static_cast<char *>(whole[i]));
  };
  // Rank 0 writes; every rank learns whether that worked.
  auto writeOnRoot = [&](auto write) {
    std::string error;
    transfer(/*toDevice=*/false, {Role::Param, Role::State, Role::Output});
    gatherWhole();
    bool ok = !root || write(error);
    if (!allSucceeded(ok, global))
      failRun(error.empty() ? "rank 0 could not write its output" : error);
  };
  const Program &io = global.program;

  // Loaded values must be numbers: a NaN would train into NaN losses
  // whose message points at the learning rate.
  auto refuseLoadedNonFinite = [&](const std::string &dir) {
    for (int i = 0; i < program.numTensors; ++i)
      if (program.tensors[i].role == Role::Param ||
          program.tensors[i].role == Role::State)
        refuseNonFinite(whole[i], global.specs[i].shape.numElements(),
                        program.tensors[i].dtype,
                        "'" + dir + "/" + program.tensors[i].file + "'",
                        options);
  };
  std::string error;
  if (!options.init.empty()) {
    if (!loadTensors(options.init, io, whole.data(), false, error))
      failRun(error);
    refuseLoadedNonFinite(options.init);
    scatterWhole();
  }
  int64_t firstStep = 0;
  if (options.resume) {
    std::string path;
    if (!findLatestCheckpoint(options.checkpointDir, path, firstStep, error) ||
        !loadTensors(path, io, whole.data(), true, error))
      failRun(error);
    refuseLoadedNonFinite(path);
    scatterWhole();
    if (!options.quiet && root)
      std::fprintf(stderr, "resuming from '%s' after step %lld\n", path.c_str(),
                   static_cast<long long>(firstStep));
  }

  // Ranks that would compute different things would wait in mismatched
  // collectives: all check first that they agree (RankAgreement.h).
  if (global.distributed) {
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
    agreement.addFlag("--trace", !options.trace.empty());
    agreement.addValue("--trace-steps", options.traceFirst,
                       !options.trace.empty());
    // The log's first record gathers every rank's memory.
    agreement.addFlag("--log", !options.log.empty());
    agreement.addFlag("--print-comm", options.printComm);
    for (const InputData &input : inputs)
      agreement.addInputData(input.spec->name, input.array.shape,
                             input.array.data.data(),
                             static_cast<int64_t>(input.array.data.size()));
    if (!options.init.empty() || options.resume)
      agreement.addLoadedValues(options.resume ? "--resume" : "--init", io,
                                whole.data());
    agreement.require();
  }

  std::FILE *log = nullptr;
  if (root && !options.log.empty() &&
      !(log = std::fopen(options.log.c_str(), options.resume ? "a" : "w")))
    failRun("cannot write the log '" + options.log +
            "': " + std::strerror(errno));
  // A log that cannot be written (a full disk, /dev/full) ends the run: it
  // must not report success with the record lost.
  auto logError = [&]() {
    return "cannot write the log '" + options.log +
           "': " + std::strerror(errno);
  };
  if (!options.quiet && root)
    std::fprintf(stderr,
                 "%s: %lld steps, batch %lld, parameters and state %.1f MiB, "
                 "scratch %.1f MiB\n",
                 program.model, static_cast<long long>(options.steps),
                 static_cast<long long>(batch), persistentBytes / 1048576.0,
                 program.arenaBytes / 1048576.0);

  transfer(/*toDevice=*/true, {Role::Param, Role::State});
  StepContext context{stepPointers.data(), arena, 0, options.seed, 0.0f};
  if (!options.trace.empty()) {
    if (!program.traceOps)
      failRun("--trace: this program has no trace points (the cuda target "
              "does not trace yet); trace the cpu target's program");
    if (options.traceFirst >= options.steps || options.traceLast <= firstStep)
      failRun("--trace-steps " + std::to_string(options.traceFirst) + ":" +
              std::to_string(options.traceLast) +
              " traces no step of this run (steps " +
              std::to_string(firstStep) + " to " +
              std::to_string(options.steps - 1) +
              "); give steps inside it, or more --steps");
    startTracing(program, options.traceFirst, options.traceLast);
  }
  auto start = std::chrono::steady_clock::now();
  int64_t every = std::max<int64_t>(1, options.steps / 20);
  SampleOrder order(dataset ? dataset->samples : 1, options);
  CommCounters stepComm{};
  std::vector<char> wholeBatch;
  bool warnedNonFinite = false, savedCheckpoint = false;
  if (options.resume && firstStep >= options.steps && root)
    std::fprintf(stderr,
                 "nothing to train: the checkpoint is after step %lld and "
                 "--steps %lld is the total number of steps; give a larger "
                 "--steps to train on\n",
                 static_cast<long long>(firstStep),
                 static_cast<long long>(options.steps));
  for (int64_t step = firstStep; step < options.steps; ++step) {
    for (InputData &input : inputs) {
      int index = input.spec - global.specs.data();
      char *dest = static_cast<char *>(pointers[index]);
      // A split input is assembled whole, then this rank keeps its block.
      if (global.isSplit(index)) {
        wholeBatch.resize(input.spec->shape.numElements() *
                          dtypeSize(input.spec->dtype));
        dest = wholeBatch.data();
      }
      int64_t rows = input.spec->shape.rank ? input.spec->shape.dims[0] : 1;
      for (int64_t j = 0; j < rows; ++j) {
        int64_t sample =
            input.samples == rows ? j : order.sample(step * rows + j);
        std::memcpy(dest + j * input.sampleBytes,
                    input.array.data.data() + sample * input.sampleBytes,
                    input.sampleBytes);
      }
      if (global.isSplit(index))
        global.toLocal(index, wholeBatch.data(), pointers[index]);
    }
    for (int i = 0; i < program.numTensors; ++i)
      if (program.tensors[i].role == Role::Step)
        *static_cast<int64_t *>(pointers[i]) = step;
    transfer(/*toDevice=*/true, {Role::Input, Role::Step});
    context.step = step;
    detail::currentStep = step;
    CommCounters before = commCounters();
    traceStepBegin(step);
    program.step(context);
    traceStepEnd(step);
    for (int k = 0; k < kNumCollectiveKinds; ++k) {
      stepComm.bytesSent[k] +=
          commCounters().bytesSent[k] - before.bytesSent[k];
      stepComm.calls[k] += commCounters().calls[k] - before.calls[k];
    }
    // Every rank reports the loss, which one stage computes (outside the
    // step's counted communication, which the compiler predicts).
    if (global.stage >= 0)
      broadcast(&context.loss, sizeof(context.loss), program.pipeline.lossStage,
                global.pipelineGroup());
    // A log's first record also names the program and what each rank
    // holds (runtime/RunRecord.h); every rank takes part in the gather.
    std::string runFields;
    if (step == firstStep && !options.log.empty() && !options.resume &&
        program.training) {
      RankMemory mine;
      for (int i = 0; i < program.numTensors; ++i)
        if (global.holds(i) && program.tensors[i].role == Role::Param)
          mine.parameters += global.localBytes(i);
        else if (global.holds(i) && program.tensors[i].role == Role::State)
          mine.optimizerState += global.localBytes(i);
      mine.scratch = program.arenaBytes;
      runFields = runRecordFields(
          program, gatherRankMemory(mine, program.mesh, global.distributed));
    }
    // JSON has no NaN or infinity: such a loss is logged as null.
    if (log && program.training) {
      char loss[32] = "null";
      if (std::isfinite(context.loss))
        std::snprintf(loss, sizeof(loss), "%.9g", context.loss);
      if (std::fprintf(log, "{\"step\":%lld,\"loss\":%s%s}\n",
                       static_cast<long long>(step), loss,
                       runFields.c_str()) < 0)
        failRun(logError());
    }
    if (!std::isfinite(context.loss) && program.training && root &&
        !warnedNonFinite) {
      std::fprintf(stderr,
                   "warning: the loss of step %lld is %g; the training has "
                   "diverged (try a smaller --lr, or --clip-grad-norm)\n",
                   static_cast<long long>(step), context.loss);
      warnedNonFinite = true;
    }
    if (!options.quiet && root &&
        ((step + 1) % every == 0 || step + 1 == options.steps)) {
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      double perStep = seconds / (step + 1 - firstStep);
      std::string loss =
          program.training ? "  loss " + std::to_string(context.loss) : "";
      std::fprintf(stderr, "step %lld/%lld%s  %.0f samples/s  ETA %.1fs\n",
                   static_cast<long long>(step + 1),
                   static_cast<long long>(options.steps), loss.c_str(),
                   batch / perStep, perStep * (options.steps - step - 1));
    }
    if (log && std::fflush(log) != 0)
      failRun(logError());
    bool last = step + 1 == options.steps;
    if (!options.checkpointDir.empty() &&
        (last || (options.checkpointEvery &&
                  (step + 1) % options.checkpointEvery == 0)))
      writeOnRoot([&](std::string &error) {
        // The log reaches the disk before the checkpoint that covers it
        // (a device such as /dev/null cannot be synced).
        if (log && fsync(fileno(log)) != 0 && errno != EINVAL &&
            errno != EROFS) {
          error = logError();
          return false;
        }
        if (!saveCheckpoint(options.checkpointDir, step + 1, io, whole.data(),
                            error))
          return false;
        // --overwrite-checkpoints: the earlier run's checkpoints go once
        // this run has one of its own.
        std::string warning;
        if (options.overwriteCheckpoints && !savedCheckpoint &&
            !removeOtherCheckpoints(options.checkpointDir, step + 1, warning))
          std::fprintf(stderr, "warning: %s\n", warning.c_str());
        savedCheckpoint = true;
        return true;
      });
  }
  if (log && std::fclose(log) != 0)
    failRun(logError());
  if (!options.trace.empty()) {
    std::string error;
    if (!allSucceeded(writeTrace(options.trace, error), global))
      failRun(error.empty() ? "rank 0 could not write the trace" : error);
    if (root && !options.quiet)
      std::fprintf(
          stderr, "trace of %lld step%s (%lld:%lld) written to '%s'\n",
          static_cast<long long>(tracedSteps()), tracedSteps() == 1 ? "" : "s",
          static_cast<long long>(options.traceFirst),
          static_cast<long long>(options.traceLast), options.trace.c_str());
  }

  if (!options.dumpParams.empty())
    writeOnRoot([&](std::string &error) {
      return writeTensors(options.dumpParams, io, whole.data(),
                          /*outputs=*/false, error);
    });
  if (!options.exportOnnx.empty())
    writeOnRoot([&](std::string &error) {
      return exportOnnx(options.exportOnnx, io, whole.data(), error);
    });
  if (!options.dumpOutputs.empty())
    writeOnRoot([&](std::string &error) {
      return writeTensors(options.dumpOutputs, io, whole.data(),
                          /*outputs=*/true, error);
    });
  if (!options.dumpLocal.empty()) {
    std::string dir = options.dumpLocal + "/rank" +
                      std::to_string(global.distributed ? worldRank() : 0);
    mkdir(options.dumpLocal.c_str(), 0777);
    transfer(/*toDevice=*/false, {Role::Param, Role::State, Role::Output});
    // The tensors this rank holds.
    std::vector<TensorSpec> held;
    std::vector<void *> heldPointers;
    for (int i = 0; i < program.numTensors; ++i)
      if (global.holds(i)) {
        held.push_back(program.tensors[i]);
        heldPointers.push_back(pointers[i]);
      }
    Program mine = program;
    mine.tensors = held.data();
    mine.numTensors = static_cast<int>(held.size());
    std::string error;
    if (!allSucceeded(writeTensors(dir, mine, heldPointers.data(),
                                   /*outputs=*/false, error),
                      global))
      failRun(error.empty() ? "another rank could not write --dump-local"
                            : error);
  }
  if (options.printMemory)
    printMemory(persistentBytes, program.arenaBytes, global);
  if (options.printComm)
    printCommunication(stepComm, options.steps - firstStep, global);
  if (device)
    device->stop();
  finalizeMesh();
  return 0;
}

} // namespace cleave::rt
