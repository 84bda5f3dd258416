//===- ReportCharts.cpp - the report's SVG charts -------------------------===//

#include "report/ReportCharts.h"

#include "report/Html.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace cleave::report {

namespace {

using llvm::formatv;

constexpr double kWidth = 960, kLabel = 120, kRight = 20;
constexpr double kPlot = kWidth - kLabel - kRight;
/// More ranks than this: one bar per pipeline stage.
constexpr int64_t kMaxMemoryBars = 128;

/// Coordinates with two decimals: enough for a screen, short in the file.
std::string num(double value) { return fixed(value, 2); }

std::string rect(double x, double y, double w, double h, const char *color,
                 const std::string &cls, const std::string &title) {
  return formatv("<rect class=\"{0}\" x=\"{1}\" y=\"{2}\" width=\"{3}\" "
                 "height=\"{4}\" fill=\"{5}\"><title>{6}</title></rect>",
                 cls, num(x), num(y), num(std::max(w, 0.0)), num(h), color,
                 escape(title))
      .str();
}

std::string text(double x, double y, const std::string &body,
                 const char *anchor = "start", const char *cls = "label") {
  return formatv("<text class=\"{0}\" x=\"{1}\" y=\"{2}\" "
                 "text-anchor=\"{3}\">{4}</text>",
                 cls, num(x), num(y), anchor, escape(body))
      .str();
}

std::string
legend(const std::vector<std::pair<std::string, std::string>> &items,
       double y) {
  std::string out;
  double x = kLabel;
  for (const auto &[kind, label] : items) {
    out += formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" "
                   "fill=\"{2}\"/>",
                   num(x), num(y), colorOf(kind));
    out += text(x + 16, y + 10, label);
    x += 24 + 7.5 * label.size();
  }
  return out;
}

/// Round tick spacing for [0, top] in about `count` steps.
double tickStep(double top, int count) {
  if (top <= 0)
    return 1;
  double raw = top / count, power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw)
      return m * power;
  return 10 * power;
}

std::string svgOpen(double height, llvm::StringRef cls, llvm::StringRef label) {
  return formatv("<svg class=\"{0}\" xmlns=\"http://www.w3.org/2000/svg\" "
                 "width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\" "
                 "role=\"img\" aria-label=\"{3}\">",
                 cls, num(kWidth), num(height), escape(label))
      .str();
}

/// A horizontal axis of `top` units along the plot at `y`.
std::string xAxis(double y, double top, llvm::StringRef unit,
                  std::string (*format)(double), double plot = kPlot) {
  std::string out = formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" "
                            "y2=\"{1}\" stroke=\"#888\"/>",
                            num(kLabel), num(y), num(kLabel + plot))
                        .str();
  double step = tickStep(top, 6);
  for (double v = 0; v <= top * 1.0001 && top > 0; v += step) {
    double x = kLabel + plot * v / top;
    out += formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                   "stroke=\"#888\"/>",
                   num(x), num(y), num(y + 4));
    out += text(x, y + 16, format(v) + unit.str(), "middle", "tick");
  }
  return out;
}

std::string bytesTick(double v) { return bytesText(static_cast<int64_t>(v)); }
std::string msTick(double v) { return msText(v); }

} // namespace

std::string memoryChart(const Plan &plan,
                        const std::vector<MeasuredMemory> &measured,
                        int64_t deviceBytes) {
  int64_t ranks = plan.ranks();
  // Room on the right for the bars' totals.
  const double plot = kPlot - 80;
  bool withMeasured = static_cast<int64_t>(measured.size()) == ranks;
  double top = 1;
  auto predictedOf = [&](int64_t r) {
    return plan.memoryByStage[std::min<size_t>(plan.stageOfRank(r),
                                               plan.memoryByStage.size() - 1)];
  };
  // Every rank, or on a big mesh the first rank of each stage (the
  // others of a stage hold blocks of the same sizes).
  std::vector<int64_t> shown;
  for (int64_t r = 0; r < ranks; ++r)
    if (ranks <= kMaxMemoryBars ||
        std::none_of(shown.begin(), shown.end(), [&](int64_t s) {
          return plan.stageOfRank(s) == plan.stageOfRank(r);
        }))
      shown.push_back(r);
  for (int64_t r : shown) {
    top = std::max(top, static_cast<double>(predictedOf(r).total()));
    if (withMeasured) {
      const MeasuredMemory &m = measured[r];
      top = std::max({top, static_cast<double>(m.parameters + m.optimizerState +
                                               m.scratch)});
    }
  }
  bool showDevice = deviceBytes > 0 && deviceBytes <= top * 1.5;
  if (showDevice)
    top = std::max(top, static_cast<double>(deviceBytes));
  double rowHeight = withMeasured ? 44 : 26, y0 = 30;
  int64_t rows = static_cast<int64_t>(shown.size());
  double height = y0 + rows * rowHeight + 60;
  std::string out =
      svgOpen(height, "chart memory-chart", "memory per rank by kind");
  std::vector<std::pair<std::string, std::string>> items = {
      {"parameters", "parameters"},
      {"gradients", "gradients"},
      {"optimizer_state", "optimizer state"},
      {"activations", "activations"},
      {"workspace", "workspace"}};
  out += legend(items, 6);
  for (auto [row, r] : llvm::enumerate(shown)) {
    double y = y0 + row * rowHeight;
    const MemoryParts &m = predictedOf(r);
    out += formatv("<g class=\"memory-bar\" data-rank=\"{0}\" "
                   "data-bytes=\"{1}\">",
                   r, m.total());
    out += text(kLabel - 8, y + 14,
                formatv("rank {0}{1}", r,
                        plan.stages() > 1
                            ? formatv(" (stage {0})", plan.stageOfRank(r)).str()
                            : std::string())
                    .str(),
                "end");
    double x = kLabel;
    for (auto [kind, bytes] : {std::pair{"parameters", m.parameters},
                               std::pair{"gradients", m.gradients},
                               std::pair{"optimizer_state", m.optimizerState},
                               std::pair{"activations", m.activations},
                               std::pair{"workspace", m.workspace}}) {
      double w = plot * bytes / top;
      if (bytes > 0)
        out += rect(
            x, y + 2, w, 18, colorOf(kind), std::string("seg seg-") + kind,
            formatv("rank {0}, predicted {1}: {2}", r, kind, bytesText(bytes))
                .str());
      x += w;
    }
    out += text(x + 4, y + 15, bytesText(m.total()), "start", "value");
    out += "</g>";
    if (!withMeasured)
      continue;
    const MeasuredMemory &mm = measured[r];
    out += formatv("<g class=\"memory-bar-measured\" data-rank=\"{0}\">", r);
    out += text(kLabel - 8, y + 34, "measured", "end", "tick");
    x = kLabel;
    for (auto [kind, label, bytes] :
         {std::tuple{"parameters", "parameters", mm.parameters},
          std::tuple{"optimizer_state", "optimizer state", mm.optimizerState},
          std::tuple{"scratch", "scratch arena (gradients and activations)",
                     mm.scratch}}) {
      double w = plot * bytes / top;
      if (bytes > 0)
        out += rect(
            x, y + 24, w, 12, colorOf(kind),
            std::string("seg seg-measured-") + kind,
            formatv("rank {0}, measured {1}: {2}", r, label, bytesText(bytes))
                .str());
      x += w;
    }
    out += "</g>";
  }
  double axisY = y0 + rows * rowHeight + 6;
  if (showDevice) {
    double x = kLabel + plot * deviceBytes / top;
    out += formatv("<line class=\"device-memory\" x1=\"{0}\" y1=\"{1}\" "
                   "x2=\"{0}\" y2=\"{2}\" stroke=\"#c00\" "
                   "stroke-dasharray=\"4 3\"/>",
                   num(x), num(y0 - 4), num(axisY));
    out += text(x, y0 - 6, "device memory", "middle", "tick");
  }
  out += xAxis(axisY, top, "", bytesTick, plot);
  return out + "</svg>";
}

std::string ganttChart(const std::vector<Slice> &slices, int64_t stages,
                       llvm::StringRef kind) {
  double end = 0;
  for (const Slice &s : slices)
    end = std::max(end, s.endMs);
  if (end <= 0)
    end = 1;
  double rowHeight = 34, y0 = 30;
  double height = y0 + stages * rowHeight + 40;
  std::string cls = kind == "measured" ? "gantt-row-measured" : "gantt-row";
  std::string out =
      svgOpen(height, ("chart gantt gantt-" + kind).str(),
              (kind + " pipeline schedule, one row per stage").str());
  out += legend({{"forward", "forward"},
                 {"backward", "backward"},
                 {"forward+backward", "forward and backward"},
                 {"update", "optimizer update"},
                 {"other", "other"},
                 {"send_recv", "send/recv"},
                 {"collective", "other collectives"}},
                6);
  auto isCompute = [](llvm::StringRef k) {
    return k == "forward" || k == "backward" || k == "forward+backward" ||
           k == "update" || k == "other";
  };
  for (int64_t stage = 0; stage < stages; ++stage) {
    double y = y0 + stage * rowHeight;
    int64_t count = 0;
    std::string row;
    for (const Slice &s : slices) {
      if (s.stage != stage)
        continue;
      ++count;
      double x = kLabel + kPlot * s.startMs / end;
      double w = std::max(kPlot * (s.endMs - s.startMs) / end, 0.5);
      std::string what =
          s.microbatch >= 0
              ? formatv("{0} of micro-batch {1}", s.kind, s.microbatch).str()
              : s.kind;
      std::string title = formatv("stage {0}: {1}, {2} to {3} ms", stage, what,
                                  msText(s.startMs), msText(s.endMs))
                              .str();
      if (isCompute(s.kind)) {
        row += rect(x, y + 2, w, 20, colorOf(s.kind), "slice", title);
        if (s.microbatch >= 0 && w >= 14)
          row += text(x + w / 2, y + 16, std::to_string(s.microbatch), "middle",
                      "slice-label");
      } else {
        row += rect(x, y + 24, w, 6, colorOf(s.kind), "slice comm", title);
      }
    }
    out += formatv("<g class=\"{0}\" data-stage=\"{1}\" data-slices=\"{2}\">",
                   cls, stage, count);
    out += text(kLabel - 8, y + 16, formatv("stage {0}", stage).str(), "end");
    out += row + "</g>";
  }
  out += xAxis(y0 + stages * rowHeight + 2, end, " ms", msTick);
  return out + "</svg>";
}

std::vector<Slice> measuredSlices(const Trace &trace, const Plan &plan,
                                  int64_t &step) {
  // The first traced step, as each stage's first rank ran it.
  step = -1;
  for (const TraceEvent &e : trace.events)
    if (e.step >= 0 && (step < 0 || e.step < step))
      step = e.step;
  std::map<int64_t, int64_t> firstRankOfStage;
  for (int64_t r = plan.ranks() - 1; r >= 0; --r)
    firstRankOfStage[plan.stageOfRank(r)] = r;
  double origin = INFINITY;
  std::vector<const TraceEvent *> chosen;
  for (const TraceEvent &e : trace.events) {
    // (The step's thread: the communication thread's track shows when
    // started collectives ran, beside it.)
    if (e.step != step || e.tid != 0)
      continue;
    int64_t stage = plan.stageOfRank(e.rank);
    if (firstRankOfStage[stage] != e.rank)
      continue;
    chosen.push_back(&e);
    origin = std::min(origin, e.startUs);
  }
  // Consecutive ops of one micro-batch and phase make one span, as in the
  // predicted chart; collectives stay one slice each.
  std::sort(chosen.begin(), chosen.end(),
            [](const TraceEvent *a, const TraceEvent *b) {
              return a->startUs < b->startUs;
            });
  std::vector<Slice> slices;
  std::map<int64_t, size_t> openSpan;
  for (const TraceEvent *e : chosen) {
    if (e->category == "step")
      continue;
    Slice s;
    s.stage = plan.stageOfRank(e->rank);
    s.microbatch = e->microbatch;
    bool collective = e->category == "collective";
    if (collective)
      s.kind = e->op.empty() ? e->name : e->op;
    else if (e->category == "forward" || e->category == "backward" ||
             e->category == "update" || e->category == "forward+backward")
      s.kind = e->category;
    else
      s.kind = "other";
    s.startMs = (e->startUs - origin) / 1e3;
    s.endMs = (e->startUs + e->durationUs - origin) / 1e3;
    if (!collective) {
      auto it = openSpan.find(s.stage);
      if (it != openSpan.end() && slices[it->second].kind == s.kind &&
          slices[it->second].microbatch == s.microbatch) {
        slices[it->second].endMs = std::max(slices[it->second].endMs, s.endMs);
        continue;
      }
      openSpan[s.stage] = slices.size();
    }
    slices.push_back(std::move(s));
  }
  return slices;
}

std::string lossChart(const RunLog &log) {
  double lo = INFINITY, hi = -INFINITY;
  int64_t first = log.losses.front().first, last = log.losses.front().first;
  int64_t finite = 0;
  for (auto [step, loss] : log.losses) {
    first = std::min(first, step);
    last = std::max(last, step);
    if (!std::isfinite(loss))
      continue;
    ++finite;
    lo = std::min(lo, loss);
    hi = std::max(hi, loss);
  }
  double height = 300, top = 20, plotH = 230;
  std::string out =
      svgOpen(height, "chart loss-chart", "training loss by step");
  if (!finite) {
    out += text(kLabel, 60, "no finite loss in the log");
    return out + "</svg>";
  }
  if (hi - lo < 1e-12) {
    hi += 0.5;
    lo -= 0.5;
  }
  double span = std::max<int64_t>(last - first, 1);
  auto xOf = [&](int64_t step) {
    return kLabel + kPlot * (step - first) / span;
  };
  auto yOf = [&](double loss) {
    return top + plotH * (1 - (loss - lo) / (hi - lo));
  };
  // Horizontal grid with the loss values.
  double step = tickStep(hi - lo, 5);
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-12; v += step) {
    out += formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                   "stroke=\"#ddd\"/>",
                   num(kLabel), num(yOf(v)), num(kLabel + kPlot));
    out += text(kLabel - 6, yOf(v) + 4, fixed(v, step < 0.01 ? 4 : 3), "end",
                "tick");
  }
  std::string points;
  int64_t drawn = 0;
  for (auto [s, loss] : log.losses) {
    if (!std::isfinite(loss))
      continue;
    points += num(xOf(s)) + "," + num(yOf(loss)) + " ";
    ++drawn;
  }
  out += formatv("<polyline class=\"loss-line\" data-points=\"{0}\" "
                 "fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"1.5\" "
                 "points=\"{1}\"/>",
                 drawn, points);
  // Steps along the bottom.
  double axisY = top + plotH + 4;
  out += formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                 "stroke=\"#888\"/>",
                 num(kLabel), num(axisY), num(kLabel + kPlot));
  double stepTick = std::max(1.0, tickStep(span, 8));
  for (double v = 0; v <= span + 1e-9; v += stepTick) {
    double x = kLabel + kPlot * v / span;
    out += text(x, axisY + 16, std::to_string(first + static_cast<int64_t>(v)),
                "middle", "tick");
  }
  out += text(kLabel + kPlot / 2, axisY + 34, "step", "middle", "tick");
  return out + "</svg>";
}

} // namespace cleave::report
