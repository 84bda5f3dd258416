//===- Cluster.cpp - cluster presets and cluster files --------------------===//
//
// The presets' device numbers are NVIDIA's data sheets:
//  - A100 (NVIDIA A100 Tensor Core GPU data sheet, SXM4): 19.5 TFLOP/s
//    fp32, 156 tf32, 312 bf16/fp16 (dense); HBM2 1,555 GB/s (40 GB),
//    HBM2e 2,039 GB/s (80 GB); NVLink 3 600 GB/s per GPU, both directions
//    together (300 GB/s each way).
//  - DGX A100 (system data sheet): 8 A100, 8 single-port Mellanox
//    ConnectX-6 200 Gb/s HDR InfiniBand for compute: 25 GB/s per GPU
//    each way.
//  - H100 SXM5 (NVIDIA H100 Tensor Core GPU data sheet): 67 TFLOP/s fp32,
//    494.7 tf32, 989.4 bf16 (dense); 80 GB HBM3 at 3.35 TB/s; NVLink 4
//    900 GB/s per GPU (450 each way).
//  - DGX H100 (system data sheet): 8 H100, 8 ConnectX-7 400 Gb/s NDR:
//    50 GB/s per GPU each way.
// Latencies and efficiencies are not on data sheets; they are this
// project's assumptions until fitted against measurements (README,
// "Planning"): 3 us per NVLink message, 5 us per InfiniBand message
// (typical NCCL ring step latencies), 70% of peak for matrix products,
// 80% of memory and link bandwidth (NCCL's all-reduce bus bandwidth on a
// DGX A100 is about 230 of 300 GB/s).
//
//===----------------------------------------------------------------------===//

#include "planner/Cluster.h"

#include "runtime/CommVolume.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace cleave::planner {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

Cluster dgxA100(double memoryGiB, double bandwidthGBs) {
  Cluster c;
  c.devicesPerNode = 8;
  c.memoryGiB = memoryGiB;
  c.peakTflopsFp32 = 19.5;
  c.peakTflopsTf32 = 156;
  c.peakTflopsBf16 = 312;
  c.memoryBandwidthGBs = bandwidthGBs;
  c.intraNode = {300, 3};
  c.interNode = {25, 5};
  c.computeEfficiency = 0.7;
  c.memoryEfficiency = 0.8;
  c.networkEfficiency = 0.8;
  return c;
}

std::vector<Cluster> presets() {
  Cluster a40 = dgxA100(40, 1555);
  a40.name = "dgx-a100-40g";
  a40.source = "NVIDIA A100 and DGX A100 data sheets (A100 SXM4 40 GB)";
  Cluster a80 = dgxA100(80, 2039);
  a80.name = "dgx-a100-80g";
  a80.source = "NVIDIA A100 and DGX A100 data sheets (A100 SXM4 80 GB)";
  Cluster h100;
  h100.name = "dgx-h100";
  h100.source = "NVIDIA H100 and DGX H100 data sheets (H100 SXM5 80 GB)";
  h100.devicesPerNode = 8;
  h100.memoryGiB = 80;
  h100.peakTflopsFp32 = 67;
  h100.peakTflopsTf32 = 494.7;
  h100.peakTflopsBf16 = 989.4;
  h100.memoryBandwidthGBs = 3350;
  h100.intraNode = {450, 3};
  h100.interNode = {50, 5};
  h100.computeEfficiency = 0.7;
  h100.memoryEfficiency = 0.8;
  h100.networkEfficiency = 0.8;
  return {a40, a80, h100};
}

/// A YAML node read eagerly (LLVM's parser reads lazily and forward only:
/// a child must be read while its parent is being iterated).
struct Tree {
  enum Kind { Scalar, Mapping, Other } kind = Other;
  std::string scalar;
  std::vector<std::pair<std::string, std::unique_ptr<Tree>>> entries;
  unsigned line = 0, column = 0;
};

std::unique_ptr<Tree> readTree(llvm::yaml::Node *node, llvm::SourceMgr &sm,
                               int depth = 0) {
  auto tree = std::make_unique<Tree>();
  if (!node)
    return tree;
  auto [line, column] = sm.getLineAndColumn(node->getSourceRange().Start);
  tree->line = line;
  tree->column = column;
  llvm::SmallString<32> storage;
  if (auto *scalar = llvm::dyn_cast<llvm::yaml::ScalarNode>(node)) {
    tree->kind = Tree::Scalar;
    tree->scalar = scalar->getValue(storage).str();
  } else if (auto *map = llvm::dyn_cast<llvm::yaml::MappingNode>(node)) {
    tree->kind = Tree::Mapping;
    for (llvm::yaml::KeyValueNode &entry : *map) {
      auto *key =
          llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(entry.getKey());
      std::string name = key ? key->getValue(storage).str() : "?";
      // The schema is four levels deep; deeper input is not a cluster.
      tree->entries.push_back(
          {name, depth < 8 ? readTree(entry.getValue(), sm, depth + 1)
                           : std::make_unique<Tree>()});
    }
  } else {
    node->skip();
  }
  return tree;
}

/// Reads fields of a Tree, reporting problems as FILE:LINE:COL: field 'a.b'.
class Reader {
public:
  explicit Reader(llvm::StringRef file) : file_(file) {}

  llvm::Error error(const llvm::Twine &field, const llvm::Twine &what,
                    const Tree *at = nullptr) {
    std::string where;
    if (at && at->line)
      where = llvm::formatv(":{0}:{1}", at->line, at->column).str();
    return fail(file_ + where + ": field '" + field + "' " + what);
  }

  /// The mapping's entries by key; refuses keys outside `known`.
  llvm::Expected<llvm::StringMap<const Tree *>>
  entries(const Tree *node, const llvm::Twine &path,
          llvm::ArrayRef<llvm::StringRef> known) {
    std::string prefix = path.str();
    if (!node || node->kind != Tree::Mapping)
      return error(prefix.empty() ? "(top level)" : prefix,
                   "must be a mapping of keys to values", node);
    llvm::StringMap<const Tree *> result;
    for (auto &[name, value] : node->entries) {
      std::string full = join(prefix, name);
      if (!llvm::is_contained(known, name))
        return error(full,
                     "is not part of the schema; the keys here are " +
                         llvm::join(known, ", "),
                     value.get());
      if (!result.try_emplace(name, value.get()).second)
        return error(full, "is given twice", value.get());
    }
    return result;
  }

  /// A number >= 0 (> 0 unless `zeroOk`), required unless `optional`.
  llvm::Error number(const llvm::StringMap<const Tree *> &map,
                     llvm::StringRef key, const llvm::Twine &path, double &out,
                     bool optional = false, bool zeroOk = false) {
    std::string full = join(path.str(), key);
    auto it = map.find(key);
    if (it == map.end())
      return optional ? llvm::Error::success() : error(full, "is missing");
    double value;
    if (it->second->kind != Tree::Scalar ||
        llvm::StringRef(it->second->scalar).getAsDouble(value) ||
        !std::isfinite(value))
      return error(full, "must be a number", it->second);
    if (value < 0 || (!zeroOk && value == 0))
      return error(full,
                   llvm::formatv("must be {0} 0, not {1}", zeroOk ? ">=" : ">",
                                 it->second->scalar),
                   it->second);
    out = value;
    return llvm::Error::success();
  }

  llvm::Error string(const llvm::StringMap<const Tree *> &map,
                     llvm::StringRef key, std::string &out) {
    auto it = map.find(key);
    if (it == map.end())
      return llvm::Error::success();
    if (it->second->kind != Tree::Scalar)
      return error(key, "must be a string", it->second);
    out = it->second->scalar;
    return llvm::Error::success();
  }

  static std::string join(llvm::StringRef prefix, llvm::StringRef key) {
    return prefix.empty() ? key.str() : prefix.str() + "." + key.str();
  }

private:
  std::string file_;
};

/// A link's `collectives` (Link::collectives): per group size measured
/// (a whole number >= 2), for each kind measured a mapping of buffer bytes
/// to bus bandwidth in GB/s.
/// A whole number of at least 1 in a key of efficiency.gemm.
bool wholeKey(llvm::StringRef text, int64_t &out) {
  double value = 0;
  if (text.getAsDouble(value) || value < 1 || value != std::floor(value) ||
      value > 1e9)
    return false;
  out = static_cast<int64_t>(value);
  return true;
}

/// efficiency.gemm: width -> smallest dimension -> {mn: fraction,
/// k: fraction}.
llvm::Error readGemmEfficiency(Reader &reader, const Tree *node,
                               Cluster &c) {
  const char *where = "efficiency.gemm";
  const char *shape = "({256: {8: {mn: 0.4, k: 0.9}, 64: {mn: 0.8, k: "
                      "0.9}}, 1024: {8: {mn: 0.2, k: 0.3}}})";
  if (node->kind != Tree::Mapping || node->entries.empty())
    return reader.error(where,
                        llvm::Twine("must be a mapping of the geometric mean "
                                    "of a product's two larger dimensions "
                                    "to mappings of its smallest dimension "
                                    "to its fractions of peak ") +
                            shape,
                        node);
  for (auto &[widthText, widthNode] : node->entries) {
    std::string widthAt = Reader::join(where, widthText);
    GemmEfficiencyAtWidth atWidth;
    if (!wholeKey(widthText, atWidth.width))
      return reader.error(widthAt,
                          "is not a width: the keys here are whole numbers, "
                          "at least 1",
                          widthNode.get());
    if (llvm::any_of(c.gemmEfficiency, [&](const GemmEfficiencyAtWidth &o) {
          return o.width == atWidth.width;
        }))
      return reader.error(widthAt, "is given twice", widthNode.get());
    if (widthNode->kind != Tree::Mapping || widthNode->entries.empty())
      return reader.error(widthAt,
                          llvm::Twine("must be a mapping of the smallest "
                                      "dimension to fractions of peak ") +
                              shape,
                          widthNode.get());
    for (auto &[dimText, value] : widthNode->entries) {
      std::string at = Reader::join(widthAt, dimText);
      GemmEfficiency point;
      if (!wholeKey(dimText, point.smallestDim))
        return reader.error(at,
                            "is not a dimension: the keys here are whole "
                            "numbers, at least 1",
                            value.get());
      if (llvm::any_of(atWidth.points, [&](const GemmEfficiency &other) {
            return other.smallestDim == point.smallestDim;
          }))
        return reader.error(at, "is given twice", value.get());
      auto fractions = reader.entries(value.get(), at, {"mn", "k"});
      if (!fractions)
        return fractions.takeError();
      for (auto [key, out] :
           {std::pair{"mn", &point.mn}, std::pair{"k", &point.k}}) {
        if (llvm::Error e = reader.number(*fractions, key, at, *out))
          return e;
        if (*out > 1)
          return reader.error(Reader::join(at, key),
                              "is a fraction of peak and must be at most 1",
                              fractions->lookup(key));
      }
      atWidth.points.push_back(point);
    }
    llvm::sort(atWidth.points,
               [](const GemmEfficiency &a, const GemmEfficiency &b) {
                 return a.smallestDim < b.smallestDim;
               });
    c.gemmEfficiency.push_back(std::move(atWidth));
  }
  llvm::sort(c.gemmEfficiency, [](const GemmEfficiencyAtWidth &a,
                                  const GemmEfficiencyAtWidth &b) {
    return a.width < b.width;
  });
  return llvm::Error::success();
}

/// The three rates {forward, input_grad, weight_grad} over the peak of the
/// mapping `rates` at `where`.
llvm::Error readConvRates(Reader &reader,
                          const llvm::StringMap<const Tree *> &rates,
                          const std::string &where, ConvRates &out) {
  constexpr double kMost = ConvEfficiency::kMost;
  for (auto [key, rate] : {std::pair{"forward", &out.forward},
                           std::pair{"input_grad", &out.inputGrad},
                           std::pair{"weight_grad", &out.weightGrad}}) {
    if (llvm::Error e = reader.number(rates, key, where, *rate))
      return e;
    if (*rate > kMost)
      return reader.error(
          Reader::join(where, key),
          llvm::formatv("is a rate over the peak and must be at most {0}",
                        kMost),
          rates.lookup(key));
  }
  return llvm::Error::success();
}

/// device.blas_packing: {panel_rows, panel_depth, narrow_columns,
/// small_product}, whole numbers (rt::BlasBlocking; small_product may be
/// 0: every product packs).
llvm::Error readBlasPacking(Reader &reader, const Tree *node,
                            rt::BlasBlocking &out) {
  const std::string where = "device.blas_packing";
  auto entries = reader.entries(
      node, where,
      {"panel_rows", "panel_depth", "narrow_columns", "small_product"});
  if (!entries)
    return entries.takeError();
  for (auto [key, field] : {std::pair{"panel_rows", &out.panelRows},
                            std::pair{"panel_depth", &out.panelDepth},
                            std::pair{"narrow_columns", &out.narrowColumns},
                            std::pair{"small_product", &out.smallProduct}}) {
    double value = 0;
    bool zeroOk = field == &out.smallProduct;
    if (llvm::Error e = reader.number(*entries, key, where, value,
                                      /*optional=*/false, zeroOk))
      return e;
    if (value != std::floor(value) || value > 1e15)
      return reader.error(Reader::join(where, key), "must be a whole number",
                          entries->lookup(key));
    *field = static_cast<int64_t>(value);
  }
  return llvm::Error::success();
}

/// efficiency.conv: {forward: rate, input_grad: rate, weight_grad: rate,
/// by_rows: {ROWS: {forward: rate, ...}, ...}, winograd: {forward: rate,
/// ...}} (by_rows and winograd optional), each rate over the peak
/// (ConvEfficiency).
llvm::Error readConvEfficiency(Reader &reader, const Tree *node, Cluster &c) {
  const std::string where = "efficiency.conv";
  auto rates = reader.entries(
      node, where,
      {"forward", "input_grad", "weight_grad", "by_rows", "winograd"});
  if (!rates)
    return rates.takeError();
  if (llvm::Error e =
          readConvRates(reader, *rates, where, c.convEfficiency.rates))
    return e;
  if (const Tree *winograd = rates->lookup("winograd")) {
    std::string at = Reader::join(where, "winograd");
    auto measured =
        reader.entries(winograd, at, {"forward", "input_grad", "weight_grad"});
    if (!measured)
      return measured.takeError();
    if (llvm::Error e =
            readConvRates(reader, *measured, at, c.convEfficiency.winograd))
      return e;
  }
  const Tree *byRows = rates->lookup("by_rows");
  if (!byRows)
    return llvm::Error::success();
  std::string table = where + ".by_rows";
  if (byRows->kind != Tree::Mapping || byRows->entries.empty())
    return reader.error(table,
                        "must be a mapping of output rows per call (samples "
                        "x output positions) to the three rates measured "
                        "there",
                        byRows);
  for (const auto &[key, value] : byRows->entries) {
    std::string at = Reader::join(table, key);
    int64_t rows = 0;
    if (llvm::StringRef(key).getAsInteger(10, rows) || rows <= 0)
      return reader.error(at, "must be a positive number of rows", value.get());
    auto point = reader.entries(value.get(), at,
                                {"forward", "input_grad", "weight_grad"});
    if (!point)
      return point.takeError();
    ConvRates measured;
    if (llvm::Error e = readConvRates(reader, *point, at, measured))
      return e;
    c.convEfficiency.byRows.push_back({rows, measured});
  }
  llvm::sort(c.convEfficiency.byRows,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  return llvm::Error::success();
}

llvm::Error readCollectives(Reader &reader, const Tree *node,
                            llvm::StringRef linkKey, Link &link) {
  std::string where = (linkKey + ".collectives").str();
  if (node->kind != Tree::Mapping || node->entries.empty())
    return reader.error(where,
                        "must be a mapping of group sizes to the collectives "
                        "measured on groups of that size",
                        node);
  llvm::SmallVector<llvm::StringRef, kMeasuredCollectiveCount> kinds;
  for (size_t k = 0; k < kMeasuredCollectiveCount; ++k)
    kinds.push_back(measuredCollectiveName(static_cast<MeasuredCollective>(k)));
  for (auto &[groupText, groupNode] : node->entries) {
    std::string groupWhere = Reader::join(where, groupText);
    double size = 0;
    if (llvm::StringRef(groupText).getAsDouble(size) || size < 2 ||
        size != std::floor(size) || size > 1e9)
      return reader.error(groupWhere,
                          "is not a group size: the keys here are whole "
                          "numbers of ranks, at least 2",
                          groupNode.get());
    MeasuredGroup group;
    group.groupSize = static_cast<int64_t>(size);
    if (llvm::any_of(link.collectives, [&](const MeasuredGroup &other) {
          return other.groupSize == group.groupSize;
        }))
      return reader.error(groupWhere, "is given twice", groupNode.get());
    auto entries = reader.entries(groupNode.get(), groupWhere, kinds);
    if (!entries)
      return entries.takeError();
    if (entries->empty())
      return reader.error(groupWhere,
                          "measures no collective: give all_reduce, "
                          "reduce_scatter or all_gather",
                          groupNode.get());
    for (size_t k = 0; k < kMeasuredCollectiveCount; ++k) {
      const Tree *points = entries->lookup(kinds[k]);
      if (!points)
        continue;
      std::string field = Reader::join(groupWhere, kinds[k]);
      if (points->kind != Tree::Mapping || points->entries.empty())
        return reader.error(field,
                            "must be a mapping of buffer bytes to bus "
                            "bandwidth in GB/s ({4096: 1.5, 1048576: 6})",
                            points);
      std::vector<CollectivePoint> &out = group.points[k];
      for (auto &[sizeText, value] : points->entries) {
        std::string at = Reader::join(field, sizeText);
        double bytes = 0, gbs = 0;
        if (llvm::StringRef(sizeText).getAsDouble(bytes) ||
            !std::isfinite(bytes) || bytes <= 0)
          return reader.error(at,
                              "is not a buffer size: the keys here are "
                              "bytes (> 0), the values bus bandwidths in "
                              "GB/s",
                              value.get());
        if (value->kind != Tree::Scalar ||
            llvm::StringRef(value->scalar).getAsDouble(gbs) ||
            !std::isfinite(gbs))
          return reader.error(at, "must be a number (GB/s)", value.get());
        if (gbs <= 0)
          return reader.error(at, "must be > 0, not " + value->scalar,
                              value.get());
        out.push_back({bytes, gbs});
      }
      llvm::sort(out, [](const CollectivePoint &a, const CollectivePoint &b) {
        return a.bytes < b.bytes;
      });
      for (size_t i = 1; i < out.size(); ++i)
        if (out[i].bytes == out[i - 1].bytes)
          return reader.error(
              field, llvm::formatv("gives the size {0} twice", out[i].bytes),
              points);
    }
    link.collectives.push_back(std::move(group));
  }
  llvm::sort(link.collectives,
             [](const MeasuredGroup &a, const MeasuredGroup &b) {
               return a.groupSize < b.groupSize;
             });
  return llvm::Error::success();
}

} // namespace

std::vector<std::string> clusterPresetNames() {
  std::vector<std::string> names;
  for (const Cluster &preset : presets())
    names.push_back(preset.name);
  return names;
}

llvm::Expected<Cluster> parseCluster(llvm::StringRef text,
                                     llvm::StringRef file) {
  llvm::SourceMgr sm;
  std::string diagnostic;
  sm.setDiagHandler(
      [](const llvm::SMDiagnostic &diag, void *context) {
        auto *out = static_cast<std::string *>(context);
        if (out->empty())
          *out = llvm::formatv("{0}:{1}:{2}: {3}", diag.getFilename(),
                               diag.getLineNo(), diag.getColumnNo() + 1,
                               diag.getMessage())
                     .str();
      },
      &diagnostic);
  llvm::yaml::Stream stream(llvm::MemoryBufferRef(text, file), sm);
  llvm::yaml::document_iterator doc = stream.begin();
  std::unique_ptr<Tree> root =
      readTree(doc != stream.end() ? doc->getRoot() : nullptr, sm);
  if (!diagnostic.empty())
    return fail(diagnostic);
  Reader reader(file);
  Cluster c;
  c.source = file.str();
  auto top =
      reader.entries(root.get(), "",
                     {"name", "target", "nodes", "devices_per_node", "device",
                      "intra_node", "inter_node", "efficiency"});
  if (!top)
    return top.takeError();
  if (llvm::Error e = reader.string(*top, "name", c.name))
    return std::move(e);
  if (c.name.empty())
    c.name = file.str();
  if (llvm::Error e = reader.string(*top, "target", c.target))
    return std::move(e);
  if (c.target != "cuda" && c.target != "cpu")
    return reader.error("target",
                        "must be cuda or cpu, not '" + c.target + "'");
  double nodes = 0, perNode = 0;
  if (llvm::Error e = reader.number(*top, "nodes", "", nodes, true))
    return std::move(e);
  if (llvm::Error e = reader.number(*top, "devices_per_node", "", perNode))
    return std::move(e);
  if (nodes != std::floor(nodes) || perNode != std::floor(perNode))
    return reader.error(nodes != std::floor(nodes) ? "nodes"
                                                   : "devices_per_node",
                        "must be a whole number");
  c.nodes = static_cast<int64_t>(nodes);
  c.devicesPerNode = static_cast<int64_t>(perNode);

  auto deviceNode = top->lookup("device");
  if (!deviceNode)
    return reader.error("device", "is missing");
  auto device = reader.entries(
      deviceNode, "device",
      {"memory_gib", "peak_tflops", "memory_bandwidth_gbs", "cache_mib",
       "cache_bandwidth_gbs", "llc_mib", "llc_bandwidth_gbs", "op_overhead_us",
       "hand_off_us", "comm_overlap", "threads", "kernels", "blas_packing",
       "comm_library_bytes", "onednn_primitive_bytes"});
  if (!device)
    return device.takeError();
  if (llvm::Error e =
          reader.number(*device, "memory_gib", "device", c.memoryGiB))
    return std::move(e);
  if (llvm::Error e = reader.number(*device, "memory_bandwidth_gbs", "device",
                                    c.memoryBandwidthGBs))
    return std::move(e);
  // Optional: memory-bound ops whose bytes fit the cache run at its
  // bandwidth (a cpu's L2; GPUs' ops stream from HBM).
  for (auto [key, out] : {std::pair{"cache_mib", &c.cacheMiB},
                          std::pair{"cache_bandwidth_gbs", &c.cacheBandwidthGBs},
                          std::pair{"llc_mib", &c.llcMiB},
                          std::pair{"llc_bandwidth_gbs", &c.llcBandwidthGBs}})
    if (llvm::Error e = reader.number(*device, key, "device", *out,
                                      /*optional=*/true))
      return std::move(e);
  for (auto [key, out] : {std::pair{"op_overhead_us", &c.opOverheadUs},
                          std::pair{"hand_off_us", &c.handOffUs}})
    if (llvm::Error e = reader.number(*device, key, "device", *out,
                                      /*optional=*/true, /*zeroOk=*/true))
      return std::move(e);
  double threads = 1;
  if (llvm::Error e = reader.number(*device, "threads", "device", threads,
                                    /*optional=*/true))
    return std::move(e);
  if (threads != std::floor(threads) || threads > 1024)
    return reader.error("device.threads",
                        "must be a whole number of OpenMP threads per rank "
                        "(at most 1024)",
                        device->lookup("threads"));
  c.threads = static_cast<int64_t>(threads);
  // A share, at most 1; 0 and below mean compute hides nothing.
  if (const Tree *overlap = device->lookup("comm_overlap")) {
    double value = 0;
    if (overlap->kind != Tree::Scalar ||
        llvm::StringRef(overlap->scalar).getAsDouble(value) ||
        !std::isfinite(value))
      return reader.error("device.comm_overlap", "must be a number", overlap);
    if (value > 1 || value < -10)
      return reader.error("device.comm_overlap",
                          "is the share of a started collective's time that "
                          "compute hides: at most 1 (and at least -10), not " +
                              overlap->scalar,
                          overlap);
    c.commOverlap = value;
  }
  // Optional byte counts of the libraries' own memory.
  for (auto [key, out] :
       {std::pair{"comm_library_bytes", &c.commLibraryBytes},
        std::pair{"onednn_primitive_bytes", &c.oneDnnPrimitiveBytes}}) {
    double bytes = 0;
    if (llvm::Error e = reader.number(*device, key, "device", bytes,
                                      /*optional=*/true, /*zeroOk=*/true))
      return std::move(e);
    if (bytes != std::floor(bytes) || bytes > 1e15)
      return reader.error(std::string("device.") + key,
                          "must be a whole number of bytes",
                          device->lookup(key));
    *out = static_cast<int64_t>(bytes);
  }
  if (const Tree *packing = device->lookup("blas_packing"))
    if (llvm::Error e = readBlasPacking(reader, packing, c.blasBlocking))
      return std::move(e);
  if (auto kernelsNode = device->lookup("kernels")) {
    llvm::SmallVector<llvm::StringRef, kKernelCount> names;
    for (size_t k = 0; k < kKernelCount; ++k)
      names.push_back(kernelName(static_cast<Kernel>(k)));
    auto kernels = reader.entries(kernelsNode, "device.kernels", names);
    if (!kernels)
      return kernels.takeError();
    for (size_t k = 0; k < kKernelCount; ++k) {
      auto rateNode = kernels->lookup(names[k]);
      if (!rateNode)
        continue;
      std::string where = ("device.kernels." + names[k]).str();
      auto rate = reader.entries(rateNode, where, {"row_ns", "element_ns"});
      if (!rate)
        return rate.takeError();
      if (llvm::Error e = reader.number(*rate, "row_ns", where,
                                        c.kernelRates[k].rowNs, true, true))
        return std::move(e);
      if (llvm::Error e = reader.number(*rate, "element_ns", where,
                                        c.kernelRates[k].elementNs, true, true))
        return std::move(e);
    }
  }
  if ((c.cacheMiB > 0) != (c.cacheBandwidthGBs > 0))
    return reader.error("device.cache_mib",
                        "and device.cache_bandwidth_gbs go together: give both "
                        "or neither");
  if ((c.llcMiB > 0) != (c.llcBandwidthGBs > 0))
    return reader.error("device.llc_mib",
                        "and device.llc_bandwidth_gbs go together: give both "
                        "or neither");
  if (c.llcMiB > 0 && c.llcMiB <= c.cacheMiB)
    return reader.error("device.llc_mib",
                        "must be larger than device.cache_mib (the last-level "
                        "cache holds more than the L2)");
  auto peakNode = device->lookup("peak_tflops");
  if (!peakNode)
    return reader.error("device.peak_tflops", "is missing");
  auto peak =
      reader.entries(peakNode, "device.peak_tflops", {"fp32", "tf32", "bf16"});
  if (!peak)
    return peak.takeError();
  if (llvm::Error e =
          reader.number(*peak, "fp32", "device.peak_tflops", c.peakTflopsFp32))
    return std::move(e);
  c.peakTflopsTf32 = c.peakTflopsBf16 = 0;
  for (auto [key, out] : {std::pair{"tf32", &c.peakTflopsTf32},
                          std::pair{"bf16", &c.peakTflopsBf16}})
    if (llvm::Error e = reader.number(*peak, key, "device.peak_tflops", *out,
                                      /*optional=*/true))
      return std::move(e);
  // A device without faster matrix units runs those precisions at fp32's.
  if (c.peakTflopsTf32 == 0)
    c.peakTflopsTf32 = c.peakTflopsFp32;
  if (c.peakTflopsBf16 == 0)
    c.peakTflopsBf16 = c.peakTflopsTf32;

  for (auto [key, link] : {std::pair{"intra_node", &c.intraNode},
                           std::pair{"inter_node", &c.interNode}}) {
    auto node = top->lookup(key);
    if (!node)
      return reader.error(key, "is missing");
    auto entries = reader.entries(node, key,
                                  {"bandwidth_gbs", "latency_us", "collectives"});
    if (!entries)
      return entries.takeError();
    if (llvm::Error e =
            reader.number(*entries, "bandwidth_gbs", key, link->bandwidthGBs))
      return std::move(e);
    if (llvm::Error e = reader.number(*entries, "latency_us", key,
                                      link->latencyUs, false, /*zeroOk=*/true))
      return std::move(e);
    if (const Tree *collectives = entries->lookup("collectives"))
      if (llvm::Error e = readCollectives(reader, collectives, key, *link))
        return std::move(e);
  }

  if (auto node = top->lookup("efficiency")) {
    auto entries = reader.entries(
        node, "efficiency", {"compute", "memory", "network", "gemm", "conv"});
    if (!entries)
      return entries.takeError();
    if (const Tree *gemm = entries->lookup("gemm"))
      if (llvm::Error e = readGemmEfficiency(reader, gemm, c))
        return std::move(e);
    if (const Tree *conv = entries->lookup("conv"))
      if (llvm::Error e = readConvEfficiency(reader, conv, c))
        return std::move(e);
    for (auto [key, out] : {std::pair{"compute", &c.computeEfficiency},
                            std::pair{"memory", &c.memoryEfficiency},
                            std::pair{"network", &c.networkEfficiency}}) {
      if (llvm::Error e =
              reader.number(*entries, key, "efficiency", *out, true))
        return std::move(e);
      if (*out > 1)
        return reader.error(Reader::join("efficiency", key),
                            "is a fraction of peak and must be at most 1",
                            entries->lookup(key));
    }
  }
  return c;
}

namespace {

/// `value` at `x` from points (position, value) by increasing position:
/// linear in log2 of the position between two, the nearest outside them.
template <typename Points, typename Position, typename Value>
double logInterpolate(const Points &points, double x, Position position,
                      Value value) {
  if (x <= position(points.front()))
    return value(points.front());
  for (size_t i = 1; i < points.size(); ++i) {
    double below = position(points[i - 1]), above = position(points[i]);
    if (x > above)
      continue;
    double t = std::log2(x / below) / std::log2(above / below);
    return value(points[i - 1]) +
           t * (value(points[i]) - value(points[i - 1]));
  }
  return value(points.back());
}

} // namespace

double ConvEfficiency::at(double ConvRates::*pass, double rows,
                          bool onWinograd) const {
  if (onWinograd && winograd.*pass > 0)
    return winograd.*pass;
  if (byRows.empty() || !(rows > 0))
    return rates.*pass;
  return logInterpolate(
      byRows, rows, [](const auto &point) { return double(point.first); },
      [&](const auto &point) { return point.second.*pass; });
}

double Cluster::matrixEfficiency(double m, double n, double k) const {
  if (gemmEfficiency.empty() || !(m > 0 && n > 0 && k > 0))
    return computeEfficiency;
  double smallest = std::min({m, n, k});
  bool summed = k <= std::min(m, n);
  double width = std::sqrt(m * n * k / smallest);
  auto atWidth = [&](const GemmEfficiencyAtWidth &table) {
    return logInterpolate(
        table.points, smallest,
        [](const GemmEfficiency &p) { return double(p.smallestDim); },
        [&](const GemmEfficiency &p) { return summed ? p.k : p.mn; });
  };
  return logInterpolate(
      gemmEfficiency, width,
      [](const GemmEfficiencyAtWidth &t) { return double(t.width); },
      atWidth);
}

double Cluster::bestMatrixEfficiency() const {
  const ConvRates &conv = convEfficiency.rates;
  double best = std::max(
      {computeEfficiency, conv.forward, conv.inputGrad, conv.weightGrad});
  for (const auto &[rows, rates] : convEfficiency.byRows)
    best = std::max({best, rates.forward, rates.inputGrad, rates.weightGrad});
  const ConvRates &winograd = convEfficiency.winograd;
  best = std::max(
      {best, winograd.forward, winograd.inputGrad, winograd.weightGrad});
  for (const GemmEfficiencyAtWidth &table : gemmEfficiency)
    for (const GemmEfficiency &point : table.points)
      best = std::max({best, point.mn, point.k});
  return best;
}

double Cluster::operationsPerByteSent(const Link &link, bool bf16) const {
  double peak = bf16 && peakTflopsBf16 > 0 ? peakTflopsBf16 : peakTflopsFp32;
  double bytesPerSecond = link.bandwidthGBs * 1e9 * networkEfficiency;
  if (bytesPerSecond <= 0)
    return 0;
  return peak * 1e12 * bestMatrixEfficiency() / bytesPerSecond *
         (bf16 ? 0.5 : 1.0);
}

llvm::StringRef kernelName(Kernel kernel) {
  switch (kernel) {
  case Kernel::Softmax:
    return "softmax";
  case Kernel::SoftmaxGrad:
    return "softmax_grad";
  case Kernel::LayerNorm:
    return "layer_norm";
  case Kernel::LayerNormGrad:
    return "layer_norm_grad";
  case Kernel::Dropout:
    return "dropout";
  case Kernel::BatchedMatmul:
    return "batched_matmul";
  case Kernel::MaxPool:
    return "max_pool";
  case Kernel::MaxPoolGrad:
    return "max_pool_grad";
  case Kernel::AvgPool:
    return "avg_pool";
  case Kernel::AvgPoolGrad:
    return "avg_pool_grad";
  case Kernel::BatchNorm:
    return "batch_norm";
  case Kernel::BatchNormGrad:
    return "batch_norm_grad";
  case Kernel::Im2colConv:
    return "conv_im2col";
  case Kernel::Im2colConvGradInput:
    return "conv_im2col_grad_input";
  case Kernel::Im2colConvGradWeight:
    return "conv_im2col_grad_weight";
  }
  llvm_unreachable("unknown kernel");
}

llvm::StringRef measuredCollectiveName(MeasuredCollective kind) {
  switch (kind) {
  case MeasuredCollective::AllReduce:
    return "all_reduce";
  case MeasuredCollective::ReduceScatter:
    return "reduce_scatter";
  case MeasuredCollective::AllGather:
    return "all_gather";
  }
  llvm_unreachable("unknown collective");
}

double measuredCollectiveBytesSent(MeasuredCollective kind,
                                   double bufferBytes, int64_t groupSize) {
  if (groupSize <= 1 || !(bufferBytes > 0))
    return 0;
  int g = static_cast<int>(groupSize);
  auto bytes = static_cast<int64_t>(bufferBytes);
  switch (kind) {
  case MeasuredCollective::AllReduce:
    return static_cast<double>(rt::allReduceBytesSent(bytes / 4, 4, g, 0));
  case MeasuredCollective::ReduceScatter:
    return static_cast<double>(
        rt::reduceScatterBytesSent(bytes / 4 / g, 4, g, 0));
  case MeasuredCollective::AllGather:
    return static_cast<double>(rt::allGatherBytesSent(bytes / g, g, 0));
  }
  llvm_unreachable("unknown collective");
}

std::optional<double> Link::measuredSeconds(MeasuredCollective kind,
                                            double bufferBytes,
                                            double bytesSent,
                                            int64_t groupSize) const {
  auto k = static_cast<size_t>(kind);
  // The measured group size nearest groupSize by ratio, the larger of two
  // as near.
  const MeasuredGroup *nearest = nullptr;
  double distance = 0;
  for (const MeasuredGroup &group : collectives) {
    if (group.points[k].empty())
      continue;
    double d = std::abs(std::log(double(group.groupSize) /
                                 double(std::max<int64_t>(groupSize, 1))));
    if (!nearest || d <= distance) {
      nearest = &group;
      distance = d;
    }
  }
  if (!nearest)
    return std::nullopt;
  if (!(bytesSent > 0))
    return 0.0;
  const std::vector<CollectivePoint> &points = nearest->points[k];
  int64_t measuredGroup = nearest->groupSize;
  // Above the largest size, its bus bandwidth.
  if (bufferBytes >= points.back().bytes)
    return bytesSent / (points.back().busBandwidthGBs * 1e9);
  auto secondsAt = [&](const CollectivePoint &point) {
    return measuredCollectiveBytesSent(kind, point.bytes, measuredGroup) /
           (point.busBandwidthGBs * 1e9);
  };
  // The measured groups' time at this size: the smallest size's below it
  // (a latency), linear between two sizes.
  double seconds = secondsAt(points.front());
  for (size_t i = 0; i + 1 < points.size(); ++i)
    if (bufferBytes == points[i].bytes) {
      seconds = secondsAt(points[i]);
    } else if (bufferBytes > points[i].bytes &&
               bufferBytes < points[i + 1].bytes) {
      double t0 = secondsAt(points[i]), t1 = secondsAt(points[i + 1]);
      seconds = t0 + (t1 - t0) * (bufferBytes - points[i].bytes) /
                         (points[i + 1].bytes - points[i].bytes);
    }
  double measuredSent =
      measuredCollectiveBytesSent(kind, bufferBytes, measuredGroup);
  return measuredSent > 0 ? seconds * bytesSent / measuredSent : seconds;
}

double Cluster::collectiveSeconds(const Link &link,
                                  std::optional<MeasuredCollective> kind,
                                  double bufferBytes, double bytesSent,
                                  int64_t groupSize, int64_t steps) const {
  if (kind)
    if (std::optional<double> seconds = link.measuredSeconds(
            *kind, bufferBytes, bytesSent, groupSize))
      return *seconds;
  return steps * link.latencyUs * 1e-6 +
         bytesSent / (link.bandwidthGBs * 1e9 * networkEfficiency);
}

llvm::Expected<Cluster> loadCluster(llvm::StringRef nameOrPath) {
  for (const Cluster &preset : presets())
    if (preset.name == nameOrPath)
      return preset;
  auto buffer = llvm::MemoryBuffer::getFile(nameOrPath, /*IsText=*/true);
  if (!buffer) {
    // A name without a path separator or extension was meant as a preset.
    if (!nameOrPath.contains('/') && !nameOrPath.contains('.'))
      return fail("unknown cluster preset '" + nameOrPath +
                  "'; the presets are " +
                  llvm::join(clusterPresetNames(), ", ") +
                  ", or give a YAML or JSON file");
    return fail("cannot read the cluster file '" + nameOrPath +
                "': " + buffer.getError().message());
  }
  return parseCluster((*buffer)->getBuffer(), nameOrPath);
}

} // namespace cleave::planner
