//===- CalibrateCommand.cpp - `cleave calibrate` --------------------------===//
//
// Measures this machine for the cpu target and writes a cluster file for
// `cleave plan --cluster` and `--strategy auto`: cleave-calibrate-probe runs
// under mpirun with the ranks and threads of a training run and reports the
// runtime GEMM's rate by shape class, memory bandwidth, the cost of an op,
// the rates of the kernels the roofline misses, MPI latency and bandwidth
// between ranks, the time of the runtime's own collectives by size and the
// memory MPI keeps for itself (LibraryMemoryProbe.h); this command turns
// that into the cluster schema (planner/Cluster.h), with the raw numbers in
// comments. Before that, the probe alone (no mpirun) measures OpenBLAS's
// packing blocking (runtime/BlasPacking.h) and oneDNN's memory per
// convolution primitive (OneDnnPrimitiveProbe.h).
//
//===----------------------------------------------------------------------===//

#include "planner/Cluster.h"
#include "tools/cleave/Commands.h"
#include "tools/cleave/OutputFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <thread>
#include <unistd.h>

namespace cleave::driver {

namespace cl = llvm::cl;

namespace {

/// Runs a short probe (`args`, the program first) and returns the JSON
/// object it prints, or none with `why` set.
std::optional<llvm::json::Object>
runShortProbe(llvm::ArrayRef<std::string> args, std::string &why) {
  llvm::SmallString<128> outPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "cleave-calibrate-probe", "json", outPath)) {
    why = "cannot create a temporary file: " + ec.message();
    return std::nullopt;
  }
  llvm::FileRemover removeOut(outPath);
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(outPath), std::nullopt};
  std::string error;
  int code =
      llvm::sys::ExecuteAndWait(argRefs[0], argRefs, std::nullopt, redirects,
                                /*SecondsToWait=*/120, 0, &error);
  auto text = llvm::MemoryBuffer::getFile(outPath);
  if (code != 0 || !text) {
    why =
        llvm::formatv("the probe failed (exit {0}{1}): {2}", code,
                      error.empty() ? "" : ": " + error, llvm::join(args, " "));
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*text)->getBuffer().trim());
  if (!parsed)
    llvm::consumeError(parsed.takeError());
  else if (llvm::json::Object *result = parsed->getAsObject())
    return std::move(*result);
  why = "the probe printed no result: '" + (*text)->getBuffer().trim().str() +
        "'";
  return std::nullopt;
}

/// The cluster file's `device.blas_packing` lines from
/// `cleave-calibrate-probe --blas-packing`, or none with `why` set where
/// the probe could not fit OpenBLAS's packing (planning then predicts none).
std::string measureBlasPacking(std::string &why) {
  std::optional<llvm::json::Object> result =
      runShortProbe({CLEAVE_CALIBRATE_PROBE, "--blas-packing"}, why);
  if (!result)
    return "";
  if (std::optional<llvm::StringRef> failed = result->getString("error")) {
    why = failed->str();
    return "";
  }
  std::string lines = "  # OpenBLAS's packing buffer (runtime/BlasPacking.h), "
                      "fitted to the pages products touch";
  if (const llvm::json::Array *checks = result->getArray("checks")) {
    lines += "; checked on " + std::to_string(checks->size()) +
             " other shapes (predicted, measured bytes):";
    for (const llvm::json::Value &check : *checks)
      if (const llvm::json::Array *pair = check.getAsArray();
          pair && pair->size() == 2)
        lines +=
            llvm::formatv(" {0}/{1}", (*pair)[0].getAsInteger().value_or(0),
                          (*pair)[1].getAsInteger().value_or(0))
                .str();
  }
  lines += "\n  blas_packing:\n";
  for (llvm::StringRef key :
       {"panel_rows", "panel_depth", "narrow_columns", "small_product"}) {
    std::optional<int64_t> value = result->getInteger(key);
    if (!value || *value < 0) {
      why = "the probe gave no " + key.str();
      return "";
    }
    lines += llvm::formatv("    {0}: {1}\n", key, *value).str();
  }
  return lines;
}

/// The cluster file's `device.onednn_primitive_bytes` line from
/// `cleave-calibrate-probe --onednn-primitives` on `threads` threads, or
/// none with `why` set (planning then predicts none).
std::string measureOneDnnPrimitives(int64_t threads, std::string &why) {
  std::optional<llvm::json::Object> result = runShortProbe(
      {CLEAVE_CALIBRATE_PROBE, "--onednn-primitives", std::to_string(threads)},
      why);
  if (!result)
    return "";
  if (std::optional<llvm::StringRef> failed = result->getString("error")) {
    why = failed->str();
    return "";
  }
  std::optional<int64_t> bytes = result->getInteger("primitive_bytes");
  std::optional<int64_t> primitives = result->getInteger("primitives");
  if (!bytes || *bytes < 0 || !primitives) {
    why = "the probe gave no primitive_bytes";
    return "";
  }
  return llvm::formatv("  onednn_primitive_bytes: {0}  # oneDNN's own memory "
                       "per convolution primitive: {1} primitives rose {2} "
                       "bytes beyond their workspaces\n",
                       *bytes, *primitives,
                       result->getInteger("rise").value_or(0))
      .str();
}

/// Runs of the library's memory probe: each rank's measurement is one
/// draw of how its messages happened to pile up; the median of the runs'
/// most-loaded ranks counts.
constexpr int kLibraryMemoryRuns = 5;

/// The cluster file's `device.comm_library_bytes` line: what MPI keeps for
/// itself on a rank (`cleave-calibrate-probe --library-memory` under
/// `launch`, the median of kLibraryMemoryRuns runs), or none with `why`
/// set.
std::string measureLibraryMemory(std::vector<std::string> launch,
                                 std::string &why) {
  launch.push_back(CLEAVE_CALIBRATE_PROBE);
  launch.push_back("--library-memory");
  std::vector<int64_t> runs;
  for (int i = 0; i < kLibraryMemoryRuns; ++i) {
    std::optional<llvm::json::Object> result = runShortProbe(launch, why);
    if (!result)
      return "";
    std::optional<int64_t> bytes = result->getInteger("library_bytes");
    if (!bytes || *bytes < 0) {
      why = "the probe gave no library_bytes";
      return "";
    }
    runs.push_back(*bytes);
  }
  std::vector<int64_t> sorted = runs;
  llvm::sort(sorted);
  return llvm::formatv(
             "  comm_library_bytes: {0}  # MPI's own memory on a "
             "rank, the median of {1} runs: {2}\n",
             sorted[sorted.size() / 2], runs.size(),
             llvm::join(llvm::map_range(
                            runs, [](int64_t b) { return std::to_string(b); }),
                        " "))
      .str();
}

class CalibrateCommand : public Command {
public:
  CalibrateCommand()
      : sub_("calibrate", "Measure this machine for the cpu target and write "
                          "a cluster file for `cleave plan --cluster`"),
        output_("o", cl::desc("The cluster file to write (YAML)"),
                cl::value_desc("FILE"), cl::sub(sub_)),
        ranks_("ranks", cl::desc("Ranks to measure with, as training will "
                                 "run them (default 2)"),
               cl::value_desc("N"), cl::init(2), cl::sub(sub_)),
        threads_("threads", cl::desc("OpenMP threads per rank (default: "
                                     "cores / ranks, at least 1)"),
                 cl::value_desc("T"), cl::init(0), cl::sub(sub_)),
        memoryGiB_("memory-gib", cl::desc("Memory one rank may use (default: "
                                          "80% of RAM / ranks)"),
                   cl::value_desc("G"), cl::init(0), cl::sub(sub_)),
        seconds_("seconds", cl::desc("Seconds per measurement (default 0.5)"),
                 cl::value_desc("S"), cl::init(0.5), cl::sub(sub_)),
        mpirun_("mpirun", cl::desc("The MPI launcher (default mpirun; as root "
                                   "--allow-run-as-root is added)"),
                cl::value_desc("PROGRAM"), cl::init("mpirun"),
                cl::sub(sub_)) {}

  cl::SubCommand &subCommand() override { return sub_; }
  int run(mlir::MLIRContext &) override;

private:
  int fail(const llvm::Twine &message) {
    llvm::errs() << "cleave calibrate: error: " << message << "\n";
    return 1;
  }

  cl::SubCommand sub_;
  cl::opt<std::string> output_;
  cl::opt<int64_t> ranks_, threads_;
  cl::opt<double> memoryGiB_, seconds_;
  cl::opt<std::string> mpirun_;
};

double physicalMemoryGiB() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? double(pages) * size / (1 << 30) : 0;
}

int CalibrateCommand::run(mlir::MLIRContext &) {
  if (output_.empty())
    return fail("give the cluster file to write with -o FILE");
  if (ranks_ < 1 || ranks_ > 4096)
    return fail(llvm::formatv("--ranks {0} must be in [1, 4096]", ranks_.getValue()));
  int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  int64_t threads = threads_ ? threads_.getValue()
                             : std::max<int64_t>(1, cores / ranks_);
  if (threads < 1 || threads > 1024)
    return fail(llvm::formatv("--threads {0} must be in [1, 1024]", threads));
  if (!(seconds_ > 0 && seconds_ <= 60))
    return fail("--seconds must be in (0, 60]");
  double memory = memoryGiB_ ? memoryGiB_.getValue()
                             : 0.8 * physicalMemoryGiB() / ranks_;
  if (!(memory > 0))
    return fail("--memory-gib must be positive (this machine's memory could "
                "not be read: give it)");

  llvm::ErrorOr<std::string> launcher = llvm::sys::findProgramByName(mpirun_);
  if (!launcher)
    return fail("cannot find the MPI launcher '" + mpirun_ +
                "' (install Open MPI, or give --mpirun PROGRAM)");
  std::vector<std::string> args = {*launcher};
  if (geteuid() == 0)
    args.push_back("--allow-run-as-root");
  if (ranks_ * threads > cores)
    args.push_back("--oversubscribe");
  for (std::string arg :
       {std::string("-np"), std::to_string(ranks_), std::string("-x"),
        "OMP_NUM_THREADS=" + std::to_string(threads)})
    args.push_back(arg);
  // What MPI keeps for itself on a rank (one rank: no messages).
  std::string libraryWhy, library;
  if (ranks_ > 1) {
    library = measureLibraryMemory(args, libraryWhy);
    if (library.empty())
      return fail("measuring MPI's own memory: " + libraryWhy);
  }
  for (std::string arg :
       {std::string(CLEAVE_CALIBRATE_PROBE), std::string("--ranks"),
        std::to_string(ranks_), std::string("--seconds"),
        llvm::formatv("{0}", seconds_.getValue()).str()})
    args.push_back(arg);
  llvm::SmallString<128> outPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("cleave-calibrate", "json", outPath))
    return fail("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeOut(outPath);
  std::string blasWhy;
  std::string blasPacking = measureBlasPacking(blasWhy);
  if (blasPacking.empty())
    llvm::errs() << "cleave calibrate: note: OpenBLAS's packing buffers will "
                    "not be predicted: "
                 << blasWhy << "\n";
  std::string primitivesWhy;
  std::string primitives = measureOneDnnPrimitives(threads, primitivesWhy);
  if (primitives.empty())
    llvm::errs() << "cleave calibrate: note: oneDNN's memory per primitive "
                    "will not be predicted: "
                 << primitivesWhy << "\n";
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt,
                                                llvm::StringRef(outPath),
                                                std::nullopt};
  llvm::errs() << "cleave calibrate: measuring " << ranks_ << " ranks x "
               << threads << " threads (about "
               << llvm::formatv("{0:f0}", (ranks_ > 1 ? 30 : 24) * seconds_ + 2)
               << " s): " << llvm::join(args, " ") << "\n";
  std::string error;
  int code = llvm::sys::ExecuteAndWait(args[0], argRefs, std::nullopt,
                                       redirects, /*SecondsToWait=*/600, 0,
                                       &error);
  auto text = llvm::MemoryBuffer::getFile(outPath);
  if (code != 0 || !text)
    return fail(llvm::formatv("the measurement failed (exit {0}{1}); its "
                              "command was: {2}",
                              code, error.empty() ? "" : ": " + error,
                              llvm::join(args, " ")));
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*text)->getBuffer().trim());
  const llvm::json::Object *result = parsed ? parsed->getAsObject() : nullptr;
  if (!result) {
    if (!parsed)
      llvm::consumeError(parsed.takeError());
    return fail("the probe printed no result: '" +
                (*text)->getBuffer().trim() + "'");
  }
  const llvm::json::Object *gemm = result->getObject("gemm_gflops");
  auto number = [&](const llvm::json::Object *object, llvm::StringRef key) {
    return object ? object->getNumber(key).value_or(0) : 0;
  };
  double large = number(gemm, "large"), medium = number(gemm, "medium"),
         skinny = number(gemm, "skinny");
  double triad = number(result, "triad_gbs");
  double cacheTriad = number(result, "cache_triad_gbs");
  double cacheMiB = number(result, "cache_bytes") / (1024.0 * 1024.0);
  double llcTriad = number(result, "llc_triad_gbs");
  double llcMiB = number(result, "llc_bytes") / (1024.0 * 1024.0);
  // The last-level cache, where the machine has one larger than the L2.
  std::string llc =
      llcTriad > 0 && llcMiB > cacheMiB
          ? llvm::formatv("  llc_mib: {0:f3}\n  llc_bandwidth_gbs: {1:f3}\n",
                          llcMiB, llcTriad)
                .str()
          : std::string();
  double latency = number(result, "p2p_latency_us");
  double bandwidth = number(result, "p2p_bandwidth_gbs");
  double overhead = number(result, "op_overhead_us");
  double handOff = number(result, "hand_off_us");
  // The share of a started all-reduce's time compute hides (one rank: no
  // collectives, nothing to hide).
  double overlap = ranks_ > 1 ? number(result, "overlap") : 1;
  if (!(large > 0 && medium > 0 && skinny > 0 && triad > 0 &&
        cacheTriad > 0 && cacheMiB > 0 && overhead > 0 && handOff > 0) ||
      (ranks_ > 1 && !(bandwidth > 0)))
    return fail("the probe's numbers are not all positive: '" +
                (*text)->getBuffer().trim() + "'");
  // The kernels' rates as the cluster file's device.kernels.
  std::string kernels;
  const llvm::json::Object *rates = result->getObject("kernels");
  for (size_t k = 0; k < planner::kKernelCount; ++k) {
    llvm::StringRef name = planner::kernelName(static_cast<planner::Kernel>(k));
    const llvm::json::Array *rate = rates ? rates->getArray(name) : nullptr;
    std::optional<double> row = rate && rate->size() == 2
                                    ? (*rate)[0].getAsNumber()
                                    : std::nullopt;
    std::optional<double> element =
        rate && rate->size() == 2 ? (*rate)[1].getAsNumber() : std::nullopt;
    if (!row || !element || *row < 0 || *element < 0)
      return fail("the probe gave no rate for the kernel '" + name + "': '" +
                  (*text)->getBuffer().trim() + "'");
    kernels += llvm::formatv("    {0}: {{row_ns: {1:f3}, element_ns: {2:f4}}\n",
                             name, *row, *element)
                   .str();
  }
  // The runtime's collectives (Link::collectives): per group size, each
  // kind's bus bandwidth by buffer size, and the measured times for the
  // comment.
  std::string collectives, collectiveTimes;
  const llvm::json::Array *groups = result->getArray("collectives");
  if (ranks_ > 1 && (!groups || groups->empty()))
    return fail("the probe measured no collectives: '" +
                (*text)->getBuffer().trim() + "'");
  for (const llvm::json::Value &groupValue : groups ? *groups
                                                    : llvm::json::Array()) {
    const llvm::json::Object *group = groupValue.getAsObject();
    std::optional<int64_t> size =
        group ? group->getInteger("group_size") : std::nullopt;
    if (!size || *size < 2)
      return fail("the probe's collectives have no group size: '" +
                  (*text)->getBuffer().trim() + "'");
    collectives += llvm::formatv("    {0}:\n", *size).str();
    collectiveTimes += llvm::formatv("# The runtime's collectives on groups "
                                     "of {0}, us per call by buffer bytes:\n",
                                     *size)
                           .str();
    for (size_t k = 0; k < planner::kMeasuredCollectiveCount; ++k) {
      auto kind = static_cast<planner::MeasuredCollective>(k);
      llvm::StringRef name = planner::measuredCollectiveName(kind);
      const llvm::json::Array *points = group->getArray(name);
      if (!points || points->empty())
        return fail("the probe gave no times for " + name + ": '" +
                    (*text)->getBuffer().trim() + "'");
      std::string busBandwidths, times;
      for (const llvm::json::Value &pointValue : *points) {
        const llvm::json::Array *point = pointValue.getAsArray();
        std::optional<double> bytes =
            point && point->size() == 2 ? (*point)[0].getAsNumber()
                                        : std::nullopt;
        std::optional<double> seconds =
            point && point->size() == 2 ? (*point)[1].getAsNumber()
                                        : std::nullopt;
        double sent = bytes ? planner::measuredCollectiveBytesSent(
                                  kind, *bytes, *size)
                            : 0;
        if (!bytes || !seconds || !(*bytes > 0) || !(*seconds > 0) ||
            !(sent > 0))
          return fail("the probe's time of " + name +
                      " is not a positive size and time: '" +
                      (*text)->getBuffer().trim() + "'");
        llvm::StringRef separator = busBandwidths.empty() ? "" : ", ";
        busBandwidths +=
            llvm::formatv("{0}{1:f0}: {2:f4}", separator, *bytes,
                          sent / *seconds / 1e9)
                .str();
        times += llvm::formatv("{0}{1:f0} {2:f1}", separator, *bytes,
                               *seconds * 1e6)
                     .str();
      }
      collectives += llvm::formatv("      {0}: {{{1}}\n", name,
                                   busBandwidths)
                         .str();
      collectiveTimes += llvm::formatv("#   {0}: {1}\n", name, times).str();
    }
  }
  // The link's rounds: a comment, and a warning when they disagree (the
  // file then holds each number's fastest round).
  std::string linkRounds;
  if (ranks_ > 1) {
    const llvm::json::Array *rounds = result->getArray("link_rounds");
    double slowest = 0, fastest = 0, least = 0, most = 0;
    for (const llvm::json::Value &roundValue :
         rounds ? *rounds : llvm::json::Array()) {
      const llvm::json::Object *round = roundValue.getAsObject();
      double roundLatency = number(round, "latency_us");
      double roundBandwidth = number(round, "bandwidth_gbs");
      if (!(roundLatency > 0 && roundBandwidth > 0))
        return fail("the probe's link rounds are not positive latencies and "
                    "bandwidths: '" +
                    (*text)->getBuffer().trim() + "'");
      linkRounds += llvm::formatv("{0}{1:f2} us {2:f2} GB/s",
                                  linkRounds.empty() ? "" : ", ", roundLatency,
                                  roundBandwidth)
                        .str();
      bool first = slowest == 0;
      slowest = first ? roundLatency : std::max(slowest, roundLatency);
      fastest = first ? roundLatency : std::min(fastest, roundLatency);
      least = first ? roundBandwidth : std::min(least, roundBandwidth);
      most = first ? roundBandwidth : std::max(most, roundBandwidth);
    }
    if (linkRounds.empty())
      return fail("the probe measured the link in no round: '" +
                  (*text)->getBuffer().trim() + "'");
    linkRounds = "# The link in rounds spread over the measurement (ping-pong "
                 "latency, bandwidth): " +
                 linkRounds + "; each number is its fastest round's.\n";
    // Half again as slow: more than repeated measurements of one link
    // differ, as much as a vCPU moved to another die changes it.
    if (slowest > 1.5 * fastest || most > 1.5 * least)
      llvm::errs() << llvm::formatv(
          "cleave calibrate: warning: the link between ranks changed speed "
          "during the measurement (ping-pong {0:f2}-{1:f2} us, {2:f2}-{3:f2} "
          "GB/s): the file keeps each number's fastest round. On a shared or "
          "virtual machine the link between cores can change speed for tens "
          "of seconds at a time, and runs in a slow period will be slower "
          "than predicted; calibrate again (a larger --seconds samples "
          "longer) to confirm.\n",
          fastest, slowest, least, most);
  }
  if (ranks_ == 1) {
    // Nothing to measure between ranks; plans on one rank send nothing.
    bandwidth = triad;
    latency = 1;
  }
  // A link: the ping-pong's bandwidth and latency (what hand-overs and the
  // collectives not measured take), and the measured collectives.
  std::string link =
      collectives.empty()
          ? llvm::formatv(" {{bandwidth_gbs: {0:f4}, latency_us: {1:f3}}\n",
                          bandwidth, latency)
                .str()
          : llvm::formatv("\n  bandwidth_gbs: {0:f4}\n  latency_us: {1:f3}\n"
                          "  collectives:  # the runtime's own: bus bandwidth "
                          "in GB/s (bytes a rank sends per second) by buffer "
                          "bytes, per group size\n{2}",
                          bandwidth, latency, collectives)
                .str();
  // The large GEMM's rate is the peak, the smaller classes' mean fraction
  // of it the compute efficiency (products of unknown shape: convolutions);
  // the products by smallest dimension their own fractions of it.
  double efficiency = std::min(1.0, (medium + skinny) / 2 / large);
  std::string gemmByDimension;
  const llvm::json::Array *byDimension =
      gemm ? gemm->getArray("by_dimension") : nullptr;
  if (!byDimension || byDimension->empty())
    return fail("the probe gave no GEMM rates by dimension: '" +
                (*text)->getBuffer().trim() + "'");
  std::map<int64_t, std::string> byWidth;
  for (const llvm::json::Value &pointValue : *byDimension) {
    const llvm::json::Array *point = pointValue.getAsArray();
    auto at = [&](size_t i) {
      return point && point->size() == 4 ? (*point)[i].getAsNumber()
                                         : std::nullopt;
    };
    std::optional<double> width = at(0), dim = at(1), rows = at(2),
                          summed = at(3);
    if (!width || !dim || !rows || !summed || !(*width >= 1) ||
        !(*dim >= 1) || !(*rows > 0) || !(*summed > 0))
      return fail("the probe's GEMM rate by dimension is not a width, a "
                  "dimension and two positive rates: '" +
                  (*text)->getBuffer().trim() + "'");
    std::string &points = byWidth[static_cast<int64_t>(*width)];
    points += llvm::formatv("{0}{1:f0}: {{mn: {2:f3}, k: {3:f3}}",
                            points.empty() ? "" : ", ", *dim,
                            std::min(1.0, *rows / large),
                            std::min(1.0, *summed / large))
                  .str();
  }
  for (const auto &[width, points] : byWidth)
    gemmByDimension +=
        llvm::formatv("    {0}: {{{1}}\n", width, points).str();
  // oneDNN's direct convolutions, per pass, over the same peak.
  const llvm::json::Object *conv = result->getObject("conv_gflops");
  double convForward = number(conv, "forward"),
         convInputGrad = number(conv, "input_grad"),
         convWeightGrad = number(conv, "weight_grad");
  if (!(convForward > 0) || !(convInputGrad > 0) || !(convWeightGrad > 0))
    return fail("the probe gave no convolution rates: '" +
                (*text)->getBuffer().trim() + "'");
  // Rates above 2 mean that the runtime's GEMM (OpenBLAS) runs far below
  // what the vector units do, which the user may fix; above what a file
  // may say (ConvEfficiency::kMost) the measurement went wrong, and the
  // rate is capped so that the file written is one `cleave plan` reads.
  double fastest = std::max({convForward, convInputGrad, convWeightGrad});
  if (fastest > 2 * large)
    llvm::errs() << llvm::formatv(
        "cleave calibrate: warning: oneDNN's convolutions ran at up to "
        "{0:f1} times the runtime's 1024^3 GEMM ({1:f2} GFLOP/s): OpenBLAS "
        "may be running kernels for an older CPU (0.3.21 does not know the "
        "newest Xeons; OPENBLAS_CORETYPE=SkylakeX selects its AVX-512 "
        "kernels). The file holds what was measured; calibrate with the "
        "environment the programs will run in.\n",
        fastest / large, large);
  auto convRate = [&](double gflops, const char *pass) {
    double rate = gflops / large;
    if (rate <= planner::ConvEfficiency::kMost)
      return rate;
    llvm::errs() << llvm::formatv(
        "cleave calibrate: warning: the convolution's {0} pass measured "
        "{1:f1} times the GEMM's rate, more than a file may say: the file "
        "says {2:f0}; calibrate again on a quieter machine.\n",
        pass, rate, planner::ConvEfficiency::kMost);
    return planner::ConvEfficiency::kMost;
  };
  auto convRates = [&](double forward, double inputGrad, double weightGrad) {
    return llvm::formatv("{{forward: {0:f3}, input_grad: {1:f3}, "
                         "weight_grad: {2:f3}}",
                         convRate(forward, "forward"),
                         convRate(inputGrad, "input gradient"),
                         convRate(weightGrad, "weight gradient"))
        .str();
  };
  // The same by output rows a call, from 2x2 images to 16x16.
  const llvm::json::Object *byRows = result->getObject("conv_gflops_by_rows");
  std::map<int64_t, std::string> convByRows;
  if (byRows)
    for (const auto &[rows, value] : *byRows) {
      const llvm::json::Object *point = value.getAsObject();
      double forward = number(point, "forward"),
             inputGrad = number(point, "input_grad"),
             weightGrad = number(point, "weight_grad");
      int64_t count = 0;
      if (llvm::StringRef(rows).getAsInteger(10, count) || count <= 0 ||
          !(forward > 0) || !(inputGrad > 0) || !(weightGrad > 0))
        return fail("the probe gave a bad convolution rate by rows: '" +
                    (*text)->getBuffer().trim() + "'");
      convByRows[count] = convRates(forward, inputGrad, weightGrad);
    }
  if (convByRows.empty())
    return fail("the probe gave no convolution rates by rows: '" +
                (*text)->getBuffer().trim() + "'");
  // oneDNN's Winograd kernels on the first geometry, counted as the direct
  // kernels' multiply-adds.
  const llvm::json::Object *winograd =
      result->getObject("conv_winograd_gflops");
  double winogradForward = number(winograd, "forward"),
         winogradInputGrad = number(winograd, "input_grad"),
         winogradWeightGrad = number(winograd, "weight_grad");
  if (!(winogradForward > 0) || !(winogradInputGrad > 0) ||
      !(winogradWeightGrad > 0))
    return fail("the probe gave no Winograd convolution rates: '" +
                (*text)->getBuffer().trim() + "'");
  std::string convEfficiency =
      "  conv:  # oneDNN's direct convolutions, on the multiply-adds their "
      "kernels do, 8 images of 16x16 (2048 output rows a call)\n" +
      llvm::formatv("    forward: {0:f3}\n    input_grad: {1:f3}\n"
                    "    weight_grad: {2:f3}\n",
                    convRate(convForward, "forward"),
                    convRate(convInputGrad, "input gradient"),
                    convRate(convWeightGrad, "weight gradient"))
          .str() +
      "    by_rows:  # by output rows a call (samples x output positions)\n";
  for (const auto &[rows, rates] : convByRows)
    convEfficiency += llvm::formatv("      {0}: {1}\n", rows, rates).str();
  convEfficiency +=
      "    # oneDNN's Winograd kernels (3x3 convolutions over large planes), "
      "the same 8 images of 16x16, on the direct kernels' multiply-adds\n"
      "    winograd: " +
      convRates(winogradForward, winogradInputGrad, winogradWeightGrad) + "\n";
  std::string yaml = llvm::formatv(
      "# Measured by `cleave calibrate` with {0} ranks x {1} threads "
      "(all ranks at once, as a run has them).\n"
      "# GEMM GFLOP/s per rank, runtime gemm: 1024^3 {2:f2}, 256^3 {3:f2}, "
      "4096x32x1024 {4:f2}; an op on 8x8 tensors {13:f3} us;\n"
      "# STREAM triad {5:f2} GB/s per rank ({11:f2} in the L2 cache, "
      "{16:f2} in the last-level cache); MPI "
      "ping-pong between ranks 0 and 1: {6:f2} us, {7:f3} GB/s.\n"
      "{22}{18}"
      "# One node measured: inter_node repeats intra_node.\n"
      "name: calibrated\n"
      "target: cpu\n"
      "nodes: 1\n"
      "devices_per_node: {0}\n"
      "device:\n"
      "  memory_gib: {8:f3}\n"
      "  threads: {1}  # OpenMP threads per rank\n"
      "  peak_tflops: {{fp32: {9:f6}}\n"
      "  memory_bandwidth_gbs: {5:f3}\n"
      "  cache_mib: {12:f3}\n"
      "  cache_bandwidth_gbs: {11:f3}\n"
      "{15}"
      "  op_overhead_us: {13:f4}\n"
      "  hand_off_us: {17:f3}\n"
      "  comm_overlap: {20:f3}  # of a started all-reduce's time, hidden "
      "by compute\n"
      "  kernels:  # ns per row (a matrix for batched_matmul) and per element\n"
      "{14}"
      "intra_node:{19}"
      "inter_node:{19}"
      "efficiency:\n"
      "  compute: {10:f3}\n"
      "  memory: 1\n"
      "  network: 1\n"
      "  gemm:  # by the other two dimensions (their geometric mean), then "
      "the smallest: mn with that many rows or columns, k summing over it\n"
      "{21}{23}",
      ranks_.getValue(), threads, large, medium, skinny, triad, latency,
      bandwidth, memory, large / 1000, efficiency, cacheTriad, cacheMiB,
      overhead, kernels, llc + blasPacking + library + primitives, llcTriad,
      handOff, collectiveTimes, link, overlap, gemmByDimension, linkRounds,
      convEfficiency);
  if (!writeOutputFile(output_, yaml, "cleave calibrate"))
    return 1;
  llvm::outs() << yaml;
  return 0;
}

} // namespace

std::unique_ptr<Command> makeCalibrateCommand() {
  return std::make_unique<CalibrateCommand>();
}

} // namespace cleave::driver
