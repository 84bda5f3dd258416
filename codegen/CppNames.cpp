//===- CppNames.cpp - the identifiers of one generated source -------------===//

#include "codegen/CppNames.h"
#include "codegen/SourceText.h"

#include "llvm/ADT/SmallVector.h"

namespace mlir::cleave {

// Names the generated code already uses: runtime functions and types (the
// kernels of runtime/KernelApi.inc, the collectives, runtime/Program.h and
// the cuda runtime's helpers), space-separated.
static constexpr const char *kRuntimeNames =
    "gemm linearBackwardSgd matmul broadcastTo transpose concat split "
    "slice sliceGrad gather gatherGrad reduce softmax softmaxGrad "
    "layerNorm layerNormGrad batchNorm batchNormGrad conv convGradInput "
    "convGradWeight maxPool maxPoolGrad avgPool avgPoolGrad "
    "softmaxCrossEntropy softmaxCrossEntropyGrad nllLoss nllLossGrad "
    "dropout sgdUpdate adamwUpdate onnxMomentumUpdate onnxAdamUpdate "
    "onnxAdagradUpdate lrScheduleFactor mapUnary mapBinary mapTernary body "
    "ctx std cleave Shape DType Role Schedule Reduction ReduceKind main "
    "program kTensors trainStep launch copyN fillN readScalar gemmBias "
    "GemmEpilogue randomUniform randomNormal writeScalar deviceAddress "
    "synchronize cuda startAllReduceBucket finishAllReduceBucket "
    "allGatherDim reduceScatterDim allSliceDim writeAxisIndex";

// The C++ keywords an ONNX name could spell.
static constexpr const char *kKeywords =
    "auto bool break case char class const default delete do double else "
    "enum float for if int long new operator private public return short "
    "signed sizeof static struct switch template this union unsigned void "
    "while asm namespace using true false";

CppNames::CppNames() {
  for (const char *list : {kRuntimeNames, kKeywords}) {
    llvm::SmallVector<llvm::StringRef> words;
    llvm::StringRef(list).split(words, ' ');
    for (llvm::StringRef word : words)
      used.insert(word);
  }
}

std::string CppNames::unique(llvm::StringRef base) {
  std::string name = cppIdentifier(base);
  std::string candidate = name;
  for (int i = 1; !used.insert(candidate).second; ++i)
    candidate = name + "_" + std::to_string(i);
  return candidate;
}

} // namespace mlir::cleave
