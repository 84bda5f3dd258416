//===- SourceText.h - outside text made safe for generated source -*- C++ -*-===//
//
// Everything that reaches generated C++/CUDA source from outside the
// compiler (ONNX names and strings, file names, flags) passes through one
// of these functions, so that no byte of it can end a comment or a string
// literal, splice a line, or form a trigraph (`??/` is a backslash where
// trigraphs are on). The generated program never needs a path: its initial
// values are embedded under the fixed name kInitialValuesFile, which the
// compiler runs in the directory holding it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_CODEGEN_SOURCETEXT_H
#define CLEAVE_CODEGEN_SOURCETEXT_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::cleave {

/// The file the generated source embeds with `.incbin`, relative to the
/// directory the C++ compiler runs in.
inline constexpr const char *kInitialValuesFile = "cleave-initial-values.bin";

/// `text` as a C/C++ string literal with its exact bytes: printable ASCII
/// stays (but '"', '\\' and '?' are escaped), every other byte, NUL and
/// non-UTF-8 bytes included, becomes a three-digit octal escape.
std::string cppStringLiteral(llvm::StringRef text);

/// `text` fit for the inside of a `//` comment: printable ASCII but '\\',
/// and no '??' pair; every other byte becomes '_'. For readers only: it is
/// not reversible.
std::string cppCommentText(llvm::StringRef text);

/// A C identifier from an ONNX name: `/h.0/attn/MatMul` -> `h_0_attn_MatMul`
/// (letters, digits and '_', never starting with a digit or '_').
std::string cppIdentifier(llvm::StringRef name);

} // namespace mlir::cleave

#endif // CLEAVE_CODEGEN_SOURCETEXT_H
