//===- RankAgreement.cpp - ranks check they run the same job --------------===//
//
// Part of the Cleave runtime: plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//

#include "runtime/RankAgreement.h"
#include "runtime/Collectives.h"
#include "runtime/MeshDetail.h"
#include "runtime/Sharding.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <link.h>

namespace cleave::rt {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

uint64_t rotateLeft(uint64_t x, int bits) {
  return (x << bits) | (x >> (64 - bits));
}
/// Little-endian 8 bytes. Not checked by AddressSanitizer: the program's
/// hash reads its own loaded segments whole, across the redzones ASan puts
/// between globals (mapped memory, but no object's).
__attribute__((no_sanitize("address"))) uint64_t
load64(const unsigned char *p) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k)
    v |= static_cast<uint64_t>(p[k]) << (8 * k);
  return v;
}
__attribute__((no_sanitize("address"))) uint64_t load8(const unsigned char *p) {
  return *p;
}
uint64_t mixRound(uint64_t acc, uint64_t input) {
  return rotateLeft(acc + input * kPrime2, 31) * kPrime1;
}
uint64_t mergeRound(uint64_t acc, uint64_t lane) {
  return (acc ^ mixRound(0, lane)) * kPrime1 + kPrime4;
}

/// Bumped when the records or the program's hash change meaning, so that
/// ranks of two runtime builds disagree on the program rather than
/// misreading each other's lists.
constexpr int64_t kAgreementVersion = 1;

/// "rank 3", "ranks 0-2,5".
std::string rankList(const std::vector<int> &ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    text += (i ? "," : "") + std::to_string(ranks[i]);
    if (j > i)
      text += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

/// "a", "a and b", "a, b and c".
std::string joinAnd(const std::vector<std::string> &parts) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i)
    text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return text;
}

/// The executable's read-only segments (code and constants): two programs
/// with the same tensor table may differ in what the step computes (a
/// learning rate, a kernel), or be builds of another compiler or runtime.
/// Notes whether the program's initial values lie among them (embedded),
/// so that they need no second hash.
struct ExecutableHash {
  uint64_t hash = 0;
  const char *initialValues;
  bool coversInitialValues = false;
};

int hashExecutable(dl_phdr_info *info, size_t, void *data) {
  ExecutableHash &state = *static_cast<ExecutableHash *>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_W))
      continue;
    const char *begin =
        reinterpret_cast<const char *>(info->dlpi_addr + segment.p_vaddr);
    state.hash = hashBytes(begin, segment.p_filesz, state.hash);
    state.coversInitialValues |= state.initialValues >= begin &&
                                 state.initialValues < begin + segment.p_filesz;
  }
  // The executable comes first; the shared libraries are the system's.
  return 1;
}

/// At most this many groups of ranks are listed in a message.
constexpr size_t kListedGroups = 4;

} // namespace

uint64_t hashBytes(const void *data, int64_t bytes, uint64_t seed) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  const unsigned char *end = p + (bytes > 0 ? bytes : 0);
  uint64_t h;
  if (end - p >= 32) {
    uint64_t v1 = seed + kPrime1 + kPrime2, v2 = seed + kPrime2, v3 = seed,
             v4 = seed - kPrime1;
    for (; end - p >= 32; p += 32) {
      v1 = mixRound(v1, load64(p));
      v2 = mixRound(v2, load64(p + 8));
      v3 = mixRound(v3, load64(p + 16));
      v4 = mixRound(v4, load64(p + 24));
    }
    h = rotateLeft(v1, 1) + rotateLeft(v2, 7) + rotateLeft(v3, 12) +
        rotateLeft(v4, 18);
    h = mergeRound(mergeRound(mergeRound(mergeRound(h, v1), v2), v3), v4);
  } else {
    h = seed + kPrime5;
  }
  h += static_cast<uint64_t>(bytes);
  for (; end - p >= 8; p += 8)
    h = rotateLeft(h ^ mixRound(0, load64(p)), 27) * kPrime1 + kPrime4;
  for (; p < end; ++p)
    h = rotateLeft(h ^ (load8(p) * kPrime5), 11) * kPrime1;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  return h ^ (h >> 32);
}

RankAgreement::RankAgreement(const Program &program) : mesh(program.mesh) {
  uint64_t h = 0;
  auto addInt = [&](int64_t value) { h = hashBytes(&value, sizeof(value), h); };
  // With the terminator, so that "ab","c" and "a","bc" differ.
  auto addString = [&](const char *text) {
    h = text ? hashBytes(text, std::strlen(text) + 1, h) : hashBytes("", 0, h);
  };
  addInt(kAgreementVersion);
  addInt(kMaxItems);
  addString(program.model);
  addInt(program.numTensors);
  for (int i = 0; i < program.numTensors; ++i) {
    const TensorSpec &spec = program.tensors[i];
    addString(spec.name);
    addInt(static_cast<int64_t>(spec.dtype));
    addInt(spec.shape.rank);
    for (int d = 0; d < spec.shape.rank; ++d)
      addInt(spec.shape.dims[d]);
    addInt(static_cast<int64_t>(spec.role));
    addInt(spec.initOffset);
    addString(spec.sharding);
    addInt(spec.stage);
  }
  addInt(program.arenaBytes);
  addInt(program.initialBytes);
  ExecutableHash executable;
  executable.initialValues = program.initialValues;
  dl_iterate_phdr(hashExecutable, &executable);
  addInt(static_cast<int64_t>(executable.hash));
  if (!executable.coversInitialValues)
    h = hashBytes(program.initialValues, program.initialBytes, h);
  addInt(program.training);
  addInt(program.mesh.numAxes);
  for (int axis = 0; axis < program.mesh.numAxes; ++axis) {
    addString(program.mesh.axisNames[axis]);
    addInt(program.mesh.axisSizes[axis]);
  }
  addInt(program.pipeline.axis);
  addInt(program.pipeline.lossStage);
  addInt(program.device != nullptr);
  addInt(program.kernelScratchBytes);
  addInt(program.numIndexChecks);
  for (int c = 0; c < program.numIndexChecks; ++c) {
    const IndexInputCheck &check = program.indexChecks[c];
    for (int64_t value : {int64_t(check.tensor), check.low, check.high,
                          int64_t(check.hasIgnore), check.ignore})
      addInt(value);
  }
  add({"the program", Show::Program, nullptr,
       "start every rank with the same program"},
      {h, 0, 1});
}

void RankAgreement::add(Item item, Record record) {
  if (static_cast<int>(items.size()) < kMaxItems) {
    items.push_back(std::move(item));
    records.push_back(record);
    return;
  }
  // A model with dozens of inputs: the rest share the last item.
  Item &last = items.back();
  Record &folded = records.back();
  folded.hash = hashBytes(&record, sizeof(record), folded.hash);
  folded.value = 0;
  last = {"the data and options after the first " +
              std::to_string(kMaxItems - 1) + " checked",
          Show::Contents, nullptr,
          "start every rank with the same options and data"};
}

void RankAgreement::addValue(const char *option, int64_t value, bool given) {
  int64_t fields[2] = {given ? value : 0, given};
  Record record{hashBytes(fields, sizeof(fields)), fields[0], fields[1]};
  add({option, Show::Value, nullptr, "start every rank with the same options"},
      record);
}

void RankAgreement::addFlag(const char *option, bool given) {
  Record record{0, 0, given};
  record.hash = hashBytes(&record.given, sizeof(record.given));
  add({option, Show::Flag, nullptr, "start every rank with the same options"},
      record);
}

void RankAgreement::addInputData(const char *input,
                                 const std::vector<int64_t> &shape,
                                 const void *data, int64_t bytes) {
  uint64_t h = hashBytes(shape.data(), shape.size() * sizeof(int64_t));
  h = hashBytes(data, bytes, h);
  add({"the data of input '" + std::string(input) + "' (--data)",
       Show::Contents, "samples",
       "give every rank the same data (the same files in its --data "
       "directory)"},
      {h, shape.empty() ? 1 : shape[0], 1});
}

void RankAgreement::addLoadedValues(const char *option, const Program &program,
                                    void *const *values) {
  uint64_t h = 0;
  for (int i = 0; i < program.numTensors; ++i) {
    const TensorSpec &spec = program.tensors[i];
    if (spec.role == Role::Param || spec.role == Role::State)
      h = hashBytes(values[i], spec.shape.numElements() * dtypeSize(spec.dtype),
                    h);
  }
  add({"the parameters and states " + std::string(option) + " loaded",
       Show::Contents, nullptr,
       "give every rank the same files to load (the same directory "
       "contents)"},
      {h, 0, 1});
}

std::string RankAgreement::describe(int index, const std::vector<Record> &all,
                                    int ranks) const {
  const Item &item = items[index];
  auto at = [&](int rank) -> const Record & {
    return all[static_cast<size_t>(rank) * kMaxItems + index];
  };
  // The ranks by what they have, in order of their lowest rank.
  std::vector<std::vector<int>> groups;
  for (int rank = 0; rank < ranks; ++rank) {
    const Record &mine = at(rank);
    size_t g = 0;
    for (; g < groups.size(); ++g) {
      const Record &theirs = at(groups[g][0]);
      if (theirs.hash == mine.hash && theirs.value == mine.value &&
          theirs.given == mine.given)
        break;
    }
    if (g == groups.size())
      groups.emplace_back();
    groups[g].push_back(rank);
  }
  std::string text = "ranks disagree on " + item.what + ": ";
  if (item.show == Show::Program) {
    std::vector<int> others;
    for (size_t g = 1; g < groups.size(); ++g)
      others.insert(others.end(), groups[g].begin(), groups[g].end());
    std::sort(others.begin(), others.end());
    text += rankList(others) + (others.size() == 1 ? " was" : " were") +
            " started with a different binary or build than " +
            rankList(groups[0]);
    return text + "; " + item.fix;
  }
  bool sameCounts = true;
  for (const std::vector<int> &group : groups)
    sameCounts &= at(group[0]).value == at(groups[0][0]).value;
  std::vector<std::string> parts;
  for (size_t g = 0; g < groups.size() && g < kListedGroups; ++g) {
    const std::vector<int> &group = groups[g];
    const Record &record = at(group[0]);
    bool one = group.size() == 1;
    std::string part = rankList(group);
    switch (item.show) {
    case Show::Value:
      part += (one ? " has " : " have ") +
              (record.given ? std::to_string(record.value) : "none");
      break;
    case Show::Flag:
      part += record.given ? (one ? " gives it" : " give it")
                           : (one ? " does not" : " do not");
      break;
    case Show::Contents:
      if (!sameCounts)
        part += (one ? " has " : " have ") + std::to_string(record.value) +
                " " + item.unit;
      break;
    case Show::Program:
      break;
    }
    parts.push_back(part);
  }
  if (groups.size() > kListedGroups)
    parts.push_back(std::to_string(groups.size() - kListedGroups) +
                    " other groups of ranks");
  if (item.show != Show::Contents) {
    for (size_t i = 0; i < parts.size(); ++i)
      text += (i ? ", " : "") + parts[i];
  } else if (!sameCounts) {
    text += joinAnd(parts);
  } else {
    text += joinAnd(parts) + " loaded different values";
    if (item.unit)
      text += " (" + std::to_string(at(0).value) + " " + item.unit + " each)";
  }
  return text + "; " + item.fix;
}

void RankAgreement::require() {
  if (mesh.numAxes == 0)
    return;
  int ranks = worldSize();
  std::vector<Record> mine(kMaxItems, Record{0, 0, 0});
  std::copy(records.begin(), records.end(), mine.begin());
  std::vector<Record> all(static_cast<size_t>(ranks) * kMaxItems);
  allGather(mine.data(), all.data(), kMaxItems * sizeof(Record), allAxes(mesh));
  // The program first: other items mean nothing across builds.
  for (int index = 0; index < static_cast<int>(items.size()); ++index) {
    bool agree = true;
    for (int rank = 1; rank < ranks && agree; ++rank) {
      const Record &a = all[index], &b = all[rank * kMaxItems + index];
      agree = a.hash == b.hash && a.value == b.value && a.given == b.given;
    }
    if (agree)
      continue;
    if (isMeshRoot()) {
      std::fprintf(stderr, "%s: error: %s\n", detail::meshProgramName(),
                   describe(index, all, ranks).c_str());
      std::fflush(stderr);
    }
    finalizeMesh();
    std::exit(1);
  }
}

} // namespace cleave::rt
