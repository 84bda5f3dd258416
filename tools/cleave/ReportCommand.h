//===- ReportCommand.h - `cleave report` ------------------------*- C++ -*-===//

#ifndef CLEAVE_TOOLS_CLEAVE_REPORTCOMMAND_H
#define CLEAVE_TOOLS_CLEAVE_REPORTCOMMAND_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

namespace cleave::driver {

/// `cleave plan --report FILE`: the report of the plans `plan` (the JSON
/// that --json writes; `planName` names it on the page) without a run.
/// Returns the exit code, after reporting any error.
int writePlanReport(const llvm::json::Value &plan, llvm::StringRef planName,
                    llvm::StringRef output);

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_REPORTCOMMAND_H
