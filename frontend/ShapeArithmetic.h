//===- ShapeArithmetic.h - fold ONNX shape computations ---------*- C++ -*-===//
//
// torch.onnx.export emits integer arithmetic on tensor shapes (Shape, Gather,
// Unsqueeze, Concat feeding Reshape, ...). With every dimension bound, all of
// it is constant. This evaluator computes such nodes on small integer tensors
// so the importer can turn their results into static attributes.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_SHAPEARITHMETIC_H
#define CLEAVE_FRONTEND_SHAPEARITHMETIC_H

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cleave::frontend {

/// A small integer, boolean or float tensor, row-major. Floats are held as
/// their bit patterns: they only move (Concat, Gather, Slice, ...), which
/// folds constants such as Resize's scales built by torch.
struct IntTensor {
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
  /// onnx::TensorProto::DataType of the tensor (INT64, INT32, BOOL or
  /// FLOAT).
  int32_t dataType = onnx::TensorProto::INT64;
};

/// Reads an INT64, INT32, BOOL or FLOAT tensor; nullopt for other types.
std::optional<IntTensor> readIntTensor(const onnx::TensorProto &proto);

/// Writes `tensor` as a TensorProto named `name`.
onnx::TensorProto writeIntTensor(const IntTensor &tensor,
                                 const std::string &name);

/// Evaluates `node` on constant integer inputs (an absent optional input is
/// nullptr). Returns nullopt when the node is not shape arithmetic this
/// evaluator knows, or its inputs are not all known.
std::optional<std::vector<IntTensor>>
evaluateShapeNode(const onnx::NodeProto &node,
                  const std::vector<const IntTensor *> &inputs);

/// The result shape of Einsum `equation` on inputs of these shapes (ONNX
/// 1.12's shape inference gives only the rank); nullopt when the equation
/// does not fit them.
std::optional<std::vector<int64_t>>
einsumResultShape(const std::string &equation,
                  const std::vector<std::vector<int64_t>> &inputs);

} // namespace cleave::frontend

#endif // CLEAVE_FRONTEND_SHAPEARITHMETIC_H
