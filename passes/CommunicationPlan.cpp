//===- CommunicationPlan.cpp - bytes each rank sends per step -------------===//

#include "passes/CommunicationPlan.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/BuiltinOps.h"

#include "runtime/CommVolume.h"

#include <numeric>

using namespace mlir;
using namespace mlir::cleave;

namespace {

using ::cleave::rt::CollectiveKind;

/// The index of `kind` in BytesByKind.
constexpr int indexOf(CollectiveKind kind) { return static_cast<int>(kind); }

int64_t elementBytes(Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  return element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8;
}

int64_t bytesOf(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements() *
         elementBytes(value.getType());
}

/// A rank's size and index in the group over `axes` (major to minor).
std::pair<int, int> groupOf(MeshAttr mesh, ArrayAttr axes,
                            ArrayRef<int64_t> coords) {
  int64_t size = 1, index = 0;
  for (StringAttr axis : axes.getAsRange<StringAttr>()) {
    int64_t a = mesh.getAxisIndex(axis.getValue());
    size *= mesh.getAxisSizes()[a];
    index = index * mesh.getAxisSizes()[a] + coords[a];
  }
  return {static_cast<int>(size), static_cast<int>(index)};
}

} // namespace

int64_t mlir::cleave::bytesSentBy(Operation *op, MeshAttr mesh,
                                  ArrayRef<int64_t> coords, int64_t stage,
                                  bool ringOnly, int &kind) {
  if (!runsOnStage(op, stage))
    return 0;
  if (auto transfer = dyn_cast<SendRecvOp>(op)) {
    kind = indexOf(CollectiveKind::SendRecv);
    if (transfer.getSourceAttr().getInt() != stage)
      return 0;
    return ::cleave::rt::sendRecvBytesSent(
        bytesOf(transfer.getInput()), transfer.getDestAttr().getInt(),
        mesh.getAxisSize(transfer.getAxis()), stage);
  }
  if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
    // A bucket travels as one reduction of all its elements on the cuda
    // target (NCCL's ring), as the reductions of its segments on the cpu
    // one.
    kind = indexOf(CollectiveKind::AllReduce);
    auto [size, index] = groupOf(mesh, allReduce.getAxes(), coords);
    SmallVector<int64_t> counts;
    for (Value input : allReduce.getInputs())
      counts.push_back(cast<ShapedType>(input.getType()).getNumElements());
    int64_t bytes = elementBytes(allReduce.getInputs()[0].getType());
    if (ringOnly)
      return ::cleave::rt::ringAllReduceBytesSent(
          std::accumulate(counts.begin(), counts.end(), int64_t{0}), bytes,
          size, index);
    return ::cleave::rt::bucketAllReduceBytesSent(
        counts.data(), static_cast<int>(counts.size()), bytes, size, index);
  }
  if (auto gather = dyn_cast<AllGatherOp>(op)) {
    kind = indexOf(CollectiveKind::AllGather);
    auto [size, index] = groupOf(mesh, gather.getAxes(), coords);
    return ::cleave::rt::allGatherBytesSent(bytesOf(gather.getInput()), size,
                                            index);
  }
  if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    kind = indexOf(CollectiveKind::ReduceScatter);
    auto [size, index] = groupOf(mesh, scatter.getAxes(), coords);
    return ::cleave::rt::reduceScatterBytesSent(
        cast<ShapedType>(scatter.getType()).getNumElements(),
        elementBytes(scatter.getType()), size, index);
  }
  if (auto allToAll = dyn_cast<AllToAllOp>(op)) {
    kind = indexOf(CollectiveKind::AllToAll);
    auto [size, index] = groupOf(mesh, allToAll.getAxes(), coords);
    return ::cleave::rt::allToAllBytesSent(bytesOf(allToAll.getInput()) / size,
                                           size, index);
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    kind = indexOf(CollectiveKind::Broadcast);
    auto [size, index] = groupOf(mesh, broadcast.getAxes(), coords);
    return ::cleave::rt::broadcastBytesSent(bytesOf(broadcast.getInput()),
                                            broadcast.getRoot(), size, index);
  }
  return 0;
}

std::vector<BytesByKind> mlir::cleave::predictBytesSent(func::FuncOp func,
                                                        bool ringOnly) {
  MeshAttr mesh = getModuleMesh(func);
  std::vector<BytesByKind> bytes(mesh.getNumRanks(), BytesByKind{});
  for (int64_t rank = 0; rank < mesh.getNumRanks(); ++rank) {
    SmallVector<int64_t> coords(mesh.getAxisSizes().size());
    for (int64_t a = coords.size() - 1, rest = rank; a >= 0; --a) {
      coords[a] = rest % mesh.getAxisSizes()[a];
      rest /= mesh.getAxisSizes()[a];
    }
    BytesByKind &mine = bytes[rank];
    // In a program split into pipeline stages, each rank runs its stage.
    int64_t stage = -1;
    if (auto axis =
            func->getParentOfType<ModuleOp>()->getAttrOfType<StringAttr>(
                CleaveDialect::kPipelineAttrName))
      stage = coords[mesh.getAxisIndex(axis.getValue())];
    func.walk([&](Operation *op) {
      int kind = -1;
      int64_t sent = bytesSentBy(op, mesh, coords, stage, ringOnly, kind);
      if (kind >= 0)
        mine[kind] += sent;
    });
  }
  return bytes;
}

void mlir::cleave::printBytesSent(ArrayRef<BytesByKind> bytes,
                                  llvm::raw_ostream &os) {
  os << "bytes sent per step:\n";
  for (auto [rank, kinds] : llvm::enumerate(bytes)) {
    os << "  rank " << rank << ":";
    for (auto [kind, count] : llvm::enumerate(kinds))
      os << " " << ::cleave::rt::kCollectiveKindNames[kind] << "=" << count;
    os << "\n";
  }
}
