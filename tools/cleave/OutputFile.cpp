//===- OutputFile.cpp - writing the files users keep ----------------------===//

#include "tools/cleave/OutputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cleave::driver {

namespace {

bool report(llvm::StringRef command, llvm::StringRef path,
            llvm::StringRef reason) {
  llvm::errs() << "cleave " << command << ": error: cannot write '" << path
               << "': " << reason << "\n";
  return false;
}

/// The directory holding `path` ("." for a bare file name).
std::string directoryOf(llvm::StringRef path) {
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  return parent.empty() ? "." : parent.str();
}

/// fsync of the directory holding `path`, so that a rename in it survives
/// a crash. Some file systems refuse fsync on directories: not an error.
void syncDirectoryOf(llvm::StringRef path) {
  int fd = ::open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

bool isSpecialFile(llvm::StringRef path) {
  llvm::sys::fs::file_status status;
  return !llvm::sys::fs::status(path, status) &&
         llvm::sys::fs::exists(status) &&
         !llvm::sys::fs::is_regular_file(status) &&
         !llvm::sys::fs::is_directory(status);
}

std::string temporaryBeside(llvm::StringRef path, llvm::StringRef command) {
  llvm::SmallString<256> temporary;
  llvm::SmallString<256> model(directoryOf(path));
  llvm::sys::path::append(model, "." + llvm::sys::path::filename(path) +
                                     ".tmp-%%%%%%");
  int fd = -1;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(model, fd, temporary)) {
    report(command, path, "cannot create a file beside it: " + ec.message());
    return "";
  }
  ::close(fd);
  return std::string(temporary);
}

bool commitOutputFile(llvm::StringRef temporary, llvm::StringRef path,
                      llvm::StringRef command) {
  int fd = ::open(temporary.str().c_str(), O_RDONLY);
  bool synced = fd >= 0 && ::fsync(fd) == 0;
  int syncErrno = errno;
  if (fd >= 0)
    ::close(fd);
  if (!synced) {
    llvm::sys::fs::remove(temporary);
    return report(command, path, std::strerror(syncErrno));
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return report(command, path, ec.message());
  }
  syncDirectoryOf(path);
  return true;
}

bool writeOutputFile(llvm::StringRef path, llvm::StringRef contents,
                     llvm::StringRef command) {
  if (path == "-") {
    llvm::outs() << contents;
    llvm::outs().flush();
    if (llvm::outs().has_error()) {
      llvm::outs().clear_error();
      return report(command, "-", "standard output is closed or full");
    }
    return true;
  }
  // A device or a pipe (-o /dev/null) is written in place: renaming over
  // it would replace the device node.
  if (isSpecialFile(path)) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Append);
    if (!ec) {
      os << contents;
      os.close();
      ec = os.error();
      os.clear_error();
    }
    return ec ? report(command, path, ec.message()) : true;
  }
  std::string temporary = temporaryBeside(path, command);
  if (temporary.empty())
    return false;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temporary, ec);
    if (!ec) {
      os << contents;
      os.close();
      ec = os.error();
      os.clear_error();
    }
    if (ec) {
      llvm::sys::fs::remove(temporary);
      return report(command, path, ec.message());
    }
  }
  // A file that replaces another keeps its permissions (a script made
  // executable, say); a new one gets the usual 0666 & ~umask.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      llvm::sys::fs::is_regular_file(status))
    llvm::sys::fs::setPermissions(temporary, status.permissions());
  else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(temporary.c_str(), 0666 & ~mask);
  }
  return commitOutputFile(temporary, path, command);
}

bool refuseOutputOverInput(llvm::StringRef output, llvm::StringRef input,
                           llvm::StringRef what, llvm::StringRef command) {
  if (output.empty() || output == "-" || input.empty() ||
      !llvm::sys::fs::equivalent(input, output))
    return false;
  llvm::errs() << "cleave " << command << ": error: the output '" << output
               << "' is " << what << " '" << input
               << "'; writing it would destroy it: give another name with "
                  "-o\n";
  return true;
}

} // namespace cleave::driver
