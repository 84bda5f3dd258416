//===- ReportHtml.h - the report page ---------------------------*- C++ -*-===//
//
// One self-contained HTML page (inline CSS and SVG; no script, no network)
// of a plan file and, when given, a run's log and trace: the mesh and who
// holds what, memory per rank, the pipeline schedule, the communication,
// the loss curve and the ranked plans.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_REPORT_REPORTHTML_H
#define CLEAVE_REPORT_REPORTHTML_H

#include "report/ReportData.h"

#include <string>

namespace cleave::report {

struct ReportInput {
  const PlanFile *plans = nullptr;
  /// The plan the page draws in detail, and why that one.
  const Plan *chosen = nullptr;
  std::string why;
  const RunLog *log = nullptr;
  const Trace *trace = nullptr;
};

std::string renderReport(const ReportInput &input);

} // namespace cleave::report

#endif // CLEAVE_REPORT_REPORTHTML_H
