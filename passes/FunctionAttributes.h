//===- FunctionAttributes.h - many argument attributes at once --*- C++ -*-===//
//
// func::FuncOp::setArgAttr rebuilds the function's whole array of argument
// dictionaries on each call, so setting an attribute on each of a training
// step's thousands of arguments that way is quadratic in the model's size.
// FunctionAttributes edits the dictionaries of every argument (or result)
// and stores them once.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PASSES_FUNCTIONATTRIBUTES_H
#define CLEAVE_PASSES_FUNCTIONATTRIBUTES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"

namespace mlir::cleave {

class FunctionAttributes {
public:
  enum Kind { Arguments, Results };

  FunctionAttributes(func::FuncOp func, Kind kind) : func(func), kind(kind) {
    unsigned count =
        kind == Arguments ? func.getNumArguments() : func.getNumResults();
    lists.reserve(count);
    for (unsigned i = 0; i < count; ++i)
      lists.emplace_back(kind == Arguments ? func.getArgAttrDict(i)
                                           : func.getResultAttrDict(i));
  }
  FunctionAttributes(const FunctionAttributes &) = delete;
  /// Stores the edited dictionaries.
  ~FunctionAttributes() {
    SmallVector<DictionaryAttr> dicts;
    dicts.reserve(lists.size());
    for (NamedAttrList &list : lists)
      dicts.push_back(list.getDictionary(func.getContext()));
    if (kind == Arguments)
      func.setAllArgAttrs(dicts);
    else
      func.setAllResultAttrs(dicts);
  }

  Attribute get(unsigned index, StringRef name) const {
    return lists[index].get(name);
  }
  void set(unsigned index, StringRef name, Attribute value) {
    lists[index].set(name, value);
  }
  void remove(unsigned index, StringRef name) { lists[index].erase(name); }

private:
  func::FuncOp func;
  Kind kind;
  SmallVector<NamedAttrList> lists;
};

} // namespace mlir::cleave

#endif // CLEAVE_PASSES_FUNCTIONATTRIBUTES_H
