//===- RankAgreement.h - ranks check they run the same job ------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Ranks started with
// different options, builds or data would start different collectives and
// wait in them forever. Before a distributed program computes, each rank
// lists what decides its work (the program, then every option and loaded
// file that changes it) as a fixed number of (hash, value) items, and one
// all-gather over the mesh shows every rank the others' lists. Where they
// differ, every rank exits 1 and rank 0 names the first item that differs,
// each rank's value of it, and the fix.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_RANKAGREEMENT_H
#define CLEAVE_RUNTIME_RANKAGREEMENT_H

#include "runtime/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::rt {

/// A 64-bit hash (XXH64's mixing) of `bytes` bytes at `data`, continuing
/// from `seed`: several GB/s, for fingerprints, not for security.
uint64_t hashBytes(const void *data, int64_t bytes, uint64_t seed = 0);

class RankAgreement {
public:
  /// Starts the list with the program itself: its tensor table (names,
  /// types, shapes, roles, shardings, stages), initial values, scratch
  /// size, mesh and pipeline, and the executable's code and constants.
  explicit RankAgreement(const Program &program);

  /// An option's value; one that was not given shows as "none".
  void addValue(const char *option, int64_t value, bool given = true);
  /// An option that takes no value: given or not.
  void addFlag(const char *option, bool given);
  /// The samples loaded for graph input `input`: their shape and bytes, not
  /// the file's path (the same data in two directories agrees).
  void addInputData(const char *input, const std::vector<int64_t> &shape,
                    const void *data, int64_t bytes);
  /// The parameters and states that `option` (--init, --resume) loaded into
  /// `values`, whole tensors of `program`'s (global) shapes.
  void addLoadedValues(const char *option, const Program &program,
                       void *const *values);

  /// Compares this rank's list with every other rank's (one all-gather
  /// over the mesh). If any item differs, rank 0 says which and every rank
  /// leaves MPI and exits with status 1. Does nothing without a mesh.
  void require();

  /// The list holds this many items; later ones fold into the last.
  static constexpr int kMaxItems = 64;

private:
  /// How an item's value reads in messages.
  enum class Show { Program, Value, Flag, Contents };
  /// What every rank sends for an item.
  struct Record {
    uint64_t hash;
    int64_t value;
    int64_t given;
  };
  struct Item {
    std::string what;
    Show show;
    /// The noun of a Contents item's value ("samples"), or null.
    const char *unit;
    const char *fix;
  };
  void add(Item item, Record record);
  /// The message for item `index`, given every rank's records.
  std::string describe(int index, const std::vector<Record> &all,
                       int ranks) const;

  MeshSpec mesh;
  std::vector<Item> items;
  std::vector<Record> records;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_RANKAGREEMENT_H
