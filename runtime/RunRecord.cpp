//===- RunRecord.cpp - what a log says about the run that wrote it --------===//

#include "runtime/RunRecord.h"

#include "runtime/Collectives.h"
#include "runtime/Sharding.h"

#include <cstdio>

namespace cleave::rt {

namespace {

/// `text` as a JSON string (quotes included).
std::string jsonString(const char *text) {
  std::string out = "\"";
  for (const char *c = text; c && *c; ++c) {
    unsigned char u = static_cast<unsigned char>(*c);
    if (u == '"' || u == '\\') {
      out += '\\';
      out += *c;
    } else if (u < 0x20 || u == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", u);
      out += escaped;
    } else {
      out += *c;
    }
  }
  return out + "\"";
}

} // namespace

std::vector<RankMemory> gatherRankMemory(const RankMemory &mine,
                                         const MeshSpec &mesh,
                                         bool distributed) {
  if (!distributed)
    return {mine};
  int64_t ranks = 1;
  for (int a = 0; a < mesh.numAxes; ++a)
    ranks *= mesh.axisSizes[a];
  std::vector<RankMemory> all(ranks);
  allGather(&mine, all.data(), sizeof(RankMemory), allAxes(mesh));
  return all;
}

std::string meshText(const MeshSpec &mesh) {
  std::string text;
  for (int a = 0; a < mesh.numAxes; ++a)
    text += (a ? "," : "") + std::string(mesh.axisNames[a]) + "=" +
            std::to_string(mesh.axisSizes[a]);
  return text;
}

std::string runRecordFields(const Program &program,
                            const std::vector<RankMemory> &ranks) {
  std::string out = ",\"run\":{\"model\":" + jsonString(program.model) +
                    ",\"mesh\":" + jsonString(meshText(program.mesh).c_str()) +
                    ",\"ranks\":" + std::to_string(ranks.size()) +
                    "},\"memory\":[";
  for (size_t r = 0; r < ranks.size(); ++r)
    out += (r ? "," : "") + std::string("{\"rank\":") + std::to_string(r) +
           ",\"parameters\":" + std::to_string(ranks[r].parameters) +
           ",\"optimizer_state\":" + std::to_string(ranks[r].optimizerState) +
           ",\"scratch\":" + std::to_string(ranks[r].scratch) + "}";
  return out + "]";
}

} // namespace cleave::rt
