//===- FusionPlan.h - ops the emitter runs together -------------*- C++ -*-===//

#ifndef CLEAVE_CODEGEN_FUSIONPLAN_H
#define CLEAVE_CODEGEN_FUSIONPLAN_H

#include "codegen/MemoryPlan.h"
#include "dialects/cleave/CleaveOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::cleave {

/// A softmax that applies attention's scale and mask inside its line loop
/// (runtime softmaxMasked), or a softmax gradient that applies their
/// gradients to its result there (softmaxGradMasked), so that neither the
/// scaled nor the masked scores are ever stored:
///
///   forward:  softmax(where(c, x * s, fill))      softmax(x / s + mask)
///   backward: where(c, softmax_grad(y, dy), 0) * s
///
/// The scale s and the fill are one-element tensors, the mask or condition
/// c broadcasts to the scores (any dims of size 1), each part is optional
/// and each intermediate has the one use in the pattern.
struct SoftmaxFusion {
  /// The softmax, log-softmax or softmax gradient.
  Operation *softmax = nullptr;
  /// Every op of the pattern, in block order.
  SmallVector<Operation *> ops;
  /// The scores the forward kernel reads (before scaling).
  Value input;
  /// The scale; `divide` when the scores are divided by it.
  Value scale;
  bool divide = false;
  /// An additive mask (forward only) or a where's condition and fill, the
  /// value kept where the condition is `keepWhen`.
  Value mask;
  Value condition;
  Value fill;
  bool keepWhen = true;
};

/// Where the ops of a function run when not where they stand: trees of
/// fusible elementwise ops whose intermediate values have one use each (an
/// op of the tree, up to its root, the last op) run as one loop at the
/// last op, and all-reduces run asynchronously up to the first use of a
/// result.
struct FusionPlan {
  /// Fused groups by their last op, in block order.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> groups;
  /// Ops folded into a later op's loop.
  llvm::DenseSet<Operation *> fusedAway;
  /// Ops whose operands stay live up to a later op (planMemory's
  /// `executedAt`): a fused op up to its group's last op, an all-reduce up
  /// to its first reader.
  llvm::DenseMap<Operation *, Operation *> executedAt;
  /// A transpose of a batched matmul's result -> that matmul, which runs
  /// where the transpose stands and writes the transposed result through
  /// strides (planStridedMatmuls); the matmul is in fusedAway.
  llvm::DenseMap<Operation *, Operation *> matmulAt;
  /// Softmaxes with attention's scale and mask, by the op where the kernel
  /// runs: the softmax itself (the scale and mask ops before it are fused
  /// away), or the last scale or mask op after a softmax gradient (which
  /// is fused away with the ops before).
  llvm::DenseMap<Operation *, SoftmaxFusion> softmaxAt;
  /// slice_grads of a kernel's live taps that the SGD update they feed
  /// reads through (planLiveTapUpdates): slice_grad -> update.
  llvm::DenseMap<Operation *, Operation *> liveTapUpdates;
};

/// Plans `func`'s single block. `isElementwise` says which ops compute per
/// element (the emitter knows a body for them); such an op joins a loop
/// when every operand has the result's shape or a single element. Softmax
/// fusions (SoftmaxFusion) are planned first, and their ops join no loop.
FusionPlan planFusion(func::FuncOp func,
                      llvm::function_ref<bool(Operation *)> isElementwise);

/// The cpu target's strided batched products (runtime matmulStrided): a
/// batched matmul (no broadcast batch dims) reads an operand that is a
/// transpose of an activation through strides, when one of the view's
/// matrix dims is contiguous and every reader of the transpose can do the
/// same; it writes its result through strides into the transpose that is
/// its only reader, when its rows or columns stay contiguous. Such
/// transposes (and a matmul run at its result's transpose) join
/// `fusion.fusedAway`, with `executedAt` where the product runs.
/// Attention's heads split and merge and their gradients' transposes are
/// the cases this removes. Transposes of arguments (parameters that
/// updates overwrite in place) and of collectives' results stay.
void planStridedMatmuls(func::FuncOp func, FusionPlan &fusion);

/// Whether the cpu target runs `matmul` as a strided batched product
/// (runtime matmulStrided): it reads a transpose planStridedMatmuls fused
/// away, or runs at its result's transpose.
bool runsStrided(MatmulOp matmul, const FusionPlan &fusion);

/// The cpu target's SGD updates of a convolution kernel whose gradient a
/// slice_grad puts back into the whole kernel from the live taps' gradient
/// alone (passes/DeadTapCollectives.h: a data-parallel sum of the live
/// taps): a plain one adds that gradient to the live taps (runtime
/// sgdLiveTaps), one with momentum or weight decay steps every tap with
/// that gradient at the live ones (sgdUpdateLiveTaps). The slice_grad
/// joins `fusion.fusedAway` (the whole-kernel gradient is never stored),
/// its operand live up to the update (`executedAt`).
void planLiveTapUpdates(func::FuncOp func, FusionPlan &fusion);

/// Whether `sgd`, given a gradient that is zero at some taps, leaves those
/// taps as they are: no momentum, no weight decay.
bool changesLiveTapsAlone(SgdOp sgd);

/// The cpu target's pipeline sends without a staging copy (runtime
/// sendAsyncUncopied): the communication thread reads a sent tensor until
/// the send completes, which is certain at the sending stage's next wait
/// for a collective started after the send (they complete in start order:
/// the first reader of a later receive or all-reduce, or a later blocking
/// collective) or else at the step's end (finishSends). The send's operand
/// stays live up to that op (`executedAt`, the return op for the step's
/// end), so the memory plan gives no other tensor its buffer before.
void planUncopiedSends(func::FuncOp func, FusionPlan &fusion);

/// The element strides through which `op` reads operand `index` (the
/// transpose's input when the operand is a transpose in fusedAway) or, for
/// index -1, writes its result, with that tensor.
std::pair<Value, SmallVector<int64_t>>
stridedMatmulView(Operation *matmul, int index, const FusionPlan &fusion);

/// Input-gradient GEMMs dx = dy w that also apply the plain-SGD update of w
/// that a GEMM of the same dy computes (MemoryPlan::gemmInUpdate), where no
/// op between them reads w: both then run at the first, in one pass over w.
struct BackwardFusion {
  /// The input-gradient GEMM -> the update it applies.
  llvm::DenseMap<Operation *, SgdOp> updateWithInputGradient;
  /// Those updates, which emit nothing where they stand.
  llvm::DenseSet<Operation *> fusedUpdates;
  /// Convolution weight gradients that apply the plain-SGD update reading
  /// them (runtime convGradWeightSgd: the gradient is never stored, and
  /// the taps a cropped convolution never reaches are not touched), where
  /// no op between them reads the weight. The conv -> the update; the
  /// update emits nothing where it stands.
  llvm::DenseMap<Operation *, SgdOp> convWithUpdate;
  /// Weights (step arguments) that only convolutions and their input
  /// gradients read and only such a fused update (or a live-tap update,
  /// FusionPlan::liveTapUpdates) writes: the cpu target
  /// keeps a copy of their live taps between calls (runtime CroppedWeight).
  llvm::DenseSet<Value> croppedWeights;
  /// Weights (step arguments) that no fused update writes, read by two or
  /// more convolution passes (some cropping dead taps) before anything
  /// else reads them: the cpu target keeps a copy of their live taps for
  /// the step, cropped at the first pass, and marks it stale at the step's
  /// end (runtime staleCroppedWeight), after the weight's update.
  llvm::DenseSet<Value> refreshedWeights;
};

/// Pairs the GEMMs, and the convolution weight gradients, of `block` run on
/// `stage` (-1: all) by `plan` with their updates.
BackwardFusion planBackwardFusion(Block &block, const MemoryPlan &plan,
                                  const FusionPlan &fusion, int64_t stage);

/// The first op in the block that reads a result of `op`, if any.
Operation *firstUser(Operation *op);

} // namespace mlir::cleave

#endif // CLEAVE_CODEGEN_FUSIONPLAN_H
