//===- Checkpoint.cpp - saving and restoring training state ---------------===//

#include "runtime/Checkpoint.h"

#include "runtime/DurableFile.h"
#include "runtime/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace cleave::rt {

namespace {

bool isPersistent(const TensorSpec &spec) {
  return spec.role == Role::Param || spec.role == Role::State;
}

bool fileExists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

bool makeDirectory(const std::string &path, std::string &error) {
  // A new directory's own entry must reach the disk too.
  if (mkdir(path.c_str(), 0755) == 0)
    return syncDirectory(parentDirectory(path), error);
  if (errno == EEXIST)
    return true;
  error = "cannot create the directory '" + path + "': " + std::strerror(errno);
  return false;
}

/// Removes a directory of plain files (an abandoned temporary checkpoint,
/// or a replaced one); false if something stays.
bool removeFlatDirectory(const std::string &dir) {
  if (DIR *listing = opendir(dir.c_str())) {
    while (dirent *entry = readdir(listing))
      if (std::strcmp(entry->d_name, ".") != 0 &&
          std::strcmp(entry->d_name, "..") != 0)
        unlinkat(dirfd(listing), entry->d_name, 0);
    closedir(listing);
  }
  return rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

/// The first line of `<dir>/latest`, shown printable; empty if none.
std::string latestName(const std::string &dir) {
  std::ifstream latest(dir + "/latest");
  std::string name;
  if (!latest || !std::getline(latest, name))
    return "";
  for (char &c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      c = '?';
  return name.substr(0, 80);
}

/// Writes one tensor's .npy file, checked and flushed to the disk, but not
/// yet committed.
bool writeTensorFile(DurableFile &file, const std::string &path,
                     DurableFile::Placement placement, const TensorSpec &spec,
                     const void *data, std::string &error) {
  std::vector<int64_t> shape(spec.shape.dims,
                             spec.shape.dims + spec.shape.rank);
  std::string header = npyHeader(dtypeNpyKind(spec.dtype), shape);
  int64_t bytes = spec.shape.numElements() * dtypeSize(spec.dtype);
  return file.open(path, placement, error) &&
         file.write(header.data(), header.size(), error) &&
         file.write(data, static_cast<size_t>(bytes), error) &&
         file.close(error);
}

/// Writes every parameter and state (or every output) into `dir`, which
/// exists, as files that are whole and on the disk.
bool writeTensorFiles(const std::string &dir, const Program &program,
                      void *const *tensors, bool outputs,
                      DurableFile::Placement placement,
                      std::vector<DurableFile> &files, std::string &error) {
  for (int i = 0; i < program.numTensors; ++i) {
    const TensorSpec &spec = program.tensors[i];
    if (outputs ? spec.role != Role::Output : !isPersistent(spec))
      continue;
    files.emplace_back();
    if (!writeTensorFile(files.back(), dir + "/" + spec.file, placement, spec,
                         tensors[i], error))
      return false;
  }
  return true;
}

} // namespace

bool loadTensors(const std::string &dir, const Program &program,
                 void *const *tensors, bool requireStates, std::string &error) {
  for (int i = 0; i < program.numTensors; ++i) {
    const TensorSpec &spec = program.tensors[i];
    if (!isPersistent(spec))
      continue;
    std::string path = dir + "/" + spec.file;
    if (spec.role == Role::State && !requireStates && !fileExists(path))
      continue;
    NpyArray array;
    if (!readNpy(path, array, error)) {
      if (spec.role == Role::Param && !fileExists(path))
        error += " (every parameter needs a file; '" + std::string(spec.name) +
                 "' has none)";
      return false;
    }
    std::vector<int64_t> shape(spec.shape.dims,
                               spec.shape.dims + spec.shape.rank);
    if (array.kind != dtypeNpyKind(spec.dtype) || array.shape != shape) {
      error = "'" + path + "' does not hold " + dtypeName(spec.dtype) +
              " of the shape of '" + spec.name +
              "'; it belongs to another model or was not saved from it";
      return false;
    }
    std::memcpy(tensors[i], array.data.data(), array.data.size());
  }
  return true;
}

bool writeTensors(const std::string &dir, const Program &program,
                  void *const *tensors, bool outputs, std::string &error) {
  if (!makeDirectory(dir, error))
    return false;
  // Every new file is whole on the disk before the first one replaces an
  // earlier dump's: a failure leaves that dump as it was. (The temporaries
  // of a failure are removed with `files`.)
  std::vector<DurableFile> files;
  if (!writeTensorFiles(dir, program, tensors, outputs,
                        DurableFile::Placement::Beside, files, error)) {
    error += "; no file in '" + dir + "' was replaced";
    return false;
  }
  for (DurableFile &file : files)
    if (!file.commit(error, /*syncDirectory=*/false))
      return false;
  return syncDirectory(dir, error);
}

bool saveCheckpoint(const std::string &dir, int64_t step,
                    const Program &program, void *const *tensors,
                    std::string &error) {
  if (!makeDirectory(dir, error))
    return false;
  std::string name = "step-" + std::to_string(step);
  std::string pid = std::to_string(getpid());
  std::string temporary = dir + "/." + name + ".tmp-" + pid;
  std::string final = dir + "/" + name;
  std::string previous = latestName(dir);
  auto failed = [&](const std::string &why) {
    removeFlatDirectory(temporary);
    error = why + "; the checkpoint of step " + std::to_string(step) +
            " is not saved (" +
            (previous.empty() ? "there is no earlier one in '" + dir + "'"
                              : "'" + dir + "/latest' still names " + previous +
                                    ": --resume continues there") +
            ")";
    return false;
  };
  // Left by an earlier process of the same id, killed while writing.
  removeFlatDirectory(temporary);
  if (mkdir(temporary.c_str(), 0755) != 0)
    return failed("cannot create the directory '" + temporary +
                  "': " + std::strerror(errno));
  {
    std::vector<DurableFile> files;
    if (!writeTensorFiles(temporary, program, tensors, /*outputs=*/false,
                          DurableFile::Placement::InPlace, files, error) ||
        !syncDirectory(temporary, error))
      return failed(error);
    for (DurableFile &file : files)
      if (!file.commit(error, /*syncDirectory=*/false))
        return failed(error);
  }
  // A step-N of an abandoned run (killed before its `latest` moved) is
  // replaced only by a whole new one: exchanged atomically where the file
  // system can, else moved aside first.
  bool replaced = false;
  std::string aside = dir + "/." + name + ".old-" + pid;
  if (fileExists(final)) {
    if (renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, final.c_str(),
                  RENAME_EXCHANGE) == 0) {
      aside = temporary;
    } else {
      removeFlatDirectory(aside);
      if (std::rename(final.c_str(), aside.c_str()) != 0)
        return failed("cannot move the earlier '" + final +
                      "' aside: " + std::strerror(errno));
      if (std::rename(temporary.c_str(), final.c_str()) != 0) {
        std::string why = "cannot rename '" + temporary + "' to '" + final +
                          "': " + std::strerror(errno);
        std::rename(aside.c_str(), final.c_str());
        return failed(why);
      }
    }
    replaced = true;
  } else if (std::rename(temporary.c_str(), final.c_str()) != 0) {
    return failed("cannot rename '" + temporary + "' to '" + final +
                  "': " + std::strerror(errno));
  }
  if (!syncDirectory(dir, error))
    return false;
  // `latest` moves only now that the checkpoint it names is durable.
  std::string latest = name + "\n";
  if (!writeFileDurably(dir + "/latest", latest.data(), latest.size(), error)) {
    error += "; '" + final + "' is whole, but '" + dir + "/latest' " +
             (previous.empty() ? "is missing" : "still names " + previous);
    return false;
  }
  if (replaced)
    removeFlatDirectory(aside);
  return true;
}

bool holdsCheckpoints(const std::string &dir, std::string &what) {
  std::string latest = latestName(dir);
  if (!latest.empty() || fileExists(dir + "/latest")) {
    what = "its 'latest' names " + (latest.empty() ? "nothing" : latest);
    return true;
  }
  DIR *listing = opendir(dir.c_str());
  if (!listing)
    return false;
  bool found = false;
  while (dirent *entry = readdir(listing))
    if (std::strncmp(entry->d_name, "step-", 5) == 0) {
      what = "it holds '" + std::string(entry->d_name) + "'";
      found = true;
      break;
    }
  closedir(listing);
  return found;
}

bool removeOtherCheckpoints(const std::string &dir, int64_t step,
                            std::string &error) {
  DIR *listing = opendir(dir.c_str());
  if (!listing) {
    error = "cannot list '" + dir + "': " + std::strerror(errno);
    return false;
  }
  std::string keep = "step-" + std::to_string(step);
  std::vector<std::string> others;
  while (dirent *entry = readdir(listing)) {
    std::string name = entry->d_name;
    if (name.size() > 5 && name.rfind("step-", 0) == 0 && name != keep &&
        name.find_first_not_of("0123456789", 5) == std::string::npos)
      others.push_back(name);
  }
  closedir(listing);
  bool ok = true;
  for (const std::string &name : others)
    if (!removeFlatDirectory(dir + "/" + name)) {
      error = "cannot remove the earlier run's checkpoint '" + dir + "/" +
              name + "': " + std::strerror(errno);
      ok = false;
    }
  std::string syncError;
  return syncDirectory(dir, syncError) && ok;
}

bool lockCheckpointDirectory(const std::string &dir, std::string &error) {
  if (!makeDirectory(dir, error))
    return false;
  std::string path = dir + "/.lock";
  // Left open on purpose: the lock lasts until the process ends.
  int fd = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) == 0)
    return true;
  if (errno == EWOULDBLOCK) {
    error = "another run is using the checkpoint directory '" + dir +
            "' (it holds " + path + "); give each run its own --checkpoint-dir";
    close(fd);
    return false;
  }
  // Some cluster file systems have no flock: go on unprotected.
  std::fprintf(stderr,
               "warning: cannot lock '%s' (%s); make sure no other run uses "
               "this checkpoint directory\n",
               path.c_str(), std::strerror(errno));
  close(fd);
  return true;
}

bool findLatestCheckpoint(const std::string &dir, std::string &path,
                          int64_t &step, std::string &error) {
  std::ifstream latest(dir + "/latest");
  std::string name;
  if (!latest || !std::getline(latest, name)) {
    error = "no checkpoint to resume from in '" + dir +
            "' (its 'latest' file is missing or empty)";
    return false;
  }
  char *end = nullptr;
  std::string rest;
  if (name.rfind("step-", 0) != 0 || name.size() == 5 ||
      (step = std::strtoll(name.c_str() + 5, &end, 10), *end != '\0') ||
      step < 0 || (std::getline(latest, rest) && !rest.empty())) {
    error = "'" + dir +
            "/latest' does not hold one line step-<k> naming a "
            "checkpoint (it starts '" +
            name + "'); the directory is corrupt";
    return false;
  }
  path = dir + "/" + name;
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    error = "'" + dir + "/latest' names '" + name +
            "', but there is no such checkpoint directory; the directory is "
            "corrupt";
    return false;
  }
  return true;
}

} // namespace cleave::rt
