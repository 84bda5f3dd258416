//===- Html.h - text and numbers for the HTML report ------------*- C++ -*-===//
//
// Every string that reaches the report from a model, a plan, a log or the
// command line goes through escape(): the page shows it as text, never as
// markup.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_REPORT_HTML_H
#define CLEAVE_REPORT_HTML_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace cleave::report {

/// `text` as HTML text or attribute value: & < > " ' escaped, control
/// characters (but tab and newline) and invalid UTF-8 shown as U+FFFD.
std::string escape(llvm::StringRef text);

/// Bytes for people: "1.50 GiB", "12.0 KiB", "100 B".
std::string bytesText(int64_t bytes);

/// A number with `digits` decimals ("%.*f"); finite numbers only.
std::string fixed(double value, int digits);

/// Milliseconds with enough digits for small and large steps.
std::string msText(double ms);

/// A color of the report's palette for `kind` (memory parts, schedule
/// spans), as "#rrggbb".
const char *colorOf(llvm::StringRef kind);

} // namespace cleave::report

#endif // CLEAVE_REPORT_HTML_H
