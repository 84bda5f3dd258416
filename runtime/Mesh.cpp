//===- Mesh.cpp - MPI ranks as mesh coordinates ---------------------------===//
//
// Part of the Cleave runtime: plain C++ (no MLIR).
//
//===----------------------------------------------------------------------===//

#include "runtime/Mesh.h"
#include "runtime/MeshDetail.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

namespace cleave::rt {
namespace {

/// Groups are keyed by their axes as digits (axis + 1) in base
/// kMaxMeshAxes + 1, first axis least significant: distinct ordered groups
/// get distinct keys, and the trivial group key 0.
constexpr int kKeyBase = kMaxMeshAxes + 1;
constexpr int kNumGroupKeys = kKeyBase * kKeyBase * kKeyBase * kKeyBase;
static_assert(kMaxMeshAxes == 4, "kNumGroupKeys is kKeyBase^kMaxMeshAxes");

struct MeshState {
  bool active = false;
  int numAxes = 0;
  int sizes[kMaxMeshAxes] = {};
  int coords[kMaxMeshAxes] = {};
  int worldRank = 0;
  int worldSize = 1;
  /// For messages: argv[0]'s base name and the axis names (copied, as the
  /// spec's may not outlive initMesh's caller).
  std::string program = "train";
  std::string axisNames[kMaxMeshAxes];
  /// The communicator of every group of size > 1, by groupKey; the other
  /// entries are MPI_COMM_NULL.
  MPI_Comm comms[kNumGroupKeys];
};

MeshState mesh;

/// Checks what only a compiler bug could break: axes in range, none twice
/// (for asserts only).
[[maybe_unused]] bool isValidGroup(AxisGroup group) {
  if (group.count < 0 || group.count > mesh.numAxes)
    return false;
  unsigned seen = 0;
  for (int i = 0; i < group.count; ++i) {
    int axis = group.axes[i];
    if (axis < 0 || axis >= mesh.numAxes || (seen & (1u << axis)))
      return false;
    seen |= 1u << axis;
  }
  return true;
}

int groupKey(AxisGroup group) {
  int key = 0;
  for (int i = group.count - 1; i >= 0; --i)
    key = key * kKeyBase + group.axes[i] + 1;
  return key;
}

/// The row-major index of this rank's coordinates on the axes not in
/// `group`: ranks that differ only along the group's axes share it.
int complementIndex(AxisGroup group) {
  int index = 0;
  for (int axis = 0; axis < mesh.numAxes; ++axis) {
    bool inGroup = false;
    for (int i = 0; i < group.count; ++i)
      inGroup |= group.axes[i] == axis;
    if (!inGroup)
      index = index * mesh.sizes[axis] + mesh.coords[axis];
  }
  return index;
}

/// Splits MPI_COMM_WORLD for `group` extended by every ordering of the
/// axes it lacks, recursively. Every rank walks the same sequence, as
/// MPI_Comm_split is collective over the world.
void splitExtensions(AxisGroup group) {
  for (int axis = 0; axis < mesh.numAxes; ++axis) {
    bool used = false;
    for (int i = 0; i < group.count; ++i)
      used |= group.axes[i] == axis;
    if (used)
      continue;
    AxisGroup extended = group;
    extended.axes[extended.count++] = static_cast<int8_t>(axis);
    if (groupSize(extended) > 1)
      MPI_Comm_split(MPI_COMM_WORLD, complementIndex(extended),
                     groupRank(extended), &mesh.comms[groupKey(extended)]);
    splitExtensions(extended);
  }
}

/// A mesh problem every rank detects by itself: rank 0 reports it, and all
/// ranks leave MPI and exit with status 1, so that mpirun neither hangs nor
/// prints one message per rank.
[[noreturn]] void exitAllRanks(const std::string &program,
                               const std::string &message) {
  if (mesh.worldRank == 0) {
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), message.c_str());
    std::fflush(stderr);
  }
  MPI_Finalize();
  std::exit(1);
}

std::string plural(int64_t n, const char *noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

} // namespace

void initMesh(const MeshSpec &spec, int &argc, char **&argv) {
  if (spec.numAxes == 0)
    return;
  assert(!mesh.active && "initMesh called twice");
  assert(spec.numAxes <= kMaxMeshAxes && "too many mesh axes");
  std::string program = "train";
  if (argc > 0 && argv[0]) {
    const char *slash = std::strrchr(argv[0], '/');
    program = slash ? slash + 1 : argv[0];
  }

  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &mesh.worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &mesh.worldSize);
  // The collectives run on their own thread, one MPI call at a time.
  if (provided < MPI_THREAD_SERIALIZED)
    exitAllRanks(program, "the MPI library provides thread level " +
                              std::to_string(provided) +
                              ", below the MPI_THREAD_SERIALIZED the "
                              "communication thread needs");

  std::string meshText;
  int64_t meshRanks = 1;
  for (int axis = 0; axis < spec.numAxes; ++axis) {
    assert(spec.axisSizes[axis] >= 1 && "empty mesh axis");
    meshText += (axis ? "," : "") + std::string(spec.axisNames[axis]) + "=" +
                std::to_string(spec.axisSizes[axis]);
    meshRanks *= spec.axisSizes[axis];
  }
  if (meshRanks != mesh.worldSize) {
    // Open MPI sets OMPI_COMM_WORLD_SIZE in every process mpirun starts;
    // without it the program was run on its own (only the message differs).
    bool underMpirun = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
    std::string started =
        mesh.worldSize == 1 && !underMpirun
            ? std::string("it runs alone (not under mpirun)")
            : "mpirun started " + plural(mesh.worldSize, "rank");
    exitAllRanks(program, "this program was compiled for the mesh " +
                              meshText + " (" + plural(meshRanks, "rank") +
                              ") but " + started + "; run it with 'mpirun -np " +
                              std::to_string(meshRanks) +
                              "' or recompile with a --mesh of " +
                              plural(mesh.worldSize, "rank"));
  }

  mesh.numAxes = spec.numAxes;
  mesh.program = program;
  int rest = mesh.worldRank;
  for (int axis = spec.numAxes - 1; axis >= 0; --axis) {
    mesh.axisNames[axis] = spec.axisNames[axis];
    mesh.sizes[axis] = static_cast<int>(spec.axisSizes[axis]);
    mesh.coords[axis] = rest % mesh.sizes[axis];
    rest /= mesh.sizes[axis];
  }
  // Every ordered group up front (64 splits at most, for 4 axes): creating
  // them on first use would be a collective call over the whole world from
  // inside a collective over a subgroup, which deadlocks.
  std::fill(std::begin(mesh.comms), std::end(mesh.comms), MPI_COMM_NULL);
  splitExtensions(AxisGroup{{}, 0});
  mesh.active = true;
  detail::startCommThread();
}

void finalizeMesh() {
  if (!mesh.active)
    return;
  // MPI_Finalize waits for every rank without a time limit: a rank that
  // stopped would hold the others there forever. The barrier before it has
  // the collectives' watchdog.
  detail::finalBarrier();
  detail::stopCommThread();
  for (MPI_Comm &comm : mesh.comms)
    if (comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  MPI_Finalize();
  mesh = MeshState();
}

int meshCoord(int axis) {
  assert(axis >= 0 && axis < mesh.numAxes && "no such mesh axis");
  return mesh.coords[axis];
}

int worldRank() { return mesh.worldRank; }
int worldSize() { return mesh.worldSize; }
bool isMeshRoot() { return mesh.worldRank == 0; }

int groupSize(AxisGroup group) {
  assert(isValidGroup(group) && "bad axis group");
  int size = 1;
  for (int i = 0; i < group.count; ++i)
    size *= mesh.sizes[group.axes[i]];
  return size;
}

int groupRank(AxisGroup group) {
  assert(isValidGroup(group) && "bad axis group");
  int rank = 0;
  for (int i = 0; i < group.count; ++i)
    rank = rank * mesh.sizes[group.axes[i]] + mesh.coords[group.axes[i]];
  return rank;
}

namespace detail {

MPI_Comm groupComm(AxisGroup group) {
  assert(mesh.active && groupSize(group) > 1 && "no communicator to use");
  return mesh.comms[groupKey(group)];
}

const char *meshProgramName() { return mesh.program.c_str(); }

std::string groupName(AxisGroup group) {
  std::string name = "{";
  for (int i = 0; i < group.count; ++i)
    name += (i ? "," : "") + mesh.axisNames[group.axes[i]];
  return name + "}";
}

} // namespace detail
} // namespace cleave::rt
