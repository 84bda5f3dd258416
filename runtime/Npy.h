//===- Npy.h - numpy .npy files ---------------------------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_NPY_H
#define CLEAVE_RUNTIME_NPY_H

#include <cstddef>
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
/// `<name>.npy`, with '/', '%', control bytes (NUL included) and a leading
/// '.' written as %XX, so that every name stays one file inside the
/// directory, is never hidden, and different names get different files.
std::string npyFileName(const std::string &name);

/// Reads `path`; on failure returns false and sets `error` to a message
/// that names the file and what is wrong. The header must be the dict
/// numpy.save writes ('descr', 'fortran_order' and 'shape', each once, and
/// nothing else); every length it declares is checked against the file's
/// size before anything is allocated.
bool readNpy(const std::string &path, NpyArray &array, std::string &error);

/// A .npy file's data mapped read-only, not copied: its pages are the page
/// cache's, shared by every process on the machine that maps the file, read
/// from the file as they are first touched and not part of a process's
/// anonymous memory. The file must not shrink while it is mapped (a read
/// past its end would be a bus error).
class MappedNpy {
public:
  MappedNpy() = default;
  MappedNpy(const MappedNpy &) = delete;
  MappedNpy &operator=(const MappedNpy &) = delete;
  ~MappedNpy();

  /// numpy's descr without the byte-order mark, and the shape.
  std::string kind;
  std::vector<int64_t> shape;
  /// The array's bytes, inside the mapping.
  const char *data() const { return base + offset; }
  size_t size() const { return bytes; }

private:
  friend bool mapNpy(const std::string &, MappedNpy &, std::string &);
  char *base = nullptr;
  size_t length = 0, offset = 0, bytes = 0;
};

/// readNpy's checks, then maps the file's data instead of reading it; false
/// with `error` set as readNpy's.
bool mapNpy(const std::string &path, MappedNpy &array, std::string &error);

/// readNpy of a whole file held in memory (`size` bytes at `bytes`); `path`
/// names it in messages.
bool parseNpy(const char *bytes, size_t size, const std::string &path,
              NpyArray &array, std::string &error);

/// The bytes a .npy file of a little-endian C-order array of `kind` ("f4",
/// ...) and `shape` starts with; its data follows. (Files are written by
/// runtime/Checkpoint.cpp through a DurableFile.)
std::string npyHeader(const std::string &kind,
                      const std::vector<int64_t> &shape);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_NPY_H
