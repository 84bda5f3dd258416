//===- TensorStore.h - the memory of a running program ----------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Holds every tensor of
// this rank: a host copy of each, which files and logs read and write; on
// an accelerator (the cuda target) one device block with every tensor and
// the scratch arena, which the step sees; and whole copies of the split
// tensors of a distributed program, for files that hold whole tensors.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_TENSORSTORE_H
#define CLEAVE_RUNTIME_TENSORSTORE_H

#include "runtime/DriverOptions.h"
#include "runtime/GlobalTensors.h"
#include "runtime/Program.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace cleave::rt {

class TensorStore {
public:
  TensorStore(const Program &program, const GlobalTensors &global);

  /// Allocates the host copy of tensor `i` (zeros; page-locked for an
  /// input the device copies every step). Called in table order.
  void allocateHostCopy(int i);
  /// Gives parameter or state `i` its initializer, if it has one and this
  /// rank holds it; refuses NaN or infinity unless the options allow it.
  void setInitialValue(int i, const RunOptions &options);
  /// What the step reads and writes: the host copies and a host arena
  /// (cpu target), or one device block holding every tensor, the arena and
  /// the kernels' workspaces, reported first when `report`.
  void allocateStepMemory(bool report);
  /// Whole copies of the tensors ranks hold parts of (after the step's
  /// memory, so that a device that lacks memory says so first), mapped
  /// untouched: they take RAM from the first time files fill them.
  void allocateWholeCopies();

  /// Copies the tensors of the given roles to the device, or back to
  /// their host copies; nothing on the cpu target.
  void toDevice(std::initializer_list<Role> roles);
  void toHost(std::initializer_list<Role> roles);

  /// Reads the parameters and state of `dir` (a checkpoint when
  /// `checkpoint`) whole and gives this rank its blocks; exits with the
  /// reason when they cannot be read or hold NaN.
  void loadValues(const std::string &dir, bool checkpoint,
                  const RunOptions &options);
  /// Brings the parameters, state and outputs to the host, gathers them
  /// whole on rank 0, and has it `write` them; every rank exits when that
  /// fails.
  void writeOnRoot(const std::function<bool(std::string &error)> &write);

  /// Host copy of tensor `i`.
  void *hostCopy(int i) const { return pointers[i]; }
  /// The whole tensors (the host copies of those that are not split), in
  /// table order, for files.
  void *const *wholeTensors() const { return whole.data(); }
  /// The step's pointers, in table order, and its scratch arena.
  void *const *stepTensors() const { return stepPointers.data(); }
  char *arena() const { return arenaStart; }
  /// Bytes of the parameters and state this rank holds.
  int64_t persistentBytes() const { return persistent; }
  /// Bytes of this rank's blocks of the step's inputs and step counter
  /// (on the cuda target, their pinned host copies).
  int64_t inputBytes() const;

  /// The global view the store was built on.
  const GlobalTensors &global;

private:
  using Buffer = std::unique_ptr<char, std::function<void(void *)>>;

  void transfer(bool toDevice, std::initializer_list<Role> roles);
  /// Gives every rank its blocks of the whole split tensors.
  void scatterWhole();
  /// Assembles the split tensors whole on rank 0 from every rank's blocks.
  void gatherToRoot();
  /// Gives back the pages of the whole copies (they are refilled when next
  /// needed): a rank holds no whole copy of the model between checkpoints.
  void releaseWholeCopies();

  const Program &program;
  const DeviceHooks *device;
  bool root;
  std::vector<Buffer> buffers;
  std::vector<void *> pointers;
  std::vector<void *> stepPointers;
  Buffer hostArena;
  char *arenaStart = nullptr;
  std::vector<Buffer> wholeBuffers;
  std::vector<int64_t> wholeBufferBytes;
  std::vector<void *> whole;
  int64_t persistent = 0;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_TENSORSTORE_H
