//===- CppNames.cpp - the identifiers of one generated source -------------===//

#include "codegen/CppNames.h"
#include "codegen/SourceText.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

namespace mlir::cleave {

// The kernels of runtime/KernelApi.inc, read from it at build time
// (codegen/CMakeLists.txt), space-separated.
static constexpr const char *kKernelNames =
#include "codegen/KernelApiNames.inc"
    ;

// The other names the generated code uses: runtime functions and types
// outside the kernel list (the collectives, runtime/Program.h, the cpu
// runtime's fused calls and the cuda runtime's helpers) and the step's own
// locals, space-separated.
static constexpr const char *kRuntimeNames =
    "linearBackwardSgd lrScheduleFactor mapUnary mapBinary mapTernary body "
    "ctx std cleave Shape DType Role Schedule Reduction ReduceKind main "
    "program kTensors trainStep launch copyN fillN readScalar gemmBias "
    "GemmEpilogue writeScalar deviceAddress synchronize cuda "
    "startAllReduceBucket finishAllReduceBucket allReduceBucket allGatherDim "
    "reduceScatterDim allSliceDim writeAxisIndex sendRecv sendAsync "
    "sendAsyncUncopied CollectiveBuffer "
    "startReceive finishSends kNoPeer meshCoord AxisGroup MeshSpec "
    "PipelineSpec TensorSpec Program StepContext IndexInputCheck runProgram rt "
    "indexChecks numIndexChecks kernelScratchBytes cudaDeviceHooks "
    "resolveSlots kRefCodes slots refs codes rows microbatch "
    "kPartMicrobatch PartCall runParts";

// Names the C and C++ standard headers the source includes define as
// macros or use unqualified.
static constexpr const char *kLibraryNames =
    "NULL EOF errno assert stdin stdout stderr INFINITY NAN HUGE_VAL "
    "HUGE_VALF M_PI M_E FLT_MAX FLT_MIN DBL_MAX INT_MAX INT_MIN "
    "size_t ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t "
    "uint32_t uint64_t intptr_t uintptr_t";

// The C++17 keywords and alternative tokens an ONNX name could spell
// (C++20's too: a newer compiler may default to it).
static constexpr const char *kKeywords =
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch "
    "char char8_t char16_t char32_t class compl concept const consteval "
    "constexpr constinit const_cast continue co_await co_return co_yield "
    "decltype default delete do double dynamic_cast else enum explicit "
    "export extern false float for friend goto if inline int long mutable "
    "namespace new noexcept not not_eq nullptr operator or or_eq private "
    "protected public register reinterpret_cast requires return short "
    "signed sizeof static static_assert static_cast struct switch template "
    "this thread_local throw true try typedef typeid typename union "
    "unsigned using virtual void volatile wchar_t while xor xor_eq";

CppNames::CppNames() {
  for (const char *list :
       {kKernelNames, kRuntimeNames, kLibraryNames, kKeywords}) {
    llvm::SmallVector<llvm::StringRef> words;
    llvm::StringRef(list).split(words, ' ');
    for (llvm::StringRef word : words)
      used.insert(word);
  }
}

std::string CppNames::unique(llvm::StringRef base) {
  std::string name = cppIdentifier(base);
  std::string candidate = name;
  // Names are never released, so the suffixes below the last one this
  // base got are still taken: start after it (linear, not quadratic, in
  // the uses of one base such as "add").
  int &next = nextSuffix[name];
  for (int i = std::max(next, 1); !used.insert(candidate).second; ++i) {
    candidate = name + "_" + std::to_string(i);
    next = i + 1;
  }
  return candidate;
}

} // namespace mlir::cleave
