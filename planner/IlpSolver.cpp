//===- IlpSolver.cpp - a mixed-integer linear program, solved by CBC ------===//

#include "planner/IlpSolver.h"

#include "Cbc_C_Interface.h"

#include <chrono>
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

void IlpProgram::addRow(llvm::ArrayRef<IlpTerm> terms, char sense,
                        double rhs) {
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

IlpProgram::Solution IlpProgram::solve(double timeLimitSeconds) const {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model *)> model(Cbc_newModel(),
                                                          Cbc_deleteModel);
  for (size_t c = 0; c < costs.size(); ++c)
    Cbc_addCol(model.get(), "", lowers[c], uppers[c], costs[c],
               integer[c] ? 1 : 0, 0, nullptr, nullptr);
  std::vector<int> columns;
  std::vector<double> coefficients;
  for (size_t r = 0; r < rowTerms.size(); ++r) {
    columns.clear();
    coefficients.clear();
    for (auto [column, coefficient] : rowTerms[r]) {
      columns.push_back(column);
      coefficients.push_back(coefficient);
    }
    Cbc_addRow(model.get(), "", static_cast<int>(columns.size()),
               columns.data(), coefficients.data(), rowSenses[r], rowRhs[r]);
  }
  Cbc_setObjSense(model.get(), 1);
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setMaximumSeconds(model.get(), timeLimitSeconds);
  // The costs are estimates: an answer proven within 0.5% of the best is
  // as good, and much faster to prove on a CNN's few thousand columns.
  Cbc_setAllowableFractionGap(model.get(), 0.005);
  Cbc_solve(model.get());
  Solution solution;
  solution.optimal = Cbc_isProvenOptimal(model.get());
  // After a time limit the best solution found so far, if any.
  if (const double *best = Cbc_bestSolution(model.get()))
    solution.values.assign(best, best + costs.size());
  else if (solution.optimal)
    if (const double *values = Cbc_getColSolution(model.get()))
      solution.values.assign(values, values + costs.size());
  solution.feasible = !solution.values.empty() &&
                      !Cbc_isProvenInfeasible(model.get());
  solution.objective = Cbc_getObjValue(model.get());
  solution.seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return solution;
}

} // namespace cleave::planner
