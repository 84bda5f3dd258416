//===- ShapeArithmeticTest.cpp - folding of ONNX shape computations -------===//

#include "frontend/ShapeArithmetic.h"

#include <gtest/gtest.h>

using cleave::frontend::evaluateShapeNode;
using cleave::frontend::IntTensor;
using cleave::frontend::readIntTensor;
using cleave::frontend::writeIntTensor;

namespace {

onnx::NodeProto makeNode(const std::string &op, int64_t axis = 0,
                         bool withAxis = false) {
  onnx::NodeProto node;
  node.set_op_type(op);
  if (withAxis) {
    auto *attr = node.add_attribute();
    attr->set_name("axis");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(axis);
  }
  return node;
}

IntTensor vec(std::vector<int64_t> values) {
  return IntTensor{{static_cast<int64_t>(values.size())}, values};
}

IntTensor scalar(int64_t value) { return IntTensor{{}, {value}}; }

TEST(ShapeArithmetic, ReadWriteRoundTrip) {
  IntTensor t{{2, 2}, {1, -2, 3, 4}};
  auto back = readIntTensor(writeIntTensor(t, "t"));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->shape, t.shape);
  EXPECT_EQ(back->values, t.values);
}

TEST(ShapeArithmetic, ReadsRawInt32) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::INT32);
  proto.add_dims(2);
  int32_t raw[2] = {7, -1};
  proto.set_raw_data(reinterpret_cast<const char *>(raw), sizeof(raw));
  auto t = readIntTensor(proto);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->values, (std::vector<int64_t>{7, -1}));
}

TEST(ShapeArithmetic, RefusesFloatsAndTruncatedData) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT);
  EXPECT_FALSE(readIntTensor(proto));
  proto.set_data_type(onnx::TensorProto::INT64);
  proto.add_dims(3);
  proto.set_raw_data(std::string(8, '\0'));
  EXPECT_FALSE(readIntTensor(proto));
}

TEST(ShapeArithmetic, GatherOfShape) {
  IntTensor shape = vec({2, 16, 64});
  IntTensor index = scalar(1);
  auto out = evaluateShapeNode(makeNode("Gather"), {&shape, &index});
  ASSERT_TRUE(out);
  EXPECT_TRUE((*out)[0].shape.empty());
  EXPECT_EQ((*out)[0].values, std::vector<int64_t>{16});
  IntTensor negative = scalar(-1);
  out = evaluateShapeNode(makeNode("Gather"), {&shape, &negative});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)[0].values, std::vector<int64_t>{64});
  IntTensor outOfRange = scalar(3);
  EXPECT_FALSE(evaluateShapeNode(makeNode("Gather"), {&shape, &outOfRange}));
}

TEST(ShapeArithmetic, UnsqueezeConcatIntoReshapeShape) {
  IntTensor b = scalar(2), axes = vec({0});
  auto ub = evaluateShapeNode(makeNode("Unsqueeze"), {&b, &axes});
  ASSERT_TRUE(ub);
  EXPECT_EQ((*ub)[0].shape, std::vector<int64_t>{1});
  IntTensor minusOne = vec({-1});
  auto cat = evaluateShapeNode(makeNode("Concat", 0, true),
                               {&(*ub)[0], &minusOne});
  ASSERT_TRUE(cat);
  EXPECT_EQ((*cat)[0].values, (std::vector<int64_t>{2, -1}));
}

TEST(ShapeArithmetic, BroadcastingArithmetic) {
  IntTensor a = vec({2, 3, 4}), two = scalar(2);
  auto mul = evaluateShapeNode(makeNode("Mul"), {&a, &two});
  ASSERT_TRUE(mul);
  EXPECT_EQ((*mul)[0].values, (std::vector<int64_t>{4, 6, 8}));
  IntTensor minusSeven = scalar(-7);
  auto div = evaluateShapeNode(makeNode("Div"), {&minusSeven, &two});
  ASSERT_TRUE(div);
  EXPECT_EQ((*div)[0].values, std::vector<int64_t>{-3}); // truncates like C
  IntTensor zero = scalar(0);
  EXPECT_FALSE(evaluateShapeNode(makeNode("Div"), {&a, &zero}));
  IntTensor wrong = vec({1, 2});
  EXPECT_FALSE(evaluateShapeNode(makeNode("Add"), {&a, &wrong}));
}

TEST(ShapeArithmetic, SliceClampsAndStepsBackwards) {
  IntTensor data = vec({10, 20, 30, 40});
  IntTensor start = vec({-3}), end = vec({100});
  auto out = evaluateShapeNode(makeNode("Slice"), {&data, &start, &end});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)[0].values, (std::vector<int64_t>{20, 30, 40}));
  IntTensor rStart = vec({-1}), rEnd = vec({-100}), axes = vec({0}),
            steps = vec({-2});
  out = evaluateShapeNode(makeNode("Slice"),
                          {&data, &rStart, &rEnd, &axes, &steps});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)[0].values, (std::vector<int64_t>{40, 20}));
}

TEST(ShapeArithmetic, ReshapeWithInferredDim) {
  IntTensor data{{2, 3}, {1, 2, 3, 4, 5, 6}};
  IntTensor shape = vec({3, -1});
  auto out = evaluateShapeNode(makeNode("Reshape"), {&data, &shape});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{3, 2}));
  IntTensor bad = vec({4, -1});
  EXPECT_FALSE(evaluateShapeNode(makeNode("Reshape"), {&data, &bad}));
}

TEST(ShapeArithmetic, UnknownOpsAndMissingInputsAreNotFolded) {
  IntTensor a = vec({1});
  EXPECT_FALSE(evaluateShapeNode(makeNode("MatMul"), {&a, &a}));
  EXPECT_FALSE(evaluateShapeNode(makeNode("Add"), {&a, nullptr}));
}

} // namespace
