//===- Sharding.cpp - local blocks of split tensors -----------------------===//

#include "runtime/Sharding.h"

#include "runtime/Collectives.h"

#include <cstring>

namespace cleave::rt {

bool TensorSharding::isReplicated() const {
  for (const AxisGroup &group : dims)
    if (group.count)
      return false;
  return true;
}

bool parseSharding(const char *text, const MeshSpec &mesh, int rank,
                   TensorSharding &sharding, std::string &error) {
  sharding = TensorSharding{};
  if (!text || !*text)
    return true;
  std::string body(text);
  if (body.size() < 2 || body.front() != '[' || body.back() != ']') {
    error = "malformed sharding '" + body + "'";
    return false;
  }
  body = body.substr(1, body.size() - 2);
  int dim = 0;
  size_t pos = 0;
  auto addAxis = [&](const std::string &name) {
    for (int a = 0; a < mesh.numAxes; ++a)
      if (name == mesh.axisNames[a]) {
        AxisGroup &group = sharding.dims[dim];
        group.axes[group.count++] = static_cast<int8_t>(a);
        return true;
      }
    error = "sharding '" + std::string(text) + "' names unknown axis '" +
            name + "'";
    return false;
  };
  while (pos <= body.size() && !body.empty()) {
    if (dim >= rank) {
      error = "sharding '" + std::string(text) + "' has too many dimensions";
      return false;
    }
    size_t end;
    if (body[pos] == '{') {
      size_t close = body.find('}', pos);
      std::string inner = body.substr(pos + 1, close - pos - 1);
      size_t start = 0;
      while (start <= inner.size()) {
        size_t comma = inner.find(',', start);
        if (comma == std::string::npos)
          comma = inner.size();
        if (!addAxis(inner.substr(start, comma - start)))
          return false;
        start = comma + 1;
      }
      end = close + 1;
    } else {
      end = body.find(',', pos);
      if (end == std::string::npos)
        end = body.size();
      std::string name = body.substr(pos, end - pos);
      if (name != "_" && !addAxis(name))
        return false;
    }
    ++dim;
    pos = end + 1;
    if (end >= body.size())
      break;
  }
  return true;
}

namespace {

int64_t groupSizeOf(const AxisGroup &group, const MeshSpec &mesh) {
  int64_t size = 1;
  for (int i = 0; i < group.count; ++i)
    size *= mesh.axisSizes[group.axes[i]];
  return size;
}

} // namespace

int64_t blockIndex(const AxisGroup &group, const MeshSpec &mesh,
                   const int *coords) {
  int64_t index = 0;
  for (int i = 0; i < group.count; ++i)
    index = index * mesh.axisSizes[group.axes[i]] + coords[group.axes[i]];
  return index;
}

Shape globalShape(const Shape &local, const TensorSharding &sharding,
                  const MeshSpec &mesh) {
  Shape global = local;
  for (int d = 0; d < local.rank; ++d)
    global.dims[d] *= groupSizeOf(sharding.dims[d], mesh);
  return global;
}

AxisGroup allAxes(const MeshSpec &mesh) {
  AxisGroup world{};
  for (int a = 0; a < mesh.numAxes; ++a)
    world.axes[world.count++] = static_cast<int8_t>(a);
  return world;
}

std::vector<int> meshCoordsOf(const MeshSpec &mesh, int rank) {
  std::vector<int> coords(mesh.numAxes);
  for (int a = mesh.numAxes - 1; a >= 0; --a) {
    coords[a] = rank % mesh.axisSizes[a];
    rank /= mesh.axisSizes[a];
  }
  return coords;
}

void copyBlock(char *global, const Shape &globalShape, char *local,
               const Shape &localShape, const TensorSharding &sharding,
               const MeshSpec &mesh, const int *coords, int64_t elementBytes,
               bool toLocal) {
  int rank = localShape.rank;
  if (rank == 0) {
    toLocal ? std::memcpy(local, global, elementBytes)
            : std::memcpy(global, local, elementBytes);
    return;
  }
  int64_t offsets[kMaxRank];
  for (int d = 0; d < rank; ++d)
    offsets[d] = blockIndex(sharding.dims[d], mesh, coords) * localShape[d];
  // Copy contiguous rows of the last dimension.
  int64_t rowBytes = localShape[rank - 1] * elementBytes;
  int64_t rows = localShape.numElements() / localShape[rank - 1];
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rest = row, globalIndex = 0, stride = 1;
    int64_t index[kMaxRank];
    for (int d = rank - 2; d >= 0; --d) {
      index[d] = rest % localShape[d];
      rest /= localShape[d];
    }
    for (int d = rank - 1; d >= 0; --d) {
      int64_t i = (d == rank - 1 ? 0 : index[d]) + offsets[d];
      globalIndex += i * stride;
      stride *= globalShape[d];
    }
    char *g = global + globalIndex * elementBytes;
    char *l = local + row * rowBytes;
    toLocal ? std::memcpy(l, g, rowBytes) : std::memcpy(g, l, rowBytes);
  }
}

void gatherGlobalToFirst(const char *local, const Shape &localShape,
                         const TensorSharding &sharding, const MeshSpec &mesh,
                         const int *coords, AxisGroup group,
                         int64_t elementBytes, char *global) {
  int64_t localBytes = localShape.numElements() * elementBytes;
  // This rank's place in the group, row-major over the group's axes.
  int groupRank = 0;
  for (int i = 0; i < group.count; ++i)
    groupRank =
        groupRank * mesh.axisSizes[group.axes[i]] + coords[group.axes[i]];
  if (sharding.isReplicated() || mesh.numAxes == 0) {
    if (groupRank == 0)
      std::memcpy(global, local, localBytes);
    return;
  }
  if (groupRank != 0) {
    sendRecv(local, nullptr, localBytes, 0, kNoPeer, group);
    return;
  }
  Shape wholeShape = globalShape(localShape, sharding, mesh);
  std::vector<char> block(localBytes);
  std::vector<int> memberCoords(coords, coords + mesh.numAxes);
  for (int r = 0, members = groupSize(group); r < members; ++r) {
    if (r == 0)
      std::memcpy(block.data(), local, localBytes);
    else
      sendRecv(nullptr, block.data(), localBytes, kNoPeer, r, group);
    for (int i = group.count - 1, rest = r; i >= 0; --i) {
      memberCoords[group.axes[i]] = rest % mesh.axisSizes[group.axes[i]];
      rest /= mesh.axisSizes[group.axes[i]];
    }
    copyBlock(global, wholeShape, block.data(), localShape, sharding, mesh,
              memberCoords.data(), elementBytes, /*toLocal=*/false);
  }
}

} // namespace cleave::rt
