//===- BroadcastBodiesTest.cpp - elementwise work items vs the cpu loops --===//
//
// The cuda target's elementwise kernels (BroadcastBodies.h) run on the host
// and compared with the cpu target's broadcasting loops (Elementwise.h) on
// the same ElementwiseBodies.h functors.
//
//===----------------------------------------------------------------------===//

#include "test/unit/runtime/RuntimeTestUtil.h"
#include "test/unit/shared-bodies/RunOnHost.h"

#include "runtime/BroadcastBodies.h"
#include "runtime/Elementwise.h"
#include "runtime/ElementwiseBodies.h"

namespace cleave::rt::test {
namespace {

template <typename F>
void checkBinary(const Shape &aShape, const Shape &bShape,
                 const Shape &outShape, F f) {
  std::vector<float> a = randomVector(aShape.numElements(), 1, 0.5f, 2.0f);
  std::vector<float> b = randomVector(bShape.numElements(), 2, 0.5f, 2.0f);
  int64_t n = outShape.numElements();
  std::vector<float> items(n), cpu(n);
  runOnHost(n, body::MapBinaryItems<F, float, float, float>{
                   a.data(), body::BroadcastIndex(aShape, outShape), b.data(),
                   body::BroadcastIndex(bShape, outShape), items.data(), f});
  mapBinary(a.data(), aShape, b.data(), bShape, cpu.data(), outShape, f);
  expectSame(items, cpu, 0, 0);
}

TEST(BroadcastBodies, BinarySameShape) {
  checkBinary(Shape{3, 5}, Shape{3, 5}, Shape{3, 5}, body::Add{});
}

TEST(BroadcastBodies, BinaryBroadcastPatterns) {
  checkBinary(Shape{4, 3, 5}, Shape{5}, Shape{4, 3, 5}, body::Mul{});
  checkBinary(Shape{4, 1, 5}, Shape{3, 1}, Shape{4, 3, 5}, body::Sub{});
  checkBinary(Shape{1}, Shape{2, 3}, Shape{2, 3}, body::Div{});
  checkBinary(Shape{2, 3, 1, 4}, Shape{3, 6, 1}, Shape{2, 3, 6, 4},
              body::Pow{});
  checkBinary(Shape{}, Shape{7}, Shape{7}, body::Add{});
}

template <typename In, typename Out, typename F>
void checkUnary(const std::vector<In> &x, F f) {
  int64_t n = x.size();
  std::vector<Out> items(n), cpu(n);
  runOnHost(n, body::MapUnaryItems<F, In, Out>{x.data(), items.data(), f});
  mapUnary(x.data(), cpu.data(), n, f);
  expectSame(items, cpu, 0, 0);
}

TEST(BroadcastBodies, Unary) {
  std::vector<float> x = randomVector(100, 3, -3.0f, 3.0f);
  checkUnary<float, float>(x, body::Erf{});
  checkUnary<float, float>(x, body::Tanh{});
  checkUnary<float, int64_t>(x, body::Cast<int64_t>{});
}

TEST(BroadcastBodies, TernaryWhere) {
  Shape condShape{3, 1}, aShape{3, 4}, bShape{4}, outShape{3, 4};
  bool cond[3] = {true, false, true};
  std::vector<float> a = randomVector(12, 5), b = randomVector(4, 6);
  std::vector<float> items(12), cpu(12);
  runOnHost(12, body::MapTernaryItems<body::Where, bool, float, float, float>{
                    cond, body::BroadcastIndex(condShape, outShape), a.data(),
                    body::BroadcastIndex(aShape, outShape), b.data(),
                    body::BroadcastIndex(bShape, outShape), items.data(),
                    body::Where{}});
  mapTernary(cond, condShape, a.data(), aShape, b.data(), bShape, cpu.data(),
             outShape, body::Where{});
  expectSame(items, cpu, 0, 0);
}

} // namespace
} // namespace cleave::rt::test
