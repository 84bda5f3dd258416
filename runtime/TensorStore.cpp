//===- TensorStore.cpp - the memory of a running program's tensors --------===//

#include "runtime/TensorStore.h"
#include "runtime/Checkpoint.h"
#include "runtime/CroppedWeight.h"
#include "runtime/DriverData.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace cleave::rt {

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

/// Zeros, as `allocate` gives, but mapped untouched: the kernel backs a
/// page with RAM when it is first written, so the resident set
/// (--print-memory-peak) counts the pages used, not the bytes reserved.
Buffer allocateUntouched(int64_t bytes, const std::string &what) {
  size_t size = bytes > 0 ? static_cast<size_t>(bytes) : 64;
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    failRun("cannot map " + std::to_string(bytes) + " bytes for " + what +
            "; the machine has too little memory for this model and batch");
  return Buffer(static_cast<char *>(p), [size](void *p) { munmap(p, size); });
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

TensorStore::TensorStore(const Program &program, const GlobalTensors &global)
    : global(global), program(program), device(program.device),
      root(global.isRoot()) {}

void TensorStore::allocateHostCopy(int i) {
  const TensorSpec &spec = program.tensors[i];
  int64_t bytes = global.localBytes(i);
  buffers.push_back(
      device && spec.role == Role::Input
          ? allocatePinned(*device, bytes)
          : allocate(bytes, "tensor '" + std::string(spec.name) + "'"));
  pointers.push_back(buffers.back().get());
}

int64_t TensorStore::inputBytes() const {
  int64_t bytes = 0;
  for (int i = 0; i < program.numTensors; ++i)
    if (program.tensors[i].role == Role::Input ||
        program.tensors[i].role == Role::Step)
      bytes += global.localBytes(i);
  return bytes;
}

void TensorStore::setInitialValue(int i, const RunOptions &options) {
  // Weights the step keeps cropped copies of are written outside it.
  forgetCroppedWeights();
  const TensorSpec &spec = program.tensors[i];
  if ((spec.role != Role::Param && spec.role != Role::State) ||
      !global.holds(i))
    return;
  int64_t bytes = global.localBytes(i);
  persistent += bytes;
  if (spec.initOffset < 0)
    return;
  if (spec.initOffset + global.wholeBytes(i) > program.initialBytes)
    failRun("the initial value of '" + std::string(spec.name) +
            "' lies outside the embedded data; recompile the program");
  refuseNonFinite(program.initialValues + spec.initOffset,
                  global.specs[i].shape.numElements(), spec.dtype,
                  "the initial value of '" + std::string(spec.name) +
                      "' (an initializer of the model)",
                  options);
  if (global.isSplit(i))
    global.toLocal(i, program.initialValues + spec.initOffset, pointers[i]);
  else
    std::memcpy(pointers[i], program.initialValues + spec.initOffset, bytes);
}

void TensorStore::allocateStepMemory(bool report) {
  stepPointers = pointers;
  int64_t scratchBytes = program.scratchBytesOf(global.stage);
  if (!device) {
    hostArena =
        allocateUntouched(scratchBytes, "the scratch arena (activations and "
                                        "gradients)");
    arenaStart = hostArena.get();
    return;
  }
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (int i = 0; i < program.numTensors; ++i) {
    offsets.push_back(total);
    total += alignUp(global.localBytes(i));
  }
  // The kernel workspaces after the arena start 256-aligned too, as
  // cuBLASLt and cuDNN expect.
  std::string error;
  // Each stage's first rank reports what its stage needs.
  char *block = device->reserve(
      total + alignUp(scratchBytes) + program.kernelScratchBytes, persistent,
      scratchBytes, program.kernelScratchBytes,
      report && global.isFirstOfStage(), error);
  if (!allSucceeded(block != nullptr, global))
    failRun(error.empty() ? "another rank's GPU has too little memory" : error);
  for (int i = 0; i < program.numTensors; ++i)
    stepPointers[i] = block + offsets[i];
  arenaStart = block + total;
}

void TensorStore::allocateWholeCopies() {
  whole = pointers;
  if (!global.distributed)
    return;
  for (int i = 0; i < program.numTensors; ++i)
    if (global.isSplit(i)) {
      // Untouched until a checkpoint, dump, export or load fills it: a
      // run that writes none holds no RAM for the whole model.
      wholeBuffers.push_back(
          allocateUntouched(global.wholeBytes(i),
                            "the whole of tensor '" +
                                std::string(program.tensors[i].name) + "'"));
      wholeBufferBytes.push_back(global.wholeBytes(i));
      whole[i] = wholeBuffers.back().get();
    }
}

void TensorStore::transfer(bool toDevice, std::initializer_list<Role> roles) {
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
}

void TensorStore::toDevice(std::initializer_list<Role> roles) {
  transfer(/*toDevice=*/true, roles);
}

void TensorStore::toHost(std::initializer_list<Role> roles) {
  // The updates the step's copies of cropped weights hold.
  syncCroppedWeights();
  transfer(/*toDevice=*/false, roles);
}

void TensorStore::scatterWhole() {
  for (int i = 0; i < program.numTensors; ++i)
    if (global.isSplit(i))
      global.toLocal(i, static_cast<char *>(whole[i]), pointers[i]);
}

void TensorStore::gatherToRoot() {
  for (int i = 0; i < program.numTensors; ++i)
    global.gatherToRoot(i, pointers[i], whole[i]);
}

void TensorStore::releaseWholeCopies() {
  for (size_t b = 0; b < wholeBuffers.size(); ++b)
    madvise(wholeBuffers[b].get(),
            static_cast<size_t>(std::max<int64_t>(wholeBufferBytes[b], 1)),
            MADV_DONTNEED);
}

void TensorStore::loadValues(const std::string &dir, bool checkpoint,
                             const RunOptions &options) {
  forgetCroppedWeights();
  std::string error;
  if (!loadTensors(dir, global.program, whole.data(), checkpoint, error))
    failRun(error);
  // Loaded values must be numbers: a NaN would train into NaN losses
  // whose message points at the learning rate.
  for (int i = 0; i < program.numTensors; ++i)
    if (program.tensors[i].role == Role::Param ||
        program.tensors[i].role == Role::State)
      refuseNonFinite(whole[i], global.specs[i].shape.numElements(),
                      program.tensors[i].dtype,
                      "'" + dir + "/" + program.tensors[i].file + "'", options);
  scatterWhole();
  releaseWholeCopies();
}

void TensorStore::writeOnRoot(
    const std::function<bool(std::string &error)> &write) {
  std::string error;
  toHost({Role::Param, Role::State, Role::Output});
  gatherToRoot();
  bool ok = !root || write(error);
  releaseWholeCopies();
  if (!allSucceeded(ok, global))
    failRun(error.empty() ? "rank 0 could not write its output" : error);
}

} // namespace cleave::rt
