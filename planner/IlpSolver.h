//===- IlpSolver.h - a mixed-integer linear program, solved by CBC -*- C++
//-*-===//
//
// The small slice of COIN-OR CBC (Debian's coinor-libcbc-dev, through its
// C interface) the planner's intra-op ILP needs: binary and bounded
// continuous columns with objective coefficients, linear rows, a
// minimisation with a node limit. Nothing here knows about shardings.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_ILPSOLVER_H
#define CLEAVE_PLANNER_ILPSOLVER_H

#include "llvm/ADT/ArrayRef.h"

#include <utility>
#include <vector>

namespace cleave::planner {

/// A column and its coefficient in a row.
using IlpTerm = std::pair<int, double>;

class IlpProgram {
public:
  /// A 0/1 column costing `cost` when 1; returns its index.
  int addBinary(double cost);
  /// A continuous column in [lower, upper] costing `cost` per unit.
  int addContinuous(double lower, double upper, double cost);
  /// Adds `cost` to a column's objective coefficient.
  void addCost(int column, double cost) { costs[column] += cost; }
  /// sum(terms) <= rhs ('L'), >= rhs ('G') or == rhs ('E').
  void addRow(llvm::ArrayRef<IlpTerm> terms, char sense, double rhs);

  /// A 0/1 answer to start from (columns not named: 0); CBC ignores one
  /// that breaks a row.
  void setStart(std::vector<int> onesAt) { startOnes = std::move(onesAt); }

  int64_t columns() const { return static_cast<int64_t>(costs.size()); }
  int64_t rows() const { return static_cast<int64_t>(rowSenses.size()); }

  struct Solution {
    /// A solution satisfying every row was found (`optimal`: and proven
    /// within 1% of the cheapest).
    bool feasible = false, optimal = false;
    double objective = 0;
    /// How far above CBC's bound on the cheapest the answer may be
    /// (relative; 0 when proven within 1%).
    double gap = 0;
    std::vector<double> values;
    int64_t nodes = 0;
    double seconds = 0;
  };
  /// Branch-and-bound nodes CBC may explore. Most programs solve at the
  /// root (ResNet, MobileNet, DenseNet-121 on the DGX presets: 0 nodes);
  /// where comm and compute costs are close the search can run for many
  /// minutes (DenseNet-121's 35k columns on a slow 4-rank cpu cluster:
  /// over 7 minutes; 0.1-0.2 s a node), so it stops here with its best
  /// answer and the gap to the bound. A node count, not a time limit: the
  /// answer is the same on any machine, and CBC 2.10 crashes (in
  /// CglPreProcess::postProcess) when a time limit stops it before it has
  /// an answer (DenseNet-121 under a 2 s limit), where this limit comes
  /// after the root, with the all-whole start as an answer.
  static constexpr int kMaxNodes = 100;
  /// Minimises the objective to a proven 1% gap or `maxNodes` nodes; CBC
  /// prints nothing.
  Solution solve(int maxNodes = kMaxNodes) const;

private:
  std::vector<double> costs, lowers, uppers;
  std::vector<bool> integer;
  std::vector<std::vector<IlpTerm>> rowTerms;
  std::vector<char> rowSenses;
  std::vector<double> rowRhs;
  std::vector<int> startOnes;
};

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_ILPSOLVER_H
