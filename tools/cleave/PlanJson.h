//===- PlanJson.h - `cleave plan --json`'s plans ----------------*- C++ -*-===//
//
// One plan (or rejected layout) as the JSON that `cleave plan --json`
// writes and `cleave report` reads; the README's "Plans as JSON" section
// lists the fields.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_PLANJSON_H
#define CLEAVE_TOOLS_CLEAVE_PLANJSON_H

#include "planner/Planner.h"

#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace cleave::driver {

/// `c` with the `cleave compile` flags that build it; `rank` is its place
/// among the plans (0: rejected). With `details`, adds what `cleave report`
/// draws: memory by stage and kind, the predicted timeline, the
/// collectives and the tensors each rank holds.
llvm::json::Object planJson(const planner::Candidate &c,
                            const std::vector<std::string> &flags, int64_t rank,
                            bool details);

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_PLANJSON_H
