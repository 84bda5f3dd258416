//===- TransformerBlocks.h - finding Megatron-style layer pairs -*- C++ -*-===//
//
// Recognises, in a training step, the pairs of linear layers that Megatron-LM
// splits over a tensor-parallel axis: a column-parallel layer (output
// features split) whose output reaches, through elementwise ops only, a
// row-parallel layer (input features split): a transformer's MLP block. An
// attention block, where the path also crosses matmuls between activations
// (the heads), makes its output projection row-parallel; its input
// projection is column-parallel too unless a split of fused q/k/v lies on
// the path (a block split of GPT-2's fused q/k/v, all of q then k then v,
// would not keep heads together), in which case it stays whole and the
// heads split after it. A split within each head (Megatron-LM's layout:
// the projection's outputs reshaped to heads first) keeps heads together,
// and the fused projection is column-parallel.
//
// It also finds what Megatron splits over the vocabulary: the embedding
// tables that token ids index, and the output head, the linear layer whose
// output is the loss's scores.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_TRANSFORMERBLOCKS_H
#define CLEAVE_PASSES_TRANSFORMERBLOCKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::cleave {

/// A linear layer: `weight` (an argument) multiplies the activations.
struct LinearLayer {
  BlockArgument weight;
  /// The weight dimension that holds the output features.
  int64_t outputDim;
  /// The bias argument added to the product, if any.
  BlockArgument bias;
};

struct TensorParallelPlan {
  SmallVector<LinearLayer> columnParallel;
  SmallVector<LinearLayer> rowParallel;
  /// Embedding tables ([vocabulary, features] parameters gathered along
  /// dim 0 by graph inputs): split by rows.
  SmallVector<BlockArgument> vocabularyTables;
  /// The output head (a column-parallel split is a split by vocabulary).
  std::optional<LinearLayer> head;
  /// Where a split attention block's features become heads and back: the
  /// reshapes between [..., H x D] and [..., H, D] on its paths. A tensor
  /// split of the features lands on the H heads, so the degree must
  /// divide H.
  SmallVector<std::pair<Operation *, int64_t>> headReshapes;
};

TensorParallelPlan findTensorParallelLayers(func::FuncOp func);

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_TRANSFORMERBLOCKS_H
