//===- ShapeArithmetic.cpp - fold ONNX shape computations -----------------===//

#include "frontend/ShapeArithmetic.h"

#include <cctype>
#include <map>
#include <set>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

using onnx::TensorProto;

namespace cleave::frontend {

namespace {

/// Tensors above this size are not shape arithmetic; leave them to codegen.
constexpr int64_t kMaxFoldedElements = 1 << 16;

int64_t numElements(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                     const char *name) {
  for (const auto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t intAttr(const onnx::NodeProto &node, const char *name,
                int64_t fallback) {
  const auto *attr = findAttr(node, name);
  return attr ? attr->i() : fallback;
}

/// Normalizes a possibly negative axis; nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  return axis;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::optional<std::vector<int64_t>>
broadcastShapes(const std::vector<std::vector<int64_t>> &shapes) {
  size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &d = out[rank - s.size() + i];
      if (s[i] == d || s[i] == 1)
        continue;
      if (d != 1)
        return std::nullopt;
      d = s[i];
    }
  return out;
}

/// Reads `tensor` at the multi-index `index` of a broadcast result shape.
int64_t broadcastRead(const IntTensor &tensor, const std::vector<int64_t> &index) {
  size_t offset = index.size() - tensor.shape.size();
  std::vector<int64_t> strides = stridesOf(tensor.shape);
  int64_t flat = 0;
  for (size_t i = 0; i < tensor.shape.size(); ++i)
    if (tensor.shape[i] != 1)
      flat += index[offset + i] * strides[i];
  return tensor.values[flat];
}

/// Applies `fn` elementwise over numpy-broadcast operands.
std::optional<IntTensor>
broadcastMap(const std::vector<const IntTensor *> &operands, int32_t dataType,
             const std::function<std::optional<int64_t>(
                 const std::vector<int64_t> &)> &fn) {
  std::vector<std::vector<int64_t>> shapes;
  for (const IntTensor *t : operands)
    shapes.push_back(t->shape);
  auto shape = broadcastShapes(shapes);
  if (!shape || numElements(*shape) > kMaxFoldedElements)
    return std::nullopt;
  IntTensor result{*shape, {}, dataType};
  std::vector<int64_t> strides = stridesOf(*shape);
  int64_t count = numElements(*shape);
  std::vector<int64_t> index(shape->size()), args(operands.size());
  for (int64_t flat = 0; flat < count; ++flat) {
    for (size_t d = 0; d < shape->size(); ++d)
      index[d] = (flat / strides[d]) % (*shape)[d];
    for (size_t i = 0; i < operands.size(); ++i)
      args[i] = broadcastRead(*operands[i], index);
    auto value = fn(args);
    if (!value)
      return std::nullopt;
    result.values.push_back(*value);
  }
  return result;
}

std::optional<IntTensor> evalBinary(const std::string &op, const IntTensor &a,
                                    const IntTensor &b) {
  bool compare = op == "Equal" || op == "Less" || op == "Greater" ||
                 op == "LessOrEqual" || op == "GreaterOrEqual" ||
                 op == "And" || op == "Or";
  int32_t type = compare ? TensorProto::BOOL : a.dataType;
  return broadcastMap({&a, &b}, type,
                      [&](const std::vector<int64_t> &v)
                          -> std::optional<int64_t> {
                        int64_t x = v[0], y = v[1];
                        // Overflow (INT64_MIN / -1 included) leaves the
                        // node unfolded, for the importer to report.
                        int64_t r;
                        if (op == "Add")
                          return __builtin_add_overflow(x, y, &r)
                                     ? std::nullopt
                                     : std::optional<int64_t>(r);
                        if (op == "Sub")
                          return __builtin_sub_overflow(x, y, &r)
                                     ? std::nullopt
                                     : std::optional<int64_t>(r);
                        if (op == "Mul")
                          return __builtin_mul_overflow(x, y, &r)
                                     ? std::nullopt
                                     : std::optional<int64_t>(r);
                        if ((op == "Div" || op == "Mod") && y == -1 &&
                            x == std::numeric_limits<int64_t>::min())
                          return std::nullopt;
                        if (op == "Div") {
                          if (y == 0)
                            return std::nullopt;
                          // ONNX integer Div truncates like C++.
                          return x / y;
                        }
                        if (op == "Mod") {
                          if (y == 0)
                            return std::nullopt;
                          // Integer Mod (fmod 0) takes the divisor's sign.
                          int64_t r = x % y;
                          return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
                        }
                        if (op == "Max")
                          return std::max(x, y);
                        if (op == "Min")
                          return std::min(x, y);
                        if (op == "Equal")
                          return x == y;
                        if (op == "Less")
                          return x < y;
                        if (op == "LessOrEqual")
                          return x <= y;
                        if (op == "GreaterOrEqual")
                          return x >= y;
                        if (op == "And")
                          return x && y;
                        if (op == "Or")
                          return x || y;
                        return x > y;
                      });
}

std::optional<IntTensor> evalGather(const onnx::NodeProto &node,
                                    const IntTensor &data,
                                    const IntTensor &indices) {
  auto axis = normalizeAxis(intAttr(node, "axis", 0), data.shape.size());
  if (!axis)
    return std::nullopt;
  IntTensor result{{}, {}, data.dataType};
  result.shape.assign(data.shape.begin(), data.shape.begin() + *axis);
  result.shape.insert(result.shape.end(), indices.shape.begin(),
                      indices.shape.end());
  result.shape.insert(result.shape.end(), data.shape.begin() + *axis + 1,
                      data.shape.end());
  int64_t outer = numElements({data.shape.begin(), data.shape.begin() + *axis});
  int64_t inner =
      numElements({data.shape.begin() + *axis + 1, data.shape.end()});
  int64_t extent = data.shape[*axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : indices.values) {
      if (index < 0)
        index += extent;
      if (index < 0 || index >= extent)
        return std::nullopt;
      for (int64_t i = 0; i < inner; ++i)
        result.values.push_back(data.values[(o * extent + index) * inner + i]);
    }
  return result;
}

std::optional<IntTensor> evalConcat(const onnx::NodeProto &node,
                                    const std::vector<const IntTensor *> &in) {
  if (in.empty())
    return std::nullopt;
  const IntTensor &first = *in.front();
  auto axis = normalizeAxis(intAttr(node, "axis", 0), first.shape.size());
  if (!axis)
    return std::nullopt;
  IntTensor result{first.shape, {}, first.dataType};
  result.shape[*axis] = 0;
  for (const IntTensor *t : in) {
    if (t->shape.size() != first.shape.size())
      return std::nullopt;
    result.shape[*axis] += t->shape[*axis];
  }
  int64_t outer =
      numElements({first.shape.begin(), first.shape.begin() + *axis});
  for (int64_t o = 0; o < outer; ++o)
    for (const IntTensor *t : in) {
      int64_t chunk =
          numElements({t->shape.begin() + *axis, t->shape.end()});
      result.values.insert(result.values.end(),
                           t->values.begin() + o * chunk,
                           t->values.begin() + (o + 1) * chunk);
    }
  return result;
}

/// Slice of a 1-d tensor (the only form shape arithmetic uses).
std::optional<IntTensor> evalSlice(const std::vector<const IntTensor *> &in) {
  const IntTensor &data = *in[0];
  if (data.shape.size() != 1 || !in[1] || !in[2])
    return std::nullopt;
  if (in.size() > 3 && in[3] &&
      !(in[3]->values.size() == 1 &&
        (in[3]->values[0] == 0 || in[3]->values[0] == -1)))
    return std::nullopt;
  int64_t size = data.shape[0];
  int64_t start = in[1]->values.at(0), end = in[2]->values.at(0);
  int64_t step = in.size() > 4 && in[4] ? in[4]->values.at(0) : 1;
  if (step == 0)
    return std::nullopt;
  auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0)
      v += size;
    return std::clamp(v, lo, hi);
  };
  IntTensor result{{0}, {}, data.dataType};
  if (step > 0) {
    start = clamp(start, 0, size);
    end = clamp(end, 0, size);
    for (int64_t i = start; i < end; i += step)
      result.values.push_back(data.values[i]);
  } else {
    start = clamp(start, -1, size - 1);
    end = clamp(end, -1, size - 1);
    for (int64_t i = start; i > end; i += step)
      result.values.push_back(data.values[i]);
  }
  result.shape[0] = result.values.size();
  return result;
}

} // namespace

std::optional<IntTensor> readIntTensor(const TensorProto &proto) {
  int32_t type = proto.data_type();
  if (type != TensorProto::INT64 && type != TensorProto::INT32 &&
      type != TensorProto::BOOL && type != TensorProto::FLOAT)
    return std::nullopt;
  if (proto.data_location() == TensorProto::EXTERNAL)
    return std::nullopt;
  IntTensor tensor{{proto.dims().begin(), proto.dims().end()}, {}, type};
  int64_t count = numElements(tensor.shape);
  if (count > kMaxFoldedElements)
    return std::nullopt;
  if (proto.has_raw_data()) {
    const std::string &raw = proto.raw_data();
    size_t width = type == TensorProto::INT64 ? 8
                   : type == TensorProto::INT32 || type == TensorProto::FLOAT
                       ? 4
                       : 1;
    if (raw.size() != count * width)
      return std::nullopt;
    for (int64_t i = 0; i < count; ++i) {
      const char *p = raw.data() + i * width;
      if (width == 8) {
        int64_t v;
        std::memcpy(&v, p, 8);
        tensor.values.push_back(v);
      } else if (type == TensorProto::FLOAT) {
        uint32_t bits;
        std::memcpy(&bits, p, 4);
        tensor.values.push_back(bits);
      } else if (width == 4) {
        int32_t v;
        std::memcpy(&v, p, 4);
        tensor.values.push_back(v);
      } else {
        tensor.values.push_back(*p != 0);
      }
    }
  } else if (type == TensorProto::FLOAT) {
    for (float f : proto.float_data()) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      tensor.values.push_back(bits);
    }
  } else if (type == TensorProto::INT64) {
    tensor.values.assign(proto.int64_data().begin(), proto.int64_data().end());
  } else {
    tensor.values.assign(proto.int32_data().begin(), proto.int32_data().end());
  }
  if (static_cast<int64_t>(tensor.values.size()) != count)
    return std::nullopt;
  return tensor;
}

TensorProto writeIntTensor(const IntTensor &tensor, const std::string &name) {
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(tensor.dataType);
  for (int64_t d : tensor.shape)
    proto.add_dims(d);
  for (int64_t v : tensor.values) {
    if (tensor.dataType == TensorProto::FLOAT) {
      auto bits = static_cast<uint32_t>(v);
      float f;
      std::memcpy(&f, &bits, 4);
      proto.add_float_data(f);
    } else if (tensor.dataType == TensorProto::INT64)
      proto.add_int64_data(v);
    else
      proto.add_int32_data(static_cast<int32_t>(v));
  }
  return proto;
}

std::optional<std::vector<IntTensor>>
evaluateShapeNode(const onnx::NodeProto &node,
                  const std::vector<const IntTensor *> &inputs) {
  const std::string &op = node.op_type();
  auto input = [&](size_t i) -> const IntTensor * {
    return i < inputs.size() ? inputs[i] : nullptr;
  };
  auto single = [](std::optional<IntTensor> t)
      -> std::optional<std::vector<IntTensor>> {
    if (!t)
      return std::nullopt;
    return std::vector<IntTensor>{std::move(*t)};
  };
  // Every input this evaluator uses must be known; only Slice, Squeeze and
  // ConstantOfShape have optional ones.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i] && !(op == "Slice" && i >= 3) &&
        !(op == "Squeeze" && i == 1) && !(op == "ConstantOfShape"))
      return std::nullopt;
  // Float constants (held as bit patterns) only move: no arithmetic, no
  // comparison, no cast.
  static const std::set<std::string> kMovesData = {
      "Identity", "Concat", "Gather",  "Slice", "Squeeze",
      "Unsqueeze", "Reshape", "Expand", "Where"};
  for (const IntTensor *in : inputs)
    if (in && in->dataType == TensorProto::FLOAT && !kMovesData.count(op))
      return std::nullopt;
  if (op == "Where" && inputs.size() == 3 && inputs[0] &&
      inputs[0]->dataType == TensorProto::FLOAT)
    return std::nullopt;

  if (op == "Identity")
    return single(*input(0));
  if (op == "Cast") {
    int64_t to = intAttr(node, "to", 0);
    if (to != TensorProto::INT64 && to != TensorProto::INT32 &&
        to != TensorProto::BOOL)
      return std::nullopt;
    IntTensor t = *input(0);
    t.dataType = static_cast<int32_t>(to);
    if (to == TensorProto::BOOL)
      for (int64_t &v : t.values)
        v = v != 0;
    return single(t);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    const IntTensor &data = *input(0);
    std::vector<int64_t> axes;
    if (input(1))
      axes = input(1)->values;
    IntTensor t = data;
    if (op == "Unsqueeze") {
      int64_t rank = data.shape.size() + axes.size();
      for (int64_t &a : axes)
        a = a < 0 ? a + rank : a;
      std::sort(axes.begin(), axes.end());
      for (int64_t a : axes) {
        if (a < 0 || a > static_cast<int64_t>(t.shape.size()))
          return std::nullopt;
        t.shape.insert(t.shape.begin() + a, 1);
      }
    } else {
      std::vector<int64_t> kept;
      for (size_t d = 0; d < data.shape.size(); ++d) {
        bool drop = axes.empty() ? data.shape[d] == 1
                                 : std::count_if(axes.begin(), axes.end(),
                                                 [&](int64_t a) {
                                                   return (a < 0 ? a + static_cast<int64_t>(data.shape.size()) : a) ==
                                                          static_cast<int64_t>(d);
                                                 }) > 0;
        if (!drop)
          kept.push_back(data.shape[d]);
      }
      t.shape = kept;
    }
    return single(t);
  }
  if (op == "Concat")
    return single(evalConcat(node, inputs));
  if (op == "Gather")
    return single(evalGather(node, *input(0), *input(1)));
  if (op == "Slice")
    return single(evalSlice(inputs));
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
      op == "Mod" || op == "Equal" || op == "Less" || op == "Greater" ||
      op == "LessOrEqual" || op == "GreaterOrEqual" || op == "And" ||
      op == "Or") {
    if (op == "Mod" && intAttr(node, "fmod", 0))
      return std::nullopt;
    return single(evalBinary(op, *input(0), *input(1)));
  }
  if ((op == "Max" || op == "Min") && !inputs.empty()) {
    std::optional<IntTensor> acc = *input(0);
    for (size_t i = 1; i < inputs.size() && acc; ++i)
      acc = evalBinary(op, *acc, *input(i));
    return single(std::move(acc));
  }
  if (op == "Neg" || op == "Abs" || op == "Not" || op == "Sign")
    return single(broadcastMap(
        {input(0)}, input(0)->dataType,
        [&](const std::vector<int64_t> &v) -> std::optional<int64_t> {
          if ((op == "Neg" || op == "Abs") &&
              v[0] == std::numeric_limits<int64_t>::min())
            return std::nullopt;
          if (op == "Neg")
            return -v[0];
          if (op == "Abs")
            return v[0] < 0 ? -v[0] : v[0];
          if (op == "Not")
            return !v[0];
          return (v[0] > 0) - (v[0] < 0);
        }));
  if (op == "Where")
    return single(broadcastMap(
        {input(0), input(1), input(2)}, input(1)->dataType,
        [](const std::vector<int64_t> &v) -> std::optional<int64_t> {
          return v[0] ? v[1] : v[2];
        }));
  if (op == "Reshape") {
    IntTensor t = *input(0);
    std::vector<int64_t> shape = input(1)->values;
    int64_t known = 1, inferred = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !intAttr(node, "allowzero", 0))
        shape[i] = i < t.shape.size() ? t.shape[i] : 1;
      if (shape[i] == -1)
        inferred = i;
      else
        known *= shape[i];
    }
    if (inferred >= 0 && known != 0)
      shape[inferred] = t.values.size() / known;
    if (numElements(shape) != static_cast<int64_t>(t.values.size()))
      return std::nullopt;
    t.shape = shape;
    return single(t);
  }
  if (op == "Expand") {
    // Broadcast the data against zeros of the requested shape.
    auto shape = broadcastShapes({input(0)->shape, input(1)->values});
    if (!shape || numElements(*shape) > kMaxFoldedElements)
      return std::nullopt;
    IntTensor zeros{*shape, std::vector<int64_t>(numElements(*shape), 0),
                    input(0)->dataType};
    return single(broadcastMap(
        {input(0), &zeros}, input(0)->dataType,
        [](const std::vector<int64_t> &v) -> std::optional<int64_t> {
          return v[0];
        }));
  }
  if (op == "ConstantOfShape") {
    if (!input(0))
      return std::nullopt;
    IntTensor t{input(0)->values, {}, TensorProto::FLOAT};
    int64_t fill = 0;
    if (const auto *value = findAttr(node, "value")) {
      // A float fill imports as a splat (cheaper than a folded array).
      auto v = readIntTensor(value->t());
      if (!v || v->values.size() != 1 || v->dataType == TensorProto::FLOAT)
        return std::nullopt;
      fill = v->values[0];
      t.dataType = v->dataType;
    } else {
      return std::nullopt; // the default is a float zero: not shape arithmetic
    }
    int64_t count = numElements(t.shape);
    if (count > kMaxFoldedElements)
      return std::nullopt;
    t.values.assign(count, fill);
    return single(t);
  }
  if (op == "Range") {
    int64_t start = input(0)->values.at(0), limit = input(1)->values.at(0),
            delta = input(2)->values.at(0);
    if (delta == 0)
      return std::nullopt;
    IntTensor t{{0}, {}, input(0)->dataType};
    for (int64_t v = start; delta > 0 ? v < limit : v > limit; v += delta) {
      t.values.push_back(v);
      if (static_cast<int64_t>(t.values.size()) > kMaxFoldedElements)
        return std::nullopt;
    }
    t.shape[0] = t.values.size();
    return single(t);
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>>
einsumResultShape(const std::string &equation,
                  const std::vector<std::vector<int64_t>> &inputs) {
  std::string text;
  for (char c : equation)
    if (c != ' ')
      text += c;
  size_t arrow = text.find("->");
  std::string lhs = text.substr(0, arrow);
  std::vector<std::string> terms{""};
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  if (terms.size() != inputs.size())
    return std::nullopt;
  std::map<char, int64_t> sizes;
  std::map<char, int> uses;
  std::vector<int64_t> ellipsis;
  auto broadcast = [](int64_t &into, int64_t dim) {
    if (into == 1 || into == dim)
      into = dim;
    else if (dim != 1)
      return false;
    return true;
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string &term = terms[i];
    size_t dots = term.find("...");
    size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
    if (inputs[i].size() < letters)
      return std::nullopt;
    size_t extra = inputs[i].size() - letters;
    if (dots == std::string::npos && extra != 0)
      return std::nullopt;
    // Ellipsis dims broadcast, aligned from the right.
    if (extra > ellipsis.size())
      ellipsis.insert(ellipsis.begin(), extra - ellipsis.size(), 1);
    size_t dim = 0;
    for (size_t k = 0; k < term.size(); ++k) {
      if (dots != std::string::npos && k == dots) {
        for (size_t e = 0; e < extra; ++e)
          if (!broadcast(ellipsis[ellipsis.size() - extra + e],
                         inputs[i][dim + e]))
            return std::nullopt;
        dim += extra;
        k += 2;
        continue;
      }
      char c = term[k];
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return std::nullopt;
      auto [it, fresh] = sizes.try_emplace(c, inputs[i][dim]);
      if (!fresh && !broadcast(it->second, inputs[i][dim]))
        return std::nullopt;
      ++uses[c];
      ++dim;
    }
  }
  std::vector<int64_t> result;
  std::string output;
  if (arrow != std::string::npos) {
    output = text.substr(arrow + 2);
  } else {
    output = "...";
    for (auto [c, n] : uses)
      if (n == 1)
        output += c;
  }
  for (size_t k = 0; k < output.size(); ++k) {
    if (output.compare(k, 3, "...") == 0) {
      result.insert(result.end(), ellipsis.begin(), ellipsis.end());
      k += 2;
      continue;
    }
    auto it = sizes.find(output[k]);
    if (it == sizes.end())
      return std::nullopt;
    result.push_back(it->second);
  }
  return result;
}

} // namespace cleave::frontend
