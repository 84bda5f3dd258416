//===- CleaveAttrs.cpp - cleave dialect attributes -----------------------===//
//
// The generated attribute classes, and the syntax, verification and queries
// of #cleave.mesh and #cleave.sharding.
//
//===----------------------------------------------------------------------===//

#include "dialects/cleave/CleaveAttrs.h"
#include "dialects/cleave/CleaveDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::cleave;

#include "dialects/cleave/CleaveEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/cleave/CleaveAttrs.cpp.inc"

void CleaveDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/cleave/CleaveAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

// #cleave.mesh<dp = 2, tp = 2>
Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(StringAttr::get(parser.getContext(), name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::LessGreater,
                                     parseAxis))
    return {};
  return MeshAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), names, sizes);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::interleaveComma(llvm::zip(getAxisNames(), getAxisSizes()), printer,
                        [&](auto axis) {
                          printer.printKeywordOrString(
                              std::get<0>(axis).getValue());
                          printer << " = " << std::get<1>(axis);
                        });
  printer << ">";
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> axisNames,
                               ArrayRef<int64_t> axisSizes) {
  if (axisNames.size() != axisSizes.size())
    return emitError() << "mesh has " << axisNames.size() << " names but "
                       << axisSizes.size() << " sizes";
  llvm::SmallSet<StringRef, 4> seen;
  for (auto [name, size] : llvm::zip(axisNames, axisSizes)) {
    if (name.getValue().empty())
      return emitError() << "mesh axis names must not be empty";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis '" << name.getValue()
                         << "' appears twice";
    if (size < 1)
      return emitError() << "mesh axis '" << name.getValue()
                         << "' has size " << size << "; sizes must be >= 1";
  }
  return success();
}

int64_t MeshAttr::getAxisIndex(StringRef name) const {
  for (auto [index, axis] : llvm::enumerate(getAxisNames()))
    if (axis.getValue() == name)
      return index;
  return -1;
}

int64_t MeshAttr::getAxisSize(StringRef name) const {
  int64_t index = getAxisIndex(name);
  assert(index >= 0 && "the mesh has no such axis");
  return getAxisSizes()[index];
}

int64_t MeshAttr::getNumRanks() const {
  int64_t ranks = 1;
  for (int64_t size : getAxisSizes())
    ranks *= size;
  return ranks;
}

int64_t MeshAttr::getGroupSize(ArrayRef<StringAttr> axes) const {
  int64_t size = 1;
  for (StringAttr axis : axes) {
    int64_t index = getAxisIndex(axis.getValue());
    if (index >= 0)
      size *= getAxisSizes()[index];
  }
  return size;
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

namespace {

ArrayAttr axisListAttr(MLIRContext *context, ArrayRef<StringAttr> axes) {
  return ArrayAttr::get(context, SmallVector<Attribute>(axes.begin(),
                                                        axes.end()));
}

SmallVector<StringAttr> axisList(ArrayAttr attr) {
  return llvm::to_vector(attr.getAsRange<StringAttr>());
}

ParseResult parseAxisList(AsmParser &parser, SmallVectorImpl<StringAttr> &axes) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        std::string name;
        if (parser.parseKeywordOrString(&name))
          return failure();
        axes.push_back(StringAttr::get(parser.getContext(), name));
        return success();
      });
}

void printAxisList(AsmPrinter &printer, ArrayAttr axes) {
  printer << "[";
  llvm::interleaveComma(axes.getAsRange<StringAttr>(), printer,
                        [&](StringAttr axis) {
                          printer.printKeywordOrString(axis.getValue());
                        });
  printer << "]";
}

} // namespace

// #cleave.sharding<[[dp], []], replicated = [tp], partial = [dp]>
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *context = parser.getContext();
  SmallVector<SmallVector<StringAttr>> dims;
  SmallVector<StringAttr> replicated, partial;
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parseAxisList(parser, dims.emplace_back());
      }))
    return {};
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "replicated") {
      if (parseAxisList(parser, replicated))
        return {};
    } else if (key == "partial") {
      if (parseAxisList(parser, partial))
        return {};
    } else {
      parser.emitError(parser.getCurrentLocation())
          << "expected 'replicated' or 'partial', got '" << key << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  SmallVector<Attribute> dimAttrs;
  for (ArrayRef<StringAttr> axes : dims)
    dimAttrs.push_back(axisListAttr(context, axes));
  return ShardingAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); }, context,
      ArrayAttr::get(context, dimAttrs), axisListAttr(context, replicated),
      axisListAttr(context, partial));
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getDims().getAsRange<ArrayAttr>(), printer,
                        [&](ArrayAttr axes) { printAxisList(printer, axes); });
  printer << "]";
  if (!getReplicated().empty()) {
    printer << ", replicated = ";
    printAxisList(printer, getReplicated());
  }
  if (!getPartial().empty()) {
    printer << ", partial = ";
    printAxisList(printer, getPartial());
  }
  printer << ">";
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     ArrayAttr dims, ArrayAttr replicated, ArrayAttr partial) {
  llvm::SmallSet<StringRef, 4> seen;
  auto checkList = [&](Attribute list) -> LogicalResult {
    auto axes = dyn_cast<ArrayAttr>(list);
    if (!axes)
      return emitError() << "a sharding's axis lists must be arrays";
    for (Attribute axis : axes) {
      auto name = dyn_cast<StringAttr>(axis);
      if (!name)
        return emitError() << "mesh axes must be names";
      if (!seen.insert(name.getValue()).second)
        return emitError() << "mesh axis '" << name.getValue()
                           << "' is used twice in one sharding";
    }
    return success();
  };
  for (Attribute dim : dims)
    if (failed(checkList(dim)))
      return failure();
  if (failed(checkList(replicated)) || failed(checkList(partial)))
    return failure();
  return success();
}

SmallVector<StringAttr> ShardingAttr::getDimAxes(int64_t dim) const {
  return axisList(cast<ArrayAttr>(getDims()[dim]));
}

SmallVector<StringAttr> ShardingAttr::getPartialAxes() const {
  return axisList(getPartial());
}

SmallVector<StringAttr> ShardingAttr::getReplicatedAxes() const {
  return axisList(getReplicated());
}

ShardingAttr ShardingAttr::get(MLIRContext *context,
                               ArrayRef<SmallVector<StringAttr>> dims,
                               ArrayRef<StringAttr> replicated,
                               ArrayRef<StringAttr> partial) {
  // Most lists are empty or repeat one another: unique each distinct list
  // once (every ArrayAttr::get hashes and locks the context's uniquer, and
  // the partitioner builds shardings for every operand of every op).
  SmallVector<std::pair<ArrayRef<StringAttr>, ArrayAttr>, 4> built;
  auto listAttr = [&](ArrayRef<StringAttr> axes) {
    for (auto &[list, attr] : built)
      if (list == axes)
        return attr;
    ArrayAttr attr = axisListAttr(context, axes);
    built.emplace_back(axes, attr);
    return attr;
  };
  SmallVector<Attribute, 6> dimAttrs;
  for (ArrayRef<StringAttr> axes : dims)
    dimAttrs.push_back(listAttr(axes));
  return get(context, ArrayAttr::get(context, dimAttrs), listAttr(replicated),
             listAttr(partial));
}

ShardingAttr ShardingAttr::getReplicated(MLIRContext *context, int64_t rank) {
  return get(context, SmallVector<SmallVector<StringAttr>>(rank), {}, {});
}

bool ShardingAttr::isFullyReplicated() const {
  return getPartial().empty() &&
         llvm::all_of(getDims().getAsRange<ArrayAttr>(),
                      [](ArrayAttr axes) { return axes.empty(); });
}

std::string ShardingAttr::formatDims() const {
  std::string text = "[";
  for (auto [d, axes] : llvm::enumerate(getDims().getAsRange<ArrayAttr>())) {
    if (d)
      text += ",";
    if (axes.empty())
      text += "_";
    if (axes.size() > 1)
      text += "{";
    for (auto [i, axis] : llvm::enumerate(axes.getAsRange<StringAttr>()))
      text += (i ? "," : "") + axis.getValue().str();
    if (axes.size() > 1)
      text += "}";
  }
  return text + "]";
}

std::optional<std::string>
ShardingAttr::checkAgainst(MeshAttr mesh, ShapedType type) const {
  std::string message;
  llvm::raw_string_ostream os(message);
  auto checkKnown = [&](ArrayAttr axes) {
    for (StringAttr axis : axes.getAsRange<StringAttr>())
      if (mesh.getAxisIndex(axis.getValue()) < 0) {
        os << "mesh axis '" << axis.getValue() << "' is not an axis of the mesh (";
        llvm::interleave(
            llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()), os,
            [&](auto a) {
              os << std::get<0>(a).getValue() << "=" << std::get<1>(a);
            },
            ",");
        os << ")";
        return false;
      }
    return true;
  };
  if (static_cast<int64_t>(getDims().size()) != type.getRank()) {
    os << "the sharding lists " << getDims().size()
       << (getDims().size() == 1 ? " dimension" : " dimensions")
       << " but the tensor has rank " << type.getRank();
    return message;
  }
  if (!checkKnown(getReplicated()) || !checkKnown(getPartial()))
    return message;
  for (auto [dim, axesAttr] : llvm::enumerate(getDims())) {
    auto axes = cast<ArrayAttr>(axesAttr);
    if (!checkKnown(axes))
      return message;
    int64_t parts = mesh.getGroupSize(axisList(axes));
    if (type.getDimSize(dim) % parts != 0) {
      os << "dimension " << dim << " has size " << type.getDimSize(dim)
         << ", which does not divide into " << parts << " shards (over [";
      llvm::interleaveComma(axes.getAsRange<StringAttr>(), os,
                            [&](StringAttr axis) { os << axis.getValue(); });
      os << "])";
      return message;
    }
  }
  return std::nullopt;
}

RankedTensorType ShardingAttr::getLocalType(MeshAttr mesh,
                                            RankedTensorType type) const {
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    shape[dim] /= mesh.getGroupSize(getDimAxes(dim));
  return RankedTensorType::get(shape, type.getElementType());
}
