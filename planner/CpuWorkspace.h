//===- CpuWorkspace.h - kernels' memory beside the plan ---------*- C++ -*-===//
//
// The memory plan (codegen/MemoryPlan.h) places every tensor of a step; the
// cpu runtime's convolutions on oneDNN also hold workspaces of their own:
// copies of their operands in the layouts oneDNN's kernels take, and
// oneDNN's scratchpad (runtime/OneDnnConvolution.h); so does the buffer
// small strided products gather their matrices in (runtime
// MatmulGeometry.h). A rank keeps them for the whole run, each as large as
// the largest call's, so they add to its peak as the cuda target's kernel
// scratch region does. oneDNN itself says its sizes: the planner describes
// each call's primitives as the runtime will (for this machine's CPU)
// without creating them. OpenBLAS's packing buffers are predicted from the
// products' shapes and the blocking `cleave calibrate` measured.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_CPUWORKSPACE_H
#define CLEAVE_PLANNER_CPUWORKSPACE_H

#include "codegen/FusionPlan.h"
#include "dialects/cleave/CleaveOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "runtime/BlasPacking.h"

#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <vector>

namespace cleave::planner {

/// Layers whose input gradient and plain-SGD update the cpu runtime runs
/// in one skinnyLinearBackward call (runsSkinnyBackward): the input
/// gradient's GEMM -> the update's GEMM.
using SkinnyBackwardPairs =
    llvm::DenseMap<mlir::Operation *, mlir::Operation *>;

/// Per pipeline stage (one entry without stages), the bytes of kernel
/// workspaces (runtime/KernelWorkspaces.h) a rank of it holds running
/// `step` on `threads` OpenMP threads, with the emitter's `fusion` plan
/// (which products run strided) and its `skinnyBackward` layers: the ops
/// of its stage (an op's or its nearest ancestor's `stage` attribute;
/// every stage's, where there is none). An upper bound: oneDNN may leave
/// part of a scratchpad untouched, which takes no RAM.
std::vector<int64_t> cpuKernelWorkspaceBytes(
    mlir::func::FuncOp step, const mlir::cleave::FusionPlan &fusion,
    const SkinnyBackwardPairs &skinnyBackward, int64_t stages, int threads);

/// Per pipeline stage, the bytes of OpenBLAS's packing buffers
/// (runtime/BlasPacking.h) a rank of it touches running `step` on `threads`
/// OpenMP threads: the largest packing of the products its thread 0 runs
/// (alone or as its block of a split product), and of the blocks the other
/// threads run beside it. All zero where `blocking` is not known (a cluster
/// file without `blas_packing`). The `skinnyBackward` layers' GEMMs make
/// no OpenBLAS call. An estimate in whole pages: a strided product is
/// taken as reading its operands where they are (the runtime gathers some
/// first).
std::vector<int64_t>
cpuBlasPackingBytes(mlir::func::FuncOp step,
                    const mlir::cleave::FusionPlan &fusion,
                    const SkinnyBackwardPairs &skinnyBackward, int64_t stages,
                    int threads, const rt::BlasBlocking &blocking);

/// Per pipeline stage, the oneDNN convolution primitives a rank of it
/// creates running `step` on `threads` OpenMP threads: one per geometry,
/// pass and layout the runtime sends to oneDNN (rt::oneDnnPrimitives
/// counts them as they are made).
std::vector<int64_t> cpuOneDnnPrimitives(mlir::func::FuncOp step,
                                         int64_t stages, int threads);

/// Whether the cpu runtime runs `inputGradient` (dx = dy w, paired with
/// its weight's plain-SGD update: BackwardFusion::updateWithInputGradient)
/// and that update's product on skinnyLinearBackward, as linearBackwardSgd
/// does (runtime/GemmDispatch.h, skinnyBackwardShapePays).
bool runsSkinnyBackward(mlir::cleave::GemmOp inputGradient);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_CPUWORKSPACE_H
