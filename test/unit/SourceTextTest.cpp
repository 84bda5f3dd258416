//===- SourceTextTest.cpp - outside text in generated source --------------===//
//
// codegen/SourceText.h against the C++ standard's reading of what it emits:
// every string literal decodes back to exactly the bytes it was made from
// (all 256 byte values, and the hostile strings of issue 16), and comment
// text can neither end its line nor splice the next one.
//
//===----------------------------------------------------------------------===//

#include "codegen/SourceText.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir::cleave;

namespace {

/// The bytes a C++ compiler reads from `literal` (escapes as [lex.ccon]:
/// simple escapes and one to three octal digits); fails the test on
/// anything else, such as a raw newline or an unescaped quote.
std::string decode(const std::string &literal) {
  EXPECT_GE(literal.size(), 2u);
  EXPECT_EQ(literal.front(), '"');
  EXPECT_EQ(literal.back(), '"');
  std::string bytes;
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    char c = literal[i];
    EXPECT_TRUE(c >= 0x20 && c < 0x7F) << "raw byte " << int(c);
    EXPECT_NE(c, '"') << "unescaped quote in " << literal;
    if (c == '?')
      ADD_FAILURE() << "unescaped '?' (a trigraph could form) in " << literal;
    if (c != '\\') {
      bytes += c;
      continue;
    }
    char next = literal[++i];
    if (next >= '0' && next <= '7') {
      int value = 0, digits = 0;
      while (digits < 3 && i < literal.size() - 1 && literal[i] >= '0' &&
             literal[i] <= '7') {
        value = value * 8 + (literal[i++] - '0');
        ++digits;
      }
      --i;
      bytes += static_cast<char>(value);
    } else if (next == '"' || next == '\\' || next == '?') {
      bytes += next;
    } else {
      ADD_FAILURE() << "unexpected escape \\" << next;
    }
  }
  return bytes;
}

const std::string kHostile[] = {
    "w\"eight\\",
    "line\nbreak\r\n",
    "*/ /* // comment",
    "?\?/ ?\?= ?\?( trigraphs", // "??/ ??= ??(" spelled without forming them
    std::string("nul\0inside", 10),
    "\xff\xfe non-UTF-8 \xc3\x28",
    "\\\n",
    "ends in a backslash\\",
    "\"); system(\"touch pwned\"); //",
};

TEST(SourceText, EveryByteRoundTrips) {
  std::string all;
  for (int c = 0; c < 256; ++c)
    all += static_cast<char>(c);
  EXPECT_EQ(decode(cppStringLiteral(all)), all);
  // An octal escape followed by a digit stays three digits long.
  EXPECT_EQ(decode(cppStringLiteral(std::string("\x01" "7", 2))),
            std::string("\x01" "7", 2));
}

TEST(SourceText, HostileStringsRoundTrip) {
  for (const std::string &text : kHostile)
    EXPECT_EQ(decode(cppStringLiteral(text)), text);
}

TEST(SourceText, CommentTextStaysOnItsLine) {
  for (const std::string &text : kHostile) {
    std::string comment = cppCommentText(text);
    EXPECT_EQ(comment.size(), text.size());
    for (char c : comment)
      EXPECT_TRUE(c >= 0x20 && c < 0x7F && c != '\\') << text;
    EXPECT_EQ(comment.find("??"), std::string::npos) << text;
  }
  EXPECT_EQ(cppCommentText("gemm \"1\"\\"), "gemm \"1\"_");
}

TEST(SourceText, Identifiers) {
  EXPECT_EQ(cppIdentifier("/h.0/attn/MatMul"), "h_0_attn_MatMul");
  EXPECT_EQ(cppIdentifier("0abc"), "t_0abc");
  EXPECT_EQ(cppIdentifier("\n\"*/"), "t_");
}

} // namespace
