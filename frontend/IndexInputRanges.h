//===- IndexInputRanges.h - ranges of label and index inputs ----*- C++ -*-===//
//
// A class label beyond the number of classes, or a token id beyond the
// vocabulary, is a data error the training program should report when it
// loads the file, naming the sample, rather than mid-run (the cpu kernels)
// or never (the GPU kernels cannot report it). The importer records the
// range each integer input must respect.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_FRONTEND_INDEXINPUTRANGES_H
#define CLEAVE_FRONTEND_INDEXINPUTRANGES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::cleave {

/// Marks each integer input whose every element reaches a loss's labels or
/// a gather's indices (through reshapes, transposes and concats) with
/// `cleave.index_range`.
void annotateIndexInputRanges(func::FuncOp func);

} // namespace mlir::cleave

#endif // CLEAVE_FRONTEND_INDEXINPUTRANGES_H
