//===- GuardedSchemaRegistry.cpp - ONNX schemas safe on bad input ---------===//

#include "frontend/GuardedSchemaRegistry.h"

#include "onnx/defs/shape_inference.h"

#include "llvm/ADT/StringRef.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace cleave::frontend {

namespace {

/// Input positions of the data and the weight (-1: no weight) of the ops
/// whose inference is ONNX's convPoolShapeInference.
struct GuardedInputs {
  int data;
  int weight;
};

std::optional<GuardedInputs> guardedInputs(llvm::StringRef opType) {
  if (opType == "Conv" || opType == "ConvInteger")
    return GuardedInputs{0, 1};
  if (opType == "QLinearConv")
    return GuardedInputs{0, 3};
  if (opType == "AveragePool" || opType == "MaxPool" || opType == "LpPool")
    return GuardedInputs{0, -1};
  return std::nullopt;
}

/// Fails inference (as ONNX's own checks do, by throwing) on the inputs that
/// would make convPoolShapeInference crash.
void checkConvPool(onnx::InferenceContext &ctx, GuardedInputs inputs) {
  if (const onnx::AttributeProto *strides = ctx.getAttribute("strides"))
    for (int64_t stride : strides->ints())
      if (stride <= 0)
        fail_shape_inference("strides must be positive, but one is ", stride);
  if (inputs.weight < 0 || ctx.getAttribute("kernel_shape") ||
      !onnx::hasInputShape(ctx, inputs.data) ||
      static_cast<size_t>(inputs.weight) >= ctx.getNumInputs() ||
      !onnx::hasInputShape(ctx, inputs.weight))
    return;
  int dataRank = onnx::getInputShape(ctx, inputs.data).dim_size();
  int weightRank = onnx::getInputShape(ctx, inputs.weight).dim_size();
  if (dataRank != weightRank)
    fail_shape_inference("the weight has rank ", weightRank,
                         " but the input has rank ", dataRank,
                         "; a convolution's weight [M, C/group, k...] has the "
                         "input's rank");
}

class GuardedRegistry final : public onnx::ISchemaRegistry {
public:
  const onnx::OpSchema *GetSchema(const std::string &opType, int maxVersion,
                                  const std::string &domain) const override {
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Instance()->GetSchema(opType, maxVersion,
                                                      domain);
    std::optional<GuardedInputs> inputs = guardedInputs(opType);
    if (!schema || !inputs || !schema->has_type_and_shape_inference_function())
      return schema;
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<onnx::OpSchema> &guarded = guardedCopies[schema];
    if (!guarded) {
      guarded = std::make_unique<onnx::OpSchema>(*schema);
      onnx::InferenceFunction infer =
          schema->GetTypeAndShapeInferenceFunction();
      guarded->TypeAndShapeInferenceFunction(
          [infer, inputs = *inputs](onnx::InferenceContext &ctx) {
            checkConvPool(ctx, inputs);
            infer(ctx);
          });
    }
    return guarded.get();
  }

private:
  mutable std::mutex mutex;
  mutable std::map<const onnx::OpSchema *, std::unique_ptr<onnx::OpSchema>>
      guardedCopies;
};

} // namespace

const onnx::ISchemaRegistry *guardedSchemaRegistry() {
  static GuardedRegistry registry;
  return &registry;
}

} // namespace cleave::frontend
