//===- IlpSolverTest.cpp - the planner's CBC wrapper ----------------------===//

#include "planner/IlpSolver.h"

#include <gtest/gtest.h>

using cleave::planner::IlpProgram;
using cleave::planner::IlpTerm;

namespace {

// Exactly one of three choices, the cheapest feasible one wins.
TEST(IlpSolver, ExactlyOneTakesTheCheapest) {
  IlpProgram program;
  int a = program.addBinary(3), b = program.addBinary(1),
      c = program.addBinary(2);
  program.addRow({{a, 1}, {b, 1}, {c, 1}}, 'E', 1);
  program.addRow({{b, 1}}, 'L', 0); // b is forbidden
  IlpProgram::Solution s = program.solve();
  ASSERT_TRUE(s.feasible);
  EXPECT_TRUE(s.optimal);
  EXPECT_DOUBLE_EQ(s.objective, 2);
  EXPECT_NEAR(s.values[c], 1, 1e-9);
}

// A column named twice in a row counts as the sum of its coefficients
// (CBC itself takes a column once per row).
TEST(IlpSolver, RepeatedColumnsInARowAreSummed) {
  IlpProgram program;
  int x = program.addBinary(-1);
  // x - x <= 0 holds for any x: the answer is x = 1.
  program.addRow({{x, 1}, {x, -1}}, 'L', 0);
  // 0.5 x + 0.5 x <= 1: x = 1 still fits.
  program.addRow({{x, 0.5}, {x, 0.5}}, 'L', 1);
  IlpProgram::Solution s = program.solve();
  ASSERT_TRUE(s.feasible);
  EXPECT_NEAR(s.values[x], 1, 1e-9);
}

// The linearised product z >= a + b - 1 prices a pair of choices.
TEST(IlpSolver, ProductOfTwoChoices) {
  IlpProgram program;
  int a0 = program.addBinary(0), a1 = program.addBinary(1);
  int b0 = program.addBinary(0.5), b1 = program.addBinary(0);
  program.addRow({{a0, 1}, {a1, 1}}, 'E', 1);
  program.addRow({{b0, 1}, {b1, 1}}, 'E', 1);
  // Choosing a0 with b1 costs 10 more.
  int z = program.addContinuous(0, 1, 10);
  program.addRow({{z, 1}, {a0, -1}, {b1, -1}}, 'G', -1);
  program.setStart({a0, b1});
  IlpProgram::Solution s = program.solve();
  ASSERT_TRUE(s.feasible);
  EXPECT_DOUBLE_EQ(s.objective, 0.5); // a0 with b0
  EXPECT_NEAR(s.values[a0], 1, 1e-9);
  EXPECT_NEAR(s.values[b0], 1, 1e-9);
}

// A program branch and bound does not close at the root (a knapsack
// whose LP bound takes half an item) stops at the node limit with its best
// answer and the gap to the bound, the same on every run; with room for
// more nodes it proves its answer.
TEST(IlpSolver, StopsAtTheNodeLimitWithTheGap) {
  IlpProgram program;
  std::vector<IlpTerm> weights;
  for (int i = 0; i < 40; ++i)
    weights.push_back({program.addBinary(-(3 + i % 5)), 2 * (3 + i % 5)});
  program.addRow(weights, 'L', 2 * 31 + 1);
  program.setStart({0});
  IlpProgram::Solution s = program.solve(/*maxNodes=*/1);
  ASSERT_TRUE(s.feasible);
  EXPECT_FALSE(s.optimal);
  EXPECT_EQ(s.nodes, 1);
  EXPECT_GT(s.gap, 0.01);
  IlpProgram::Solution again = program.solve(1);
  EXPECT_EQ(again.objective, s.objective);
  EXPECT_EQ(again.values, s.values);
  IlpProgram::Solution proven = program.solve();
  EXPECT_TRUE(proven.optimal);
  EXPECT_EQ(proven.gap, 0.0);
  EXPECT_LE(proven.objective, s.objective);
}

TEST(IlpSolver, InfeasibleIsReported) {
  IlpProgram program;
  int x = program.addBinary(1), y = program.addBinary(1);
  program.addRow({{x, 1}, {y, 1}}, 'G', 3);
  EXPECT_FALSE(program.solve().feasible);
}

} // namespace
