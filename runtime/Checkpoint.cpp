//===- Checkpoint.cpp - saving and restoring training state ---------------===//

#include "runtime/Checkpoint.h"

#include "runtime/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
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
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST)
    return true;
  error = "cannot create the directory '" + path + "': " + std::strerror(errno);
  return false;
}

/// Removes a directory of plain files (an abandoned temporary checkpoint).
void removeFlatDirectory(const std::string &dir, const Program &program) {
  for (int i = 0; i < program.numTensors; ++i)
    std::remove((dir + "/" + npyFileName(program.tensors[i].name)).c_str());
  rmdir(dir.c_str());
}

} // namespace

bool loadTensors(const std::string &dir, const Program &program,
                 void *const *tensors, bool requireStates, std::string &error) {
  for (int i = 0; i < program.numTensors; ++i) {
    const TensorSpec &spec = program.tensors[i];
    if (!isPersistent(spec))
      continue;
    std::string path = dir + "/" + npyFileName(spec.name);
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
  for (int i = 0; i < program.numTensors; ++i) {
    const TensorSpec &spec = program.tensors[i];
    if (outputs ? spec.role != Role::Output : !isPersistent(spec))
      continue;
    std::vector<int64_t> shape(spec.shape.dims,
                               spec.shape.dims + spec.shape.rank);
    if (!writeNpy(dir + "/" + npyFileName(spec.name), dtypeNpyKind(spec.dtype),
                  shape, tensors[i],
                  spec.shape.numElements() * dtypeSize(spec.dtype), error))
      return false;
  }
  return true;
}

bool saveCheckpoint(const std::string &dir, int64_t step,
                    const Program &program, void *const *tensors,
                    std::string &error) {
  if (!makeDirectory(dir, error))
    return false;
  std::string name = "step-" + std::to_string(step);
  std::string temporary =
      dir + "/." + name + ".tmp-" + std::to_string(getpid());
  if (!writeTensors(temporary, program, tensors, /*outputs=*/false, error)) {
    removeFlatDirectory(temporary, program);
    return false;
  }
  std::string final = dir + "/" + name;
  if (fileExists(final))
    removeFlatDirectory(final, program);
  if (std::rename(temporary.c_str(), final.c_str()) != 0) {
    error = "cannot rename '" + temporary + "' to '" + final +
            "': " + std::strerror(errno);
    return false;
  }
  std::string latestTemporary = dir + "/.latest.tmp-" + std::to_string(getpid());
  {
    std::ofstream latest(latestTemporary);
    latest << name << "\n";
    if (!latest) {
      error = "cannot write '" + latestTemporary + "'";
      return false;
    }
  }
  if (std::rename(latestTemporary.c_str(), (dir + "/latest").c_str()) != 0) {
    error = "cannot update '" + dir + "/latest': " + std::strerror(errno);
    return false;
  }
  return true;
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
