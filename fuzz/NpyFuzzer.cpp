//===- NpyFuzzer.cpp - libFuzzer target for the .npy reader ---------------===//
//
// Feeds arbitrary bytes to parseNpy, the reader behind --data, --init and
// --resume (readNpy shares its header parser and length checks). Beyond
// the sanitizers' findings, it checks that an accepted file's data is
// exactly what its shape says, that it survives being written back with
// npyHeader, and that a refusal names the file. Built and run by
// scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using cleave::rt::NpyArray;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *bytes = reinterpret_cast<const char *>(data);
  NpyArray array;
  std::string error;
  if (!cleave::rt::parseNpy(bytes, size, "fuzz.npy", array, error)) {
    if (error.find("'fuzz.npy'") == std::string::npos)
      __builtin_trap();
    return 0;
  }
  if (array.kind.size() < 2)
    __builtin_trap();
  uint64_t expected = std::atoi(array.kind.c_str() + 1);
  for (int64_t dim : array.shape) {
    if (dim < 0)
      __builtin_trap();
    expected *= static_cast<uint64_t>(dim);
  }
  if (expected != array.data.size())
    __builtin_trap();
  // Written back the way checkpoints are, it reads the same.
  std::string file = cleave::rt::npyHeader(array.kind, array.shape);
  file.append(array.data.begin(), array.data.end());
  NpyArray again;
  if (!cleave::rt::parseNpy(file.data(), file.size(), "again.npy", again,
                            error) ||
      again.kind != array.kind || again.shape != array.shape ||
      again.data != array.data)
    __builtin_trap();
  return 0;
}
