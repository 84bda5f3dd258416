//===- IlpSolver.cpp - a mixed-integer linear program, solved by CBC ------===//

#include "planner/IlpSolver.h"

#include "Cbc_C_Interface.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

namespace cleave::planner {

int IlpProgram::addBinary(double cost) {
  costs.push_back(cost);
  lowers.push_back(0);
  uppers.push_back(1);
  integer.push_back(true);
  return static_cast<int>(costs.size()) - 1;
}

int IlpProgram::addContinuous(double lower, double upper, double cost) {
  costs.push_back(cost);
  lowers.push_back(lower);
  uppers.push_back(upper);
  integer.push_back(false);
  return static_cast<int>(costs.size()) - 1;
}

void IlpProgram::addRow(llvm::ArrayRef<IlpTerm> terms, char sense, double rhs) {
  // CBC takes a column once per row: repeated ones are summed here.
  std::map<int, double> merged;
  for (auto [column, coefficient] : terms)
    merged[column] += coefficient;
  std::vector<IlpTerm> &row = rowTerms.emplace_back();
  for (auto [column, coefficient] : merged)
    if (coefficient != 0)
      row.push_back({column, coefficient});
  rowSenses.push_back(sense);
  rowRhs.push_back(rhs);
}

IlpProgram::Solution IlpProgram::solve(int maxNodes) const {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model *)> model(Cbc_newModel(),
                                                          Cbc_deleteModel);
  // Loaded at once, column-major (adding columns and rows one by one
  // copies the matrix each time).
  size_t numColumns = costs.size(), numRows = rowTerms.size();
  std::vector<CoinBigIndex> starts(numColumns + 1, 0);
  for (const std::vector<IlpTerm> &row : rowTerms)
    for (auto [column, coefficient] : row)
      ++starts[column + 1];
  for (size_t c = 0; c < numColumns; ++c)
    starts[c + 1] += starts[c];
  std::vector<int> rowIndex(starts.back());
  std::vector<double> values(starts.back());
  std::vector<CoinBigIndex> next(starts.begin(), starts.end() - 1);
  std::vector<double> rowLower(numRows), rowUpper(numRows);
  for (size_t r = 0; r < numRows; ++r) {
    for (auto [column, coefficient] : rowTerms[r]) {
      rowIndex[next[column]] = static_cast<int>(r);
      values[next[column]++] = coefficient;
    }
    rowLower[r] = rowSenses[r] == 'L' ? -std::numeric_limits<double>::infinity()
                                      : rowRhs[r];
    rowUpper[r] = rowSenses[r] == 'G' ? std::numeric_limits<double>::infinity()
                                      : rowRhs[r];
  }
  Cbc_loadProblem(model.get(), static_cast<int>(numColumns),
                  static_cast<int>(numRows), starts.data(), rowIndex.data(),
                  values.data(), lowers.data(), uppers.data(), costs.data(),
                  rowLower.data(), rowUpper.data());
  for (size_t c = 0; c < numColumns; ++c)
    if (integer[c])
      Cbc_setInteger(model.get(), static_cast<int>(c));
  Cbc_setObjSense(model.get(), 1);
  Cbc_setLogLevel(model.get(), 0);
  // The costs are estimates (within a few percent of the cost model's):
  // an answer proven within 1% of the best is as good. Cut generation and
  // primal heuristics cost more than they save on these programs (whose
  // LP relaxation is within a few percent of the answer): on ResNet-50's
  // 9k columns 2 s instead of 15, the same answer; the start (all whole)
  // gives the search an answer to improve on.
  Cbc_setAllowableFractionGap(model.get(), 0.01);
  Cbc_setParameter(model.get(), "cuts", "off");
  Cbc_setParameter(model.get(), "heuristics", "off");
  Cbc_setMaximumNodes(model.get(), maxNodes);
  if (!startOnes.empty()) {
    std::vector<int> columns;
    std::vector<double> values;
    for (size_t c = 0; c < costs.size(); ++c)
      if (integer[c]) {
        columns.push_back(static_cast<int>(c));
        values.push_back(0);
      }
    for (int c : startOnes)
      values[std::lower_bound(columns.begin(), columns.end(), c) -
             columns.begin()] = 1;
    Cbc_setMIPStartI(model.get(), static_cast<int>(columns.size()),
                     columns.data(), values.data());
  }
  Cbc_solve(model.get());
  Solution solution;
  solution.optimal = Cbc_isProvenOptimal(model.get());
  // After the node limit the best solution found so far, if any.
  if (const double *best = Cbc_bestSolution(model.get()))
    solution.values.assign(best, best + costs.size());
  else if (solution.optimal)
    if (const double *values = Cbc_getColSolution(model.get()))
      solution.values.assign(values, values + costs.size());
  solution.feasible =
      !solution.values.empty() && !Cbc_isProvenInfeasible(model.get());
  solution.objective = Cbc_getObjValue(model.get());
  solution.nodes = Cbc_getNodeCount(model.get());
  if (solution.feasible && !solution.optimal)
    solution.gap =
        (solution.objective - Cbc_getBestPossibleObjValue(model.get())) /
        std::max(std::abs(solution.objective), 1e-9);
  solution.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return solution;
}

} // namespace cleave::planner
