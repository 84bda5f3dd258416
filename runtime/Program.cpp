//===- Program.cpp - what generated programs call between their ops -------===//

#include "runtime/Program.h"

namespace cleave::rt {

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
