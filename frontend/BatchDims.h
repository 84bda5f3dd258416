//===- BatchDims.h - where the samples lie in each data input ---*- C++ -*-===//
//
// Cleave's programs take the samples of every data input along dim 0: data
// parallelism and micro-batches split it, and the driver copies a step's
// batch along it. PyTorch's sequence-first models (`nn.Transformer*` with
// the default batch_first=False) export inputs of shape [S, B, ...]. The
// importer finds each input's batch dim here and, where it is not 0,
// takes the input batch-first and transposes it back to the model's
// layout as its first op (GraphImporter), so that every later phase sees
// the batch on dim 0 and splits it, not the sequence.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_BATCHDIMS_H
#define CLEAVE_FRONTEND_BATCHDIMS_H

#include "onnx/onnx_pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace cleave::frontend {

/// The batch dim of each data input (graph inputs that are not
/// initializers, of rank 1 or more), by name, before --input-shape binds
/// the symbols. Among the inputs with a dynamic dim:
/// - with `batchSymbol` (--batch-symbol), the dim of that name, which each
///   must have exactly once;
/// - else the one symbolic dim that each has exactly once and whose name
///   contains "batch" (any case: torch's dynamic_axes names `batch`,
///   `batch_size`), where there is such a symbol.
/// Every other input's batch is dim 0.
llvm::Expected<std::map<std::string, int64_t>>
findBatchDims(const onnx::GraphProto &graph, llvm::StringRef batchSymbol);

/// The permutation that brings a batch-first tensor of rank `rank` back to
/// the layout whose batch is dim `batchDim`: [1, ..., batchDim, 0,
/// batchDim + 1, ...] (result dim i is operand dim perm[i]).
std::vector<int64_t> fromBatchFirst(int64_t batchDim, int64_t rank);

} // namespace cleave::frontend

#endif // CLEAVE_FRONTEND_BATCHDIMS_H
