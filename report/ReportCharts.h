//===- ReportCharts.h - the report's SVG charts -----------------*- C++ -*-===//
//
// Inline SVG, no script: the per-rank memory bars, the pipeline schedule
// as a Gantt chart (one row per stage) and the loss curve. Every chart
// element carries a class (memory-bar, gantt-row, loss-line) and data-*
// attributes that tests count, and a <title> a reader sees on hover.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_REPORT_REPORTCHARTS_H
#define CLEAVE_REPORT_REPORTCHARTS_H

#include "report/ReportData.h"

#include <string>
#include <vector>

namespace cleave::report {

/// One bar per rank of `plan`'s predicted memory by kind, and below it the
/// measured bar where `measured` has the rank; a line marks
/// `deviceBytes` when it is within the scale.
std::string memoryChart(const Plan &plan,
                        const std::vector<MeasuredMemory> &measured,
                        int64_t deviceBytes);

/// A Gantt chart of `slices` with `stages` rows; `kind` ("predicted",
/// "measured") names its rows' class (gantt-row, gantt-row-measured).
std::string ganttChart(const std::vector<Slice> &slices, int64_t stages,
                       llvm::StringRef kind);

/// The timeline of one traced step per stage (its first rank), in the
/// slices ganttChart draws; `step` is set to the step drawn.
std::vector<Slice> measuredSlices(const Trace &trace, const Plan &plan,
                                  int64_t &step);

/// The loss by step.
std::string lossChart(const RunLog &log);

} // namespace cleave::report

#endif // CLEAVE_REPORT_REPORTCHARTS_H
