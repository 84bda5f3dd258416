//===- Npy.h - numpy .npy files ---------------------------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_NPY_H
#define CLEAVE_RUNTIME_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::rt {

/// A loaded .npy array (C order, little endian).
struct NpyArray {
  /// numpy's descr without the byte-order mark: "f4", "f8", "i8", "i4", "b1".
  std::string kind;
  std::vector<int64_t> shape;
  std::vector<char> data;
};

/// The file holding tensor `name` in a data, checkpoint or dump directory:
/// `<name>.npy`, with '/' and '%' written as %2F and %25 so that every
/// name stays one file inside the directory.
std::string npyFileName(const std::string &name);

/// Reads `path`; on failure returns false and sets `error` to a message
/// that names the file and what is wrong.
bool readNpy(const std::string &path, NpyArray &array, std::string &error);

/// Writes a little-endian C-order array of `kind` ("f4", ...).
bool writeNpy(const std::string &path, const std::string &kind,
              const std::vector<int64_t> &shape, const void *data,
              int64_t bytes, std::string &error);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_NPY_H
