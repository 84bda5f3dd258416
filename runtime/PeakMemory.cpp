//===- PeakMemory.cpp - the memory a rank measures it used ----------------===//

#include "runtime/PeakMemory.h"

#include "runtime/DriverOptions.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace cleave::rt {

namespace {

/// Lines of /proc/self/status, in kB.
struct StatusFields {
  int64_t resident = -1, peak = -1, file = -1;
};

StatusFields readStatus() {
  StatusFields fields;
  std::FILE *status = std::fopen("/proc/self/status", "r");
  if (!status)
    failRun(std::string("--print-memory-peak reads /proc/self/status, which "
                        "cannot be opened: ") +
            std::strerror(errno) + " (it needs Linux)");
  char line[256];
  while (std::fgets(line, sizeof(line), status)) {
    long long kb;
    if (std::sscanf(line, "VmRSS: %lld kB", &kb) == 1)
      fields.resident = kb * 1024;
    else if (std::sscanf(line, "VmHWM: %lld kB", &kb) == 1)
      fields.peak = kb * 1024;
    else if (std::sscanf(line, "RssFile: %lld kB", &kb) == 1)
      fields.file = kb * 1024;
  }
  std::fclose(status);
  if (fields.resident < 0 || fields.peak < 0 || fields.file < 0)
    failRun("--print-memory-peak: /proc/self/status has no VmRSS, VmHWM or "
            "RssFile line (Linux 4.5 or later has them)");
  return fields;
}

} // namespace

PeakMemoryMeter::PeakMemoryMeter(bool enabled) : on(enabled) {
  if (!on)
    return;
  // "5" resets VmHWM to the current resident set (Linux 4.0): the peak of
  // start-up (MPI's, the loader's) must not hide the run's.
  std::FILE *clear = std::fopen("/proc/self/clear_refs", "w");
  bool reset = clear && std::fputs("5", clear) >= 0;
  if (clear && std::fclose(clear) != 0)
    reset = false;
  if (!reset)
    failRun(std::string("--print-memory-peak cannot reset the resident "
                        "set's high-water mark (/proc/self/clear_refs): ") +
            std::strerror(errno));
  StatusFields base = readStatus();
  baseResident = base.resident;
  baseFile = base.file;
}

void PeakMemoryMeter::stop() {
  if (!on)
    return;
  StatusFields end = readStatus();
  measured.peak = end.peak - baseResident;
  measured.file = end.file - baseFile;
}

} // namespace cleave::rt
