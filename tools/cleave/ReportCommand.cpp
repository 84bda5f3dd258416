//===- ReportCommand.cpp - `cleave report` --------------------------------===//
//
// `cleave report --plan plan.json [--log log.jsonl] [--trace trace.json]
// -o report.html`: reads the plans of `cleave plan --json` and, when
// given, a run's log and trace, finds the plan the run executed (or says
// the run is from another program) and writes one self-contained HTML
// page (report/ReportHtml.h).
//
//===----------------------------------------------------------------------===//

#include "tools/cleave/ReportCommand.h"

#include "tools/cleave/Commands.h"
#include "tools/cleave/OutputFile.h"

#include "report/ReportData.h"
#include "report/ReportHtml.h"

#include "llvm/Support/raw_ostream.h"

namespace cleave::driver {

namespace {

namespace cl = llvm::cl;
using namespace cleave::report;

int fail(const llvm::Twine &message) {
  llvm::errs() << "cleave report: error: " << message << "\n";
  return 1;
}

int failOn(llvm::Error error) { return fail(llvm::toString(std::move(error))); }

/// Renders and writes the page; the plan drawn is the run's (when `log`
/// or `trace` name their program) or the best.
int writeReport(const PlanFile &plans, const RunLog *log, const Trace *trace,
                llvm::StringRef output, llvm::StringRef command) {
  if (plans.plans.empty())
    return fail("the plan '" + plans.path +
                "' holds no plan that fits (every layout was rejected): "
                "nothing to report; plan with more devices or a smaller "
                "batch");
  ReportInput input;
  input.plans = &plans;
  input.log = log;
  input.trace = trace;
  input.chosen = &plans.plans.front();
  input.why = "the best plan";
  const Plan *byLog = nullptr;
  if (log && log->run) {
    llvm::Expected<const Plan *> chosen = chooseRunPlan(
        plans, *log->run, log->memory, "the log '" + log->path + "'");
    if (!chosen)
      return failOn(chosen.takeError());
    byLog = *chosen;
    input.chosen = byLog;
    input.why = "the plan the logged run executed";
  } else if (log) {
    input.why = "the best plan (the log does not name the program that "
                "wrote it)";
  }
  if (trace && trace->run) {
    llvm::Expected<const Plan *> chosen = chooseRunPlan(
        plans, *trace->run, {}, "the trace '" + trace->path + "'");
    if (!chosen)
      return failOn(chosen.takeError());
    if (byLog && (*chosen)->meshFlag != byLog->meshFlag)
      return fail("the log '" + log->path + "' and the trace '" + trace->path +
                  "' are from different programs (meshes " + byLog->meshFlag +
                  " and " + (*chosen)->meshFlag + ")");
    if (!byLog) {
      input.chosen = *chosen;
      input.why = "the plan the traced run executed";
    }
  } else if (trace && !log) {
    input.why = "the best plan (the trace does not name the program that "
                "wrote it)";
  }
  return writeOutputFile(output, renderReport(input), command) ? 0 : 1;
}

class ReportCommand : public Command {
public:
  ReportCommand()
      : sub_("report", "Draw a plan and a training run as one HTML page: "
                       "mesh, memory per rank, pipeline schedule, "
                       "communication, loss, candidate plans"),
        plan_("plan", cl::desc("The plans (cleave plan --json FILE)"),
              cl::value_desc("FILE"), cl::sub(sub_)),
        log_("log",
             cl::desc("A run's log (./train --log FILE): the loss "
                      "curve and measured memory"),
             cl::value_desc("FILE"), cl::sub(sub_)),
        trace_("trace",
               cl::desc("A run's timeline (./train --trace FILE): the "
                        "measured schedule and communication"),
               cl::value_desc("FILE"), cl::sub(sub_)),
        output_("o", cl::desc("The HTML file to write"), cl::value_desc("FILE"),
                cl::sub(sub_)) {}

  cl::SubCommand &subCommand() override { return sub_; }

  int run(mlir::MLIRContext &) override {
    if (plan_.empty())
      return fail("no plan given; usage: cleave report --plan PLAN.json "
                  "[--log LOG.jsonl] [--trace TRACE.json] -o REPORT.html");
    if (output_.empty())
      return fail("no output given: add -o REPORT.html");
    for (const std::string *input :
         {&plan_.getValue(), &log_.getValue(), &trace_.getValue()})
      if (!input->empty() &&
          refuseOutputOverInput(output_, *input, "an input", "report"))
        return 1;
    llvm::Expected<PlanFile> plans = readPlanFile(plan_);
    if (!plans)
      return failOn(plans.takeError());
    std::optional<RunLog> log;
    if (!log_.empty()) {
      llvm::Expected<RunLog> read = readRunLog(log_);
      if (!read)
        return failOn(read.takeError());
      log = std::move(*read);
    }
    std::optional<Trace> trace;
    if (!trace_.empty()) {
      llvm::Expected<Trace> read = readTrace(trace_);
      if (!read)
        return failOn(read.takeError());
      trace = std::move(*read);
    }
    return writeReport(*plans, log ? &*log : nullptr, trace ? &*trace : nullptr,
                       output_, "report");
  }

private:
  cl::SubCommand sub_;
  cl::opt<std::string> plan_, log_, trace_, output_;
};

} // namespace

int writePlanReport(const llvm::json::Value &plan, llvm::StringRef planName,
                    llvm::StringRef output) {
  llvm::Expected<PlanFile> plans = parsePlanFile(plan, planName);
  if (!plans) {
    llvm::errs() << "cleave plan: error: " << llvm::toString(plans.takeError())
                 << "\n";
    return 1;
  }
  if (plans->plans.empty())
    return 0; // cleave plan says why there is no plan.
  return writeReport(*plans, nullptr, nullptr, output, "plan");
}

std::unique_ptr<Command> makeReportCommand() {
  return std::make_unique<ReportCommand>();
}

} // namespace cleave::driver
