//===- ReportHtml.cpp - the report page -----------------------------------===//

#include "report/ReportHtml.h"

#include "report/Html.h"
#include "report/ReportCharts.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace cleave::report {

namespace {

using llvm::formatv;

const char *kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1000px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.chosen td { background: #fff6d5; }
code { background: #f4f4f4; padding: 1px 4px; word-break: break-all; }
.note { color: #666; }
.chart { display: block; margin: 8px 0; }
.chart text { font: 12px system-ui, sans-serif; fill: #222; }
.chart text.tick { fill: #666; font-size: 11px; }
.chart text.slice-label { fill: #fff; font-size: 11px; }
.mesh td.cell { text-align: center; min-width: 90px; }
)";

std::string cell(const std::string &text, bool number = false) {
  return (number ? "<td class=\"n\">" : "<td>") + escape(text) + "</td>";
}

std::string stageColor(int64_t stage) {
  static const char *colors[] = {"#dbe9f6", "#fde3c8", "#d9f0d3", "#f9d4d4",
                                 "#e6dcef", "#f3e6c4", "#d4eeee", "#eeeeee"};
  return colors[stage % 8];
}

std::string header(const ReportInput &in) {
  const PlanFile &f = *in.plans;
  const Plan &p = *in.chosen;
  std::string out = "<h1>Cleave report: " + escape(f.model) + "</h1>\n<p>";
  out += formatv("Planned for {0} devices of <b>{1}</b> ({2} each, {3} "
                 "target), global batch {4}. ",
                 f.devices, escape(f.cluster), bytesText(f.deviceMemoryBytes),
                 escape(f.target), f.globalBatch)
             .str();
  out += "Shown: " + escape(in.why) + ": mesh <b>" +
         escape(p.meshFlag.empty() ? "(one rank)" : p.meshFlag) +
         "</b>, strategy " + escape(p.strategy) +
         formatv(", {0} micro-batch{1}", p.microbatches,
                 p.microbatches == 1 ? "" : "es")
             .str();
  if (!p.pipelineAxis.empty())
    out += ", pipeline over " + escape(p.pipelineAxis);
  out += ".</p>\n<p>Compile it: <code>cleave compile " + escape(f.model);
  for (const std::string &flag : p.flags)
    out += " " + escape(flag);
  out += " -o train</code></p>\n<p class=\"note\">Plan file: " + escape(f.path);
  if (in.log)
    out += "; log: " + escape(in.log->path);
  if (in.trace)
    out += "; trace: " + escape(in.trace->path);
  return out + "</p>\n";
}

std::string meshSection(const Plan &p) {
  std::string out = "<h2 id=\"mesh\">Mesh</h2>\n";
  if (p.mesh.empty())
    return out + "<p>One rank: nothing is split.</p>\n";
  out += "<table><tr><th>axis</th><th class=\"n\">size</th><th>what it "
         "does</th><th>link</th></tr>";
  for (const MeshAxis &axis : p.mesh)
    out += "<tr>" + cell(axis.name) + cell(std::to_string(axis.size), true) +
           cell(axis.role) + cell(axis.link) + "</tr>";
  out += "</table>\n";
  // Ranks as a grid: the last axis across, the others down.
  int64_t columns = p.mesh.back().size, ranks = p.ranks();
  // A big mesh: its first ranks (the grid repeats).
  constexpr int64_t kMaxCells = 256;
  int64_t drawn =
      std::min(ranks, std::max(kMaxCells / columns, int64_t{1}) * columns);
  out += "<table class=\"mesh\">";
  for (int64_t row = 0; row * columns < drawn; ++row) {
    out += "<tr>";
    for (int64_t c = 0; c < columns; ++c) {
      int64_t r = row * columns + c;
      std::vector<int64_t> coords = p.coordsOfRank(r);
      std::string where;
      for (size_t a = 0; a < p.mesh.size(); ++a)
        where +=
            (a ? " " : "") + p.mesh[a].name + "=" + std::to_string(coords[a]);
      out += formatv("<td class=\"cell rank\" data-rank=\"{0}\" "
                     "style=\"background:{1}\"><b>rank {0}</b><br>{2}{3}</td>",
                     r, stageColor(p.stageOfRank(r)), escape(where),
                     p.stages() > 1
                         ? formatv("<br>stage {0}", p.stageOfRank(r)).str()
                         : std::string());
    }
    out += "</tr>";
  }
  out += "</table>\n";
  if (drawn < ranks)
    out += formatv("<p class=\"note\">Ranks 0 to {0} of {1} shown; the "
                   "others continue the pattern (ranks are the mesh "
                   "coordinates row-major).</p>\n",
                   drawn - 1, ranks)
               .str();
  return out;
}

std::string tensorSection(const Plan &p) {
  if (p.tensors.empty())
    return "";
  std::string out =
      "<h2 id=\"tensors\">Who holds what</h2>\n<p>Each rank's block of "
      "every parameter and optimizer state tensor: split along the mesh "
      "axes its sharding names (<code>_</code>: whole), replicated over "
      "the others.</p>\n<table><tr><th>tensor</th><th>kind</th>"
      "<th>sharding</th><th>block per rank</th><th class=\"n\">bytes per "
      "rank</th><th>ranks</th></tr>";
  constexpr size_t kMaxRows = 400;
  for (size_t i = 0; i < p.tensors.size() && i < kMaxRows; ++i) {
    const HeldTensor &t = p.tensors[i];
    std::string shape;
    for (int64_t d : t.shape)
      shape += (shape.empty() ? "" : "x") + std::to_string(d);
    std::string ranks =
        t.stage >= 0 ? formatv("stage {0}'s", t.stage).str() : "all";
    out += "<tr>" + cell(t.name) + cell(t.role) +
           cell(t.sharding.empty() ? "replicated" : t.sharding) +
           cell(shape.empty() ? "scalar" : shape) +
           cell(bytesText(t.bytes), true) + cell(ranks) + "</tr>";
  }
  out += "</table>\n";
  if (p.tensors.size() > kMaxRows)
    out += formatv("<p class=\"note\">{0} more tensors not shown.</p>\n",
                   p.tensors.size() - kMaxRows);
  return out;
}

std::string memorySection(const ReportInput &in) {
  const Plan &p = *in.chosen;
  std::string out = "<h2 id=\"memory\">Memory per rank</h2>\n";
  if (!p.hasDetails())
    return out + "<p>The plan file has no memory breakdown for this plan "
                 "(only its top plans have one).</p>\n";
  out += "<p>Predicted by the compiler's static memory plan: parameters and "
         "optimizer state each rank holds, its scratch arena at its peak "
         "split into the gradients live there and the rest (activations and "
         "temporaries), and the cuda target's kernel workspace.";
  std::vector<MeasuredMemory> measured;
  if (in.log && !in.log->memory.empty()) {
    measured = in.log->memory;
    out += " Below each bar, what the run's program allocated on each rank "
           "(the log's first record): its blocks of the parameters and "
           "state, and its scratch arena (one arena sized for the largest "
           "stage in a pipeline).";
    if (static_cast<int64_t>(measured.size()) != p.ranks())
      out += formatv(" (The log has {0} ranks' memory, the plan {1} ranks: "
                     "not drawn.)",
                     measured.size(), p.ranks())
                 .str();
  } else if (in.log) {
    out += " The log holds no measured memory (written by an older "
           "program).";
  }
  if (p.ranks() > 128)
    out += formatv(" The mesh has {0} ranks: one bar per pipeline stage, for "
                   "its first rank (the stage's others hold the same).",
                   p.ranks())
               .str();
  out += "</p>\n" + memoryChart(p, measured, in.plans->deviceMemoryBytes);
  return out;
}

std::string scheduleSection(const ReportInput &in) {
  const Plan &p = *in.chosen;
  std::string out = "<h2 id=\"schedule\">Pipeline schedule</h2>\n";
  if (!p.hasDetails())
    return out + "<p>The plan file has no schedule for this plan.</p>\n";
  double end = 0;
  for (const Slice &s : p.schedule)
    end = std::max(end, s.endMs);
  out += formatv("<p>Predicted: one training step, each stage's ops in "
                 "program order, a send/recv starting once both stages reach "
                 "it; {0} stage{1}, {2} micro-batch{3}, {4} ms "
                 "(the cost model's step: {5} ms, bubble {6} ms). Thin bars "
                 "are communication.</p>\n",
                 p.stages(), p.stages() == 1 ? "" : "s", p.microbatches,
                 p.microbatches == 1 ? "" : "es", msText(end), msText(p.stepMs),
                 msText(p.bubbleMs))
             .str();
  out += ganttChart(p.schedule, p.stages(), "predicted");
  if (in.trace) {
    int64_t step = -1;
    std::vector<Slice> slices = measuredSlices(*in.trace, p, step);
    // The steps' own slices: how long a traced step took on each rank.
    double sum = 0, longest = 0;
    int64_t count = 0;
    for (const TraceEvent &e : in.trace->events)
      if (e.category == "step") {
        sum += e.durationUs / 1e3;
        longest = std::max(longest, e.durationUs / 1e3);
        ++count;
      }
    out += formatv("<p>Measured (trace {0}, step {1}, each stage's first "
                   "rank){2}:</p>\n",
                   escape(in.trace->path), step,
                   count ? formatv("; a traced step took {0} ms on average "
                                   "over ranks and steps, {1} ms at most "
                                   "(predicted: {2} ms)",
                                   msText(sum / count), msText(longest),
                                   msText(p.stepMs))
                               .str()
                         : std::string())
               .str();
    out += ganttChart(slices, p.stages(), "measured");
  }
  return out;
}

std::string commSection(const ReportInput &in) {
  const Plan &p = *in.chosen;
  std::string out = "<h2 id=\"communication\">Communication</h2>\n";
  if (p.collectives.empty())
    return out + "<p>No collectives: each rank computes alone.</p>\n";
  out += "<p>Per step, on each rank of a stage: the collectives the program "
         "runs, the bytes one rank sends (what <code>--print-comm</code> "
         "reports) and the predicted time.</p>\n<table class=\"comm\">"
         "<tr><th class=\"n\">stage</th><th>collective</th><th>axes</th>"
         "<th class=\"n\">calls</th><th class=\"n\">bytes sent</th>"
         "<th class=\"n\">predicted ms</th></tr>";
  for (const CollectiveRow &c : p.collectives)
    out += "<tr>" + cell(std::to_string(c.stage), true) + cell(c.kind) +
           cell(c.axes) + cell(std::to_string(c.count), true) +
           cell(bytesText(c.bytes), true) + cell(msText(c.ms), true) + "</tr>";
  out += "</table>\n";
  if (in.trace) {
    // Measured: per rank and collective, over the traced steps.
    std::map<std::pair<int64_t, std::string>,
             std::tuple<int64_t, int64_t, double>>
        rows;
    std::map<int64_t, bool> steps;
    for (const TraceEvent &e : in.trace->events) {
      steps[e.step] = true;
      if (e.category != "collective")
        continue;
      auto &[count, bytes, us] = rows[{e.rank, e.op.empty() ? e.name : e.op}];
      ++count;
      bytes += std::max<int64_t>(e.bytes, 0);
      us += e.durationUs;
    }
    int64_t traced = std::max<int64_t>(steps.size(), 1);
    out += formatv("<p>Measured (trace, per step over {0} traced step{1}):"
                   "</p>\n<table class=\"comm-measured\"><tr><th class=\"n\">"
                   "rank</th><th>collective</th><th class=\"n\">calls</th>"
                   "<th class=\"n\">bytes sent</th><th class=\"n\">ms</th>"
                   "</tr>",
                   traced, traced == 1 ? "" : "s")
               .str();
    for (auto &[key, value] : rows) {
      auto &[count, bytes, us] = value;
      out += "<tr>" + cell(std::to_string(key.first), true) + cell(key.second) +
             cell(std::to_string(count / traced), true) +
             cell(bytesText(bytes / traced), true) +
             cell(msText(us / 1e3 / traced), true) + "</tr>";
    }
    out += "</table>\n";
  }
  return out;
}

std::string lossSection(const RunLog &log) {
  std::string out = "<h2 id=\"loss\">Loss</h2>\n";
  const auto &[firstStep, firstLoss] = log.losses.front();
  const auto &[lastStep, lastLoss] = log.losses.back();
  int64_t nonFinite = 0;
  for (auto [step, loss] : log.losses)
    nonFinite += !std::isfinite(loss);
  out += formatv("<p>{0} steps logged: step {1} {2}, step {3} {4}.{5}</p>\n",
                 log.losses.size(), firstStep, fixed(firstLoss, 4), lastStep,
                 fixed(lastLoss, 4),
                 nonFinite ? formatv(" {0} steps had a non-finite loss (not "
                                     "drawn).",
                                     nonFinite)
                                 .str()
                           : std::string())
             .str();
  return out + lossChart(log);
}

std::string plansSection(const ReportInput &in) {
  const PlanFile &f = *in.plans;
  std::string out =
      "<h2 id=\"plans\">Candidate plans</h2>\n<table class=\"plans\"><tr>"
      "<th class=\"n\">#</th><th>mesh</th><th>strategy</th><th class=\"n\">"
      "micro-batches</th><th class=\"n\">step ms</th><th class=\"n\">compute "
      "ms</th><th class=\"n\">comm ms</th><th class=\"n\">bubble ms</th>"
      "<th class=\"n\">peak/rank</th><th class=\"n\">sent/rank</th></tr>";
  for (const Plan &p : f.plans)
    out += std::string(&p == in.chosen ? "<tr class=\"plan chosen\">"
                                       : "<tr class=\"plan\">") +
           cell(std::to_string(p.place), true) +
           cell(p.meshFlag.empty() ? "(one rank)" : p.meshFlag) +
           cell(p.strategy) + cell(std::to_string(p.microbatches), true) +
           cell(msText(p.stepMs), true) + cell(msText(p.computeMs), true) +
           cell(msText(p.commMs), true) + cell(msText(p.bubbleMs), true) +
           cell(bytesText(p.peakBytes), true) +
           cell(bytesText(p.commBytes), true) + "</tr>";
  out += "</table>\n";
  if (f.rejected.empty())
    return out;
  out += "<p>Rejected layouts:</p>\n<table class=\"rejected\"><tr><th>mesh"
         "</th><th>strategy</th><th class=\"n\">micro-batches</th><th>why"
         "</th></tr>";
  for (const Plan &p : f.rejected)
    out += "<tr>" + cell(p.meshFlag.empty() ? "(one rank)" : p.meshFlag) +
           cell(p.strategy) + cell(std::to_string(p.microbatches), true) +
           cell(p.reason) + "</tr>";
  return out + "</table>\n";
}

} // namespace

std::string renderReport(const ReportInput &in) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
      "'none'; style-src 'unsafe-inline'; img-src data:\">\n<title>Cleave "
      "report: " +
      escape(in.plans->model) + "</title>\n<style>" + kStyle +
      "</style>\n</head>\n<body>\n";
  out += header(in);
  out += meshSection(*in.chosen);
  out += memorySection(in);
  out += scheduleSection(in);
  out += commSection(in);
  if (in.log)
    out += lossSection(*in.log);
  out += plansSection(in);
  out += tensorSection(*in.chosen);
  out += "<p class=\"note\">Written by cleave report.</p>\n</body>\n</html>\n";
  return out;
}

} // namespace cleave::report
