//===- RngTest.cpp - the counter-based dropout hash -----------------------===//
//
// The vectors are those of test/reference/torch_train.py's self_check(), so
// the runtime and the Python reference agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/Rng.h"

#include <gtest/gtest.h>

#include <string>

using namespace cleave::rt;

namespace {

TEST(Rng, Splitmix64Vectors) {
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64(1), 0x910A2DEC89025CC1ull);
  EXPECT_EQ(splitmix64(0xFFFFFFFFFFFFFFFFull), 0xE4D971771B652C20ull);
}

TEST(Rng, DropoutKey) {
  EXPECT_EQ(dropoutKey(1234, 0, 0), 0x0D1825AE31E9066Dull);
}

std::string keepString(uint64_t seed, int64_t node, int64_t step) {
  std::string s;
  for (int64_t i = 0; i < 16; ++i)
    s += dropoutUniform(seed, node, step, i) >= 0.25f ? '1' : '0';
  return s;
}

TEST(Rng, DropoutMasks) {
  EXPECT_EQ(keepString(1234, 0, 0), "1011111110110111");
  EXPECT_EQ(keepString(1234, 0, 1), "1101110011110111");
  EXPECT_EQ(keepString(1234, 1, 0), "0111011111011011");
}

TEST(Rng, UniformRangeAndMean) {
  double sum = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    float u = dropoutUniform(7, 3, 11, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
}

} // namespace
