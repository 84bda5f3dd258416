//===- DurableFile.h - checked, fsynced, renamed writes ---------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Every file a run leaves
// for the user (checkpoints, dumps, exports, `latest`) is written through
// DurableFile: beside its destination under a temporary name, every write
// checked, fsynced and closed (checked too), then renamed into place and its
// directory fsynced. A full disk or a file size limit (RLIMIT_FSIZE) thus
// fails with a message naming the file and the OS error, and never leaves a
// truncated file where a whole one was.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DURABLEFILE_H
#define CLEAVE_RUNTIME_DURABLEFILE_H

#include <cstddef>
#include <string>

namespace cleave::rt {

class DurableFile {
public:
  enum class Placement {
    /// Written as `<dir>/.<name>.tmp-<pid>` and renamed over `path` by
    /// commit(): an earlier file at `path` stays whole until then. A
    /// symbolic link's target is replaced, not the link; a device or pipe
    /// (/dev/null) is written directly.
    Beside,
    /// Written at `path` itself, which must not exist: for files inside a
    /// temporary directory that is renamed into place as a whole.
    InPlace,
  };

  DurableFile() = default;
  DurableFile(const DurableFile &) = delete;
  DurableFile &operator=(const DurableFile &) = delete;
  DurableFile(DurableFile &&other) noexcept;
  DurableFile &operator=(DurableFile &&other) noexcept;
  /// Removes the temporary of a file never committed.
  ~DurableFile();

  /// Starts writing `path`.
  bool open(const std::string &path, Placement placement, std::string &error);
  /// Appends `bytes` bytes; false (and why) on a short or failed write.
  bool write(const void *data, size_t bytes, std::string &error);
  /// Flushes the file to the disk and closes it, both checked; the file is
  /// then whole, but not yet in place.
  bool close(std::string &error);
  /// Closes (if still open) and, for Placement::Beside, renames the
  /// temporary over `path` and, with `syncDirectory`, fsyncs its directory.
  bool commit(std::string &error, bool syncDirectory = true);
  /// Closes and removes what was written (at `path` too for InPlace).
  void discard();

  const std::string &path() const { return finalPath; }

private:
  std::string finalPath, temporaryPath;
  int fd = -1;
  bool pending = false;
};

/// fsyncs directory `dir`, so that the names created, renamed or removed in
/// it survive a crash.
bool syncDirectory(const std::string &dir, std::string &error);

/// The directory part of `path` ("." when it has none).
std::string parentDirectory(const std::string &path);

/// Writes `bytes` bytes at `path` durably: beside it, then renamed over it.
bool writeFileDurably(const std::string &path, const void *data, size_t bytes,
                      std::string &error);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DURABLEFILE_H
