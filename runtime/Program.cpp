//===- Program.cpp - the dtypes, and what steps call between their ops ----===//

#include "runtime/Program.h"

namespace cleave::rt {

int64_t dtypeSize(DType type) {
  switch (type) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::Bool:
    return 1;
  }
  return 0;
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "float32";
  case DType::F64:
    return "float64";
  case DType::I64:
    return "int64";
  case DType::I32:
    return "int32";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

const char *dtypeNpyKind(DType type) {
  switch (type) {
  case DType::F32:
    return "f4";
  case DType::F64:
    return "f8";
  case DType::I64:
    return "i8";
  case DType::I32:
    return "i4";
  case DType::Bool:
    return "b1";
  }
  return "";
}

void resolveSlots(const StepContext &ctx, void *const *refs,
                  const int64_t *codes, int64_t n, void **slots) {
  for (int64_t k = 0; k < n; ++k) {
    int64_t code = codes[k];
    slots[k] = code >= 0          ? ctx.arena + code
               : code > kRefCodes ? ctx.tensors[-1 - code]
                                  : refs[kRefCodes - code];
  }
}

} // namespace cleave::rt
