//===- DurableFile.cpp - checked, fsynced, renamed writes -----------------===//

#include "runtime/DurableFile.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace cleave::rt {

namespace {

std::string osError() { return std::strerror(errno); }

/// Whether a failed fsync only says the file cannot be synced at all (a
/// device such as /dev/null, a pipe, some special file systems).
bool isUnsyncable(int error) {
  return error == EINVAL || error == EROFS || error == ENOTSUP;
}

} // namespace

std::string parentDirectory(const std::string &path) {
  std::string trimmed = path.substr(0, path.find_last_not_of('/') + 1);
  size_t slash = trimmed.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : trimmed.substr(0, slash);
}

bool syncDirectory(const std::string &dir, std::string &error) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open the directory '" + dir + "' to sync it: " + osError();
    return false;
  }
  bool ok = ::fsync(fd) == 0 || isUnsyncable(errno);
  if (!ok)
    error = "cannot sync the directory '" + dir + "': " + osError();
  ::close(fd);
  return ok;
}

DurableFile::DurableFile(DurableFile &&other) noexcept {
  *this = std::move(other);
}

DurableFile &DurableFile::operator=(DurableFile &&other) noexcept {
  if (this != &other) {
    discard();
    finalPath = std::move(other.finalPath);
    temporaryPath = std::move(other.temporaryPath);
    fd = std::exchange(other.fd, -1);
    pending = std::exchange(other.pending, false);
  }
  return *this;
}

DurableFile::~DurableFile() { discard(); }

bool DurableFile::open(const std::string &path, Placement placement,
                       std::string &error) {
  discard();
  finalPath = path;
  // A symbolic link's target is what the user means to replace: write
  // beside it, not over the link.
  struct stat info;
  if (placement == Placement::Beside && lstat(path.c_str(), &info) == 0 &&
      S_ISLNK(info.st_mode))
    if (char *resolved = realpath(path.c_str(), nullptr)) {
      finalPath = resolved;
      std::free(resolved);
    }
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
  if (placement == Placement::InPlace) {
    temporaryPath = finalPath;
    flags |= O_EXCL;
  } else if (stat(finalPath.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    // A device or pipe (/dev/null, say) is written directly: renaming a
    // file over it would replace the device.
    temporaryPath.clear();
    flags &= ~O_CREAT;
  } else {
    // The file's own name in the temporary one, cut short so that it stays
    // within the 255 bytes a file name may have.
    size_t slash = finalPath.find_last_of('/');
    std::string base =
        slash == std::string::npos ? finalPath : finalPath.substr(slash + 1);
    std::string dir = slash == std::string::npos
                          ? std::string()
                          : finalPath.substr(0, slash + 1);
    temporaryPath =
        dir + "." + base.substr(0, 200) + ".tmp-" + std::to_string(getpid());
    flags |= O_TRUNC;
  }
  const std::string &target = temporaryPath.empty() ? finalPath : temporaryPath;
  fd = ::open(target.c_str(), flags, 0666);
  // A file that replaces another keeps its permissions (a script made
  // executable, a model made read-only to the group, say).
  if (fd >= 0 && !temporaryPath.empty() && temporaryPath != finalPath &&
      stat(finalPath.c_str(), &info) == 0 && S_ISREG(info.st_mode))
    fchmod(fd, info.st_mode & 07777);
  if (fd < 0) {
    std::string why = osError();
    error = "cannot create '" + target + "'" +
            (target != finalPath ? " to write '" + finalPath + "'" : "") +
            ": " + why;
    temporaryPath.clear();
    return false;
  }
  pending = true;
  return true;
}

bool DurableFile::write(const void *data, size_t bytes, std::string &error) {
  const char *at = static_cast<const char *>(data);
  while (bytes > 0) {
    // Linux writes at most about 2 GiB at a time.
    ssize_t written = ::write(fd, at, bytes < (1u << 30) ? bytes : (1u << 30));
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      if (written == 0)
        errno = EIO;
      error = "cannot write '" + finalPath + "': " + osError();
      discard();
      return false;
    }
    at += written;
    bytes -= static_cast<size_t>(written);
  }
  return true;
}

bool DurableFile::close(std::string &error) {
  if (fd < 0)
    return pending;
  // Delayed write errors (a full disk on NFS, an I/O error) show up here.
  if (::fsync(fd) != 0 && !isUnsyncable(errno)) {
    error = "cannot write '" + finalPath + "' to the disk: " + osError();
    discard();
    return false;
  }
  int result = ::close(fd);
  fd = -1;
  // Linux closes the file even when close is interrupted.
  if (result != 0 && errno != EINTR) {
    error = "cannot write '" + finalPath + "' (close failed): " + osError();
    discard();
    return false;
  }
  return true;
}

bool DurableFile::commit(std::string &error, bool syncDir) {
  if (!pending) {
    error = "internal error: '" + finalPath + "' committed twice";
    return false;
  }
  if (!close(error))
    return false;
  if (!temporaryPath.empty() && temporaryPath != finalPath) {
    if (std::rename(temporaryPath.c_str(), finalPath.c_str()) != 0) {
      error = "cannot rename '" + temporaryPath + "' to '" + finalPath +
              "': " + osError();
      discard();
      return false;
    }
    if (syncDir && !syncDirectory(parentDirectory(finalPath), error)) {
      pending = false;
      return false;
    }
  }
  pending = false;
  return true;
}

void DurableFile::discard() {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
  if (pending && !temporaryPath.empty())
    ::unlink(temporaryPath.c_str());
  pending = false;
}

bool writeFileDurably(const std::string &path, const void *data, size_t bytes,
                      std::string &error) {
  DurableFile file;
  return file.open(path, DurableFile::Placement::Beside, error) &&
         file.write(data, bytes, error) && file.commit(error);
}

} // namespace cleave::rt
