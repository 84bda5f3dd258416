//===- Html.cpp - text and numbers for the HTML report --------------------===//

#include "report/Html.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ConvertUTF.h"

#include <cmath>
#include <cstdio>

namespace cleave::report {

std::string escape(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  const char *replacement = "\xEF\xBF\xBD"; // U+FFFD
  for (size_t i = 0; i < text.size();) {
    unsigned char c = text[i];
    if (c >= 0x80) {
      // A whole, valid UTF-8 sequence passes; anything else is replaced.
      unsigned length = llvm::getNumBytesForUTF8(c);
      const llvm::UTF8 *start =
          reinterpret_cast<const llvm::UTF8 *>(text.data() + i);
      if (i + length <= text.size() &&
          llvm::isLegalUTF8Sequence(start, start + length)) {
        out.append(text.data() + i, length);
        i += length;
      } else {
        out += replacement;
        ++i;
      }
      continue;
    }
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    case '\t':
    case '\n':
      out += static_cast<char>(c);
      break;
    default:
      if (c < 0x20 || c == 0x7f)
        out += replacement;
      else
        out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string bytesText(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (std::fabs(value) >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[48];
  if (unit == 0)
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(text, sizeof(text),
                  std::fabs(value) < 100 ? "%.2f %s" : "%.1f %s", value,
                  units[unit]);
  return text;
}

std::string fixed(double value, int digits) {
  if (!std::isfinite(value))
    return "n/a";
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string msText(double ms) {
  return fixed(ms, ms < 0.1 ? 4 : ms < 10 ? 3 : 1);
}

const char *colorOf(llvm::StringRef kind) {
  return llvm::StringSwitch<const char *>(kind)
      .Case("parameters", "#4e79a7")
      .Case("gradients", "#f28e2b")
      .Case("optimizer_state", "#59a14f")
      .Case("activations", "#e15759")
      .Case("workspace", "#9c755f")
      .Case("scratch", "#e15759")
      .Case("forward", "#4e79a7")
      .Case("backward", "#f28e2b")
      .Case("forward+backward", "#76b7b2")
      .Case("update", "#59a14f")
      .Case("other", "#bab0ac")
      .Case("send_recv", "#b07aa1")
      .Default("#edc948");
}

} // namespace cleave::report
