//===- OutputFile.cpp - writing the files users keep ----------------------===//

#include "tools/cleave/OutputFile.h"

#include "runtime/DurableFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace cleave::driver {

namespace {

bool report(llvm::StringRef command, llvm::StringRef path,
            llvm::StringRef reason) {
  llvm::errs() << "cleave " << command << ": error: cannot write '" << path
               << "': " << reason << "\n";
  return false;
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
  llvm::SmallString<256> model(::cleave::rt::parentDirectory(path.str()));
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
  std::string error;
  return ::cleave::rt::syncDirectory(::cleave::rt::parentDirectory(path.str()),
                                     error) ||
         report(command, path, error);
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
  std::string error;
  if (::cleave::rt::writeFileDurably(path.str(), contents.data(),
                                     contents.size(), error))
    return true;
  llvm::errs() << "cleave " << command << ": error: " << error << "\n";
  return false;
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
