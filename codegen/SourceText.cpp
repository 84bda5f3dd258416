//===- SourceText.cpp - outside text made safe for generated source -------===//

#include "codegen/SourceText.h"

#include "llvm/ADT/StringExtras.h"

#include <cstdio>

namespace mlir::cleave {

std::string cppStringLiteral(llvm::StringRef text) {
  std::string literal = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c == '?') {
      literal += '\\';
      literal += static_cast<char>(c);
    } else if (llvm::isPrint(c)) {
      literal += static_cast<char>(c);
    } else {
      // Always three digits, so that a following digit cannot join it.
      char octal[5];
      std::snprintf(octal, sizeof(octal), "\\%03o", c);
      literal += octal;
    }
  }
  return literal + "\"";
}

std::string cppCommentText(llvm::StringRef text) {
  std::string safe;
  for (char c : text) {
    bool questionPair = c == '?' && !safe.empty() && safe.back() == '?';
    safe += llvm::isPrint(c) && c != '\\' && !questionPair ? c : '_';
  }
  return safe;
}

std::string cppIdentifier(llvm::StringRef name) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  size_t start = id.find_first_not_of('_');
  id = start == std::string::npos ? "" : id.substr(start);
  if (id.empty() || llvm::isDigit(id[0]))
    id = "t_" + id;
  return id;
}

} // namespace mlir::cleave
