//===- RunRecord.cpp - what a log says about the run that wrote it --------===//

#include "runtime/RunRecord.h"

#include "runtime/Collectives.h"
#include "runtime/Sharding.h"

#include <cstdio>

namespace cleave::rt {

namespace {

/// The length of the valid UTF-8 sequence at `at`, 0 if there is none.
size_t utf8Length(const unsigned char *at) {
  int length = at[0] < 0xc2   ? 0
               : at[0] < 0xe0 ? 2
               : at[0] < 0xf0 ? 3
               : at[0] < 0xf5 ? 4
                              : 0;
  for (int i = 1; i < length; ++i)
    if ((at[i] & 0xc0) != 0x80)
      return 0;
  // Overlong forms, surrogates and code points past U+10FFFF.
  if ((at[0] == 0xe0 && at[1] < 0xa0) || (at[0] == 0xed && at[1] >= 0xa0) ||
      (at[0] == 0xf0 && at[1] < 0x90) || (at[0] == 0xf4 && at[1] >= 0x90))
    return 0;
  return length;
}

} // namespace

std::string jsonString(const char *text) {
  std::string out = "\"";
  const auto *at = reinterpret_cast<const unsigned char *>(text);
  while (at && *at) {
    unsigned char u = *at;
    if (u >= 0x80) {
      // Valid UTF-8 passes; a stray byte becomes U+FFFD (JSON is UTF-8).
      size_t length = utf8Length(at);
      if (length) {
        out.append(reinterpret_cast<const char *>(at), length);
        at += length;
      } else {
        out += "\\ufffd";
        ++at;
      }
      continue;
    }
    if (u == '"' || u == '\\') {
      out += '\\';
      out += static_cast<char>(u);
    } else if (u < 0x20 || u == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", u);
      out += escaped;
    } else {
      out += static_cast<char>(u);
    }
    ++at;
  }
  return out + "\"";
}

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
